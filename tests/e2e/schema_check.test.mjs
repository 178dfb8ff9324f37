// Every message the server sends in a session, checked against the protocol's schemas:
//   1. the official TypeScript SDK's own schemas (@modelcontextprotocol/sdk/types.js, the
//      2025-11-25 revision): every message is a JSON-RPC message the SDK accepts, and each
//      result has the shape of its method's result (InitializeResult, ListToolsResult,
//      CallToolResult, ...);
//   2. the official schema.json of each revision (modelcontextprotocol/modelcontextprotocol,
//      schema/<revision>/schema.json), when MCP_SCHEMA_DIR names a directory holding
//      <revision>/schema.json: every message against JSONRPCMessage, each result against its
//      method's result definition. Without it that part is skipped and says why.
// The session covers both eras: the 2025-11-25 handshake, tools/list, ping, successful, failing
// and unknown tool calls with progress, malformed input, and the 2026-07-28 stateless requests.
// Two more sessions negotiate the older revisions, 2025-03-26 and 2024-11-05, asking for
// elicitation: each of their messages must hold only what its revision defines.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { after, before, describe, test } from 'node:test';

import {
    CallToolResultSchema, EmptyResultSchema, InitializeResultSchema, JSONRPCMessageSchema,
    ListToolsResultSchema, ProgressNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

import { MODERN, modernMeta } from './protocol.mjs';

const LEGACY = '2025-11-25';
const OLDER = ['2025-03-26', '2024-11-05'];

function serverCommand() {
    const argv = JSON.parse(process.env.STOCKADE_SERVE_CMD ?? '[]');
    assert.ok(argv.length > 0, 'set STOCKADE_SERVE_CMD');
    const workspace = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'stockade-schema-')));
    fs.writeFileSync(path.join(workspace, 'a.txt'), 'alpha\nbeta\n');
    return { argv: argv.map((a) => a.replaceAll('{workspace}', workspace)), workspace };
}

// The server over raw stdio; every line it writes is kept with the method it answers.
class Session {
    constructor({ argv }) {
        this.proc = spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
        this.messages = [];   // {message, method, revision}
        this.pending = new Map();
        this.methods = new Map();
        readline.createInterface({ input: this.proc.stdout }).on('line', (line) => {
            const message = JSON.parse(line);
            const sent = 'id' in message ? this.methods.get(JSON.stringify(message.id)) : undefined;
            this.messages.push({ message, method: sent?.method, revision: sent?.revision ?? LEGACY });
            const waiter = 'id' in message ? this.pending.get(JSON.stringify(message.id)) : undefined;
            if (waiter && ('result' in message || 'error' in message)) {
                this.pending.delete(JSON.stringify(message.id));
                waiter(message);
            }
        });
        this.next = 1;
    }

    request(method, params, revision = this.revision ?? LEGACY) {
        const id = this.next++;
        this.methods.set(JSON.stringify(id), { method, revision });
        this.proc.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, ...(params ? { params } : {}) })}\n`);
        return new Promise((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error(`no answer to ${method}`)), 60000);
            this.pending.set(JSON.stringify(id), (m) => { clearTimeout(timer); resolve(m); });
        });
    }

    notify(method, params) {
        this.proc.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method, ...(params ? { params } : {}) })}\n`);
    }

    // A line the server cannot read an id from: its error reply is matched by arrival.
    async raw(text) {
        const before = this.messages.length;
        this.proc.stdin.write(text);
        for (let i = 0; i < 200 && this.messages.length === before; i++) await new Promise((r) => setTimeout(r, 25));
        return this.messages[before]?.message;
    }

    async close() {
        this.proc.stdin.end();
        await new Promise((resolve) => this.proc.on('exit', resolve));
    }
}

const sdkResult = {
    initialize: InitializeResultSchema,
    'tools/list': ListToolsResultSchema,
    'tools/call': CallToolResultSchema,
    ping: EmptyResultSchema,
};

// schema.json definitions of each method's result, by revision.
const specResult = {
    initialize: 'InitializeResult',
    'tools/list': 'ListToolsResult',
    'tools/call': 'CallToolResult',
    ping: 'EmptyResult',
    'server/discover': 'DiscoverResult',
};

// A session of an older revision: the handshake (declaring elicitation, which the revision does
// not have), tools/list, ping and the tool calls of the main session; its transcript.
async function olderSession(server, revision) {
    const session = new Session(server);
    session.revision = revision;
    try {
        await session.request('initialize', {
            protocolVersion: revision, capabilities: { elicitation: {} }, clientInfo: { name: 'schema-check', version: '0' },
        });
        session.notify('notifications/initialized');
        const list = await session.request('tools/list', {});
        await session.request('ping');
        const names = list.result.tools.map((t) => t.name);
        if (names.includes('bash')) {
            await session.request('tools/call', {
                name: 'bash', arguments: { command: 'sleep 1.5; echo done' }, _meta: { progressToken: 'p1' },
            });
        }
        if (names.includes('echo')) {
            await session.request('tools/call', { name: 'echo', arguments: { text: 'hi' } });
            await session.request('tools/call', { name: 'confirm', arguments: { question: 'Allow?' } });
        }
        await session.request('tools/call', { name: 'no_such_tool', arguments: {} });
        return session.messages;
    } finally {
        await session.close();
    }
}

describe('every message of a session against the MCP schemas', () => {
    let session;
    let ranBash = false;  // a 1.5 s bash call with a progress token: progress notifications
    let transcript = [];

    before(async () => {
        const server = serverCommand();
        session = new Session(server);
        await session.request('initialize', {
            protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'schema-check', version: '0' },
        });
        session.notify('notifications/initialized');
        const list = await session.request('tools/list', {});
        await session.request('ping');
        const names = list.result.tools.map((t) => t.name);
        if (names.includes('read')) {
            await session.request('tools/call', { name: 'read', arguments: { file_path: path.join(server.workspace, 'a.txt') } });
            await session.request('tools/call', { name: 'read', arguments: { file_path: 'missing.txt' } });
            await session.request('tools/call', { name: 'read', arguments: { offset: 'x' } });
        }
        ranBash = names.includes('bash');
        if (ranBash) {
            await session.request('tools/call', {
                name: 'bash', arguments: { command: 'sleep 1.5; seq 1 3000' }, _meta: { progressToken: 'p1' },
            });
        }
        if (names.includes('echo')) {
            await session.request('tools/call', { name: 'echo', arguments: { text: 'hi' } });
            await session.request('tools/call', { name: 'fail', arguments: {} });
        }
        await session.request('tools/call', { name: 'no_such_tool', arguments: {} });
        await session.request('no/such/method', {});
        await session.raw('{"jsonrpc": "2.0", "id": 99, "method": \n');
        await session.raw('[{"jsonrpc":"2.0","id":98,"method":"ping"}]\n');
        await session.raw('{"jsonrpc":"2.0","id":null,"method":"ping"}\n');
        // 2026-07-28: stateless requests.
        await session.request('server/discover', { _meta: modernMeta() }, MODERN);
        await session.request('tools/list', { _meta: modernMeta() }, MODERN);
        if (names.includes('read')) {
            await session.request('tools/call', {
                name: 'read', arguments: { file_path: path.join(server.workspace, 'a.txt') }, _meta: modernMeta(),
            }, MODERN);
        }
        await session.request('tools/list', { _meta: modernMeta({ 'io.modelcontextprotocol/protocolVersion': '1900-01-01' }) }, MODERN);
        await session.request('initialize', { protocolVersion: MODERN, _meta: modernMeta() }, MODERN);
        transcript = session.messages;
        for (const revision of OLDER) transcript = transcript.concat(await olderSession(serverCommand(), revision));
    });

    after(async () => { await session?.close(); });

    test('the session produced the messages to check', () => {
        assert.ok(transcript.length >= 12, `only ${transcript.length} messages`);
        if (ranBash) {
            assert.ok(transcript.some((m) => m.message.method === 'notifications/progress'),
                'a progress notification');
        }
    });

    test('the SDK accepts every message and every legacy result has its method\'s shape', () => {
        for (const { message, method, revision } of transcript) {
            const parsed = JSONRPCMessageSchema.safeParse(message);
            assert.ok(parsed.success, `not a JSON-RPC message: ${JSON.stringify(message)}\n${parsed.error}`);
            assert.notEqual(message.id, null, `"id": null is not an MCP id: ${JSON.stringify(message)}`);
            if (message.method === 'notifications/progress') {
                assert.ok(ProgressNotificationSchema.safeParse(message).success, JSON.stringify(message));
            }
            if ('result' in message && sdkResult[method] && revision !== MODERN) {
                const r = sdkResult[method].safeParse(message.result);
                assert.ok(r.success, `${method} result: ${JSON.stringify(message.result)}\n${r.error}`);
            }
        }
    });

    test('older revisions get only what they define, and are never asked to elicit', () => {
        const older = transcript.filter((m) => OLDER.includes(m.revision));
        for (const revision of OLDER) {
            assert.ok(older.some((m) => m.revision === revision && m.method === 'tools/list' && m.message.result),
                `no tools/list of the ${revision} session`);
        }
        for (const { message, method, revision } of older) {
            const what = `${revision}: ${JSON.stringify(message)}`;
            assert.notEqual(message.method, 'elicitation/create', what);
            if (method === 'initialize') {
                assert.equal(message.result.protocolVersion, revision, what);
                assert.deepEqual(Object.keys(message.result.serverInfo).sort(), ['name', 'version'], what);
            }
            for (const tool of method === 'tools/list' ? message.result.tools : []) {
                assert.ok(!('title' in tool) && !('outputSchema' in tool), what);
                if (revision === '2024-11-05') assert.ok(!('annotations' in tool), what);
            }
            if (method === 'tools/call' && message.result) assert.ok(!('structuredContent' in message.result), what);
            if (message.method === 'notifications/progress' && revision === '2024-11-05') {
                assert.ok(!('message' in message.params), what);
            }
            if (method === 'tools/call' && message.result?.content?.[0]?.text?.startsWith('This client cannot ask')) {
                assert.equal(message.result.isError, true, what);
            }
        }
    });

    test('the official schema.json of each revision accepts every message', async (t) => {
        const dir = process.env.MCP_SCHEMA_DIR;
        const files = [LEGACY, MODERN, ...OLDER].map((rev) => [rev, dir && path.join(dir, rev, 'schema.json')]);
        const missing = files.filter(([, f]) => !f || !fs.existsSync(f));
        if (missing.length > 0) {
            t.skip(`no official schema.json for ${missing.map(([r]) => r).join(', ')}: set MCP_SCHEMA_DIR to a `
                + 'directory with <revision>/schema.json (schema/ of modelcontextprotocol/modelcontextprotocol)');
            return;
        }
        const { default: Ajv2020 } = await import('ajv/dist/2020.js');
        const { default: AjvDraft7 } = await import('ajv');
        const { default: addFormats } = await import('ajv-formats');
        const validators = {};
        for (const [rev, file] of files) {
            const schema = JSON.parse(fs.readFileSync(file, 'utf8'));
            // Up to 2025-06-18 the schemas are draft-07; from 2025-11-25 on, 2020-12.
            const Ajv = String(schema.$schema).includes('draft-07') ? AjvDraft7 : Ajv2020;
            const ajv = new Ajv({ strict: false, allErrors: true });
            addFormats(ajv);
            ajv.addSchema(schema, rev);
            validators[rev] = (def, value) => {
                const v = ajv.getSchema(`${rev}#/$defs/${def}`) ?? ajv.getSchema(`${rev}#/definitions/${def}`);
                assert.ok(v, `${rev} schema.json has no definition ${def}`);
                return v(value) ? null : ajv.errorsText(v.errors);
            };
        }
        for (const { message, method, revision } of transcript) {
            const check = validators[revision];
            const problem = check('JSONRPCMessage', message);
            assert.equal(problem, null, `${revision}: ${JSON.stringify(message)}`);
            if ('result' in message && specResult[method]) {
                const p = check(specResult[method], message.result);
                assert.equal(p, null, `${revision} ${method}: ${JSON.stringify(message.result)}`);
            }
        }
    });
});
