// End-to-end: the official MCP TypeScript SDK (Client + StdioClientTransport) against the
// server command in STOCKADE_SERVE_CMD, a JSON array such as
//   ["/work/main/build/stockade", "serve", "--workspace", "{workspace}"]
// "{workspace}" is replaced by STOCKADE_E2E_WORKSPACE (a fresh temp dir when unset).
//
// Against a server offering read/edit/grep/glob (the real `stockade serve`) it runs
// read -> edit -> grep -> glob on a file it writes into the workspace, plus error cases.
// Against the fake server (tools echo/fail) it runs echo and fail. Both get the handshake,
// tools/list and the 2026-07-28 stateless requests, which SDK 1.x cannot send, over raw stdio.
//
//   cd tests/e2e && npm ci && STOCKADE_SERVE_CMD='["../../build/tests/e2e/mcp_fake_server"]' node --test
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { after, before, describe, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema, LATEST_PROTOCOL_VERSION, McpError } from '@modelcontextprotocol/sdk/types.js';

import { MODERN, modernMeta } from './protocol.mjs';

const REAL_TOOLS = ['read', 'edit', 'grep', 'glob'];

function resolveServer() {
    const raw = process.env.STOCKADE_SERVE_CMD;
    if (!raw) {
        throw new Error('set STOCKADE_SERVE_CMD to a JSON array: the server command and its arguments');
    }
    const argv = JSON.parse(raw);
    assert.ok(Array.isArray(argv) && argv.length > 0 && argv.every((a) => typeof a === 'string'),
        'STOCKADE_SERVE_CMD must be a non-empty JSON array of strings');
    let workspace = process.env.STOCKADE_E2E_WORKSPACE;
    if (!workspace) {
        const flag = argv.indexOf('--workspace');
        workspace = flag >= 0 && argv[flag + 1] && !argv[flag + 1].includes('{workspace}')
            ? argv[flag + 1]
            : fs.mkdtempSync(path.join(os.tmpdir(), 'stockade-e2e-'));
    }
    workspace = fs.realpathSync(workspace);
    const args = argv.map((a) => a.replaceAll('{workspace}', workspace));
    return { command: args[0], args: args.slice(1), workspace };
}

const server = resolveServer();

function childEnv() {
    return Object.fromEntries(Object.entries(process.env).filter(([, v]) => typeof v === 'string'));
}

async function connectSdk({ extraArgs = [], capabilities = undefined, onElicit = undefined } = {}) {
    const client = new Client({ name: 'stockade-e2e', version: '0.0.0' },
        capabilities ? { capabilities } : undefined);
    if (onElicit) client.setRequestHandler(ElicitRequestSchema, onElicit);
    const transport = new StdioClientTransport({
        command: server.command, args: [...server.args, ...extraArgs], env: childEnv(), stderr: 'inherit',
    });
    let negotiated;
    transport.setProtocolVersion = (version) => { negotiated = version; };
    await client.connect(transport);
    return { client, negotiated: () => negotiated };
}

function textOf(result) {
    return result.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

// The server over raw newline-delimited JSON-RPC, for what the SDK cannot send.
class RawServer {
    constructor() {
        this.proc = spawn(server.command, server.args, { stdio: ['pipe', 'pipe', 'inherit'], env: childEnv() });
        this.queue = [];
        this.waiting = [];
        readline.createInterface({ input: this.proc.stdout }).on('line', (line) => {
            const message = JSON.parse(line);  // anything but protocol on stdout fails here
            const waiter = this.waiting.shift();
            if (waiter) waiter(message); else this.queue.push(message);
        });
    }

    send(message) { this.proc.stdin.write(`${JSON.stringify(message)}\n`); }
    sendRaw(text) { this.proc.stdin.write(text); }

    next(timeoutMs = 10000) {
        if (this.queue.length > 0) return Promise.resolve(this.queue.shift());
        return new Promise((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error('no message from the server')), timeoutMs);
            this.waiting.push((m) => { clearTimeout(timer); resolve(m); });
        });
    }

    async request(id, method, params) {
        this.send({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) });
        const reply = await this.next();
        assert.equal(reply.id, id, `reply to ${method}`);
        return reply;
    }

    // Closes stdin (the stdio shutdown) and returns the exit code.
    async close(timeoutMs = 10000) {
        this.proc.stdin.end();
        const timer = setTimeout(() => this.proc.kill('SIGKILL'), timeoutMs);
        const [code] = this.proc.exitCode !== null ? [this.proc.exitCode] : await once(this.proc, 'exit');
        clearTimeout(timer);
        return code;
    }
}

describe('MCP over stdio with the official TypeScript SDK', () => {
    let sdk;
    let tools;

    before(async () => {
        sdk = await connectSdk();
        tools = (await sdk.client.listTools()).tools;
    });

    after(async () => {
        await sdk?.client.close();
    });

    test('initialize negotiates the SDK latest protocol revision', () => {
        assert.equal(sdk.negotiated(), LATEST_PROTOCOL_VERSION);
        const info = sdk.client.getServerVersion();
        assert.equal(typeof info.name, 'string');
        assert.equal(typeof info.version, 'string');
        assert.ok(sdk.client.getServerCapabilities().tools, 'tools capability');
    });

    test('ping', async () => {
        assert.deepEqual(await sdk.client.ping(), {});
    });

    test('tools/list is deterministic and every schema is a closed object', async () => {
        assert.ok(tools.length > 0);
        assert.deepEqual((await sdk.client.listTools()).tools, tools);
        for (const tool of tools) {
            assert.match(tool.name, /^[A-Za-z0-9_.-]{1,128}$/);
            assert.equal(tool.inputSchema.type, 'object', tool.name);
            assert.equal(tool.inputSchema.additionalProperties, false, tool.name);
            assert.equal(typeof tool.description, 'string', tool.name);
        }
        const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
        for (const name of ['read', 'grep', 'glob']) {
            if (byName[name]) assert.equal(byName[name].annotations?.readOnlyHint, true, name);
        }
        for (const name of ['write', 'edit', 'bash', 'process']) {
            if (byName[name]) assert.equal(byName[name].annotations?.destructiveHint, true, name);
        }
    });

    test('an unknown tool is a JSON-RPC error (-32602) naming the known tools', async () => {
        await assert.rejects(sdk.client.callTool({ name: 'no_such_tool', arguments: {} }), (err) => {
            assert.ok(err instanceof McpError);
            assert.equal(err.code, -32602);
            assert.match(err.message, new RegExp(tools[0].name));
            return true;
        });
    });

    test('fake tools: echo succeeds and fail is an isError result', async (t) => {
        if (!tools.some((tool) => tool.name === 'echo')) {
            t.skip('the server has no echo tool');
            return;
        }
        const echo = await sdk.client.callTool({ name: 'echo', arguments: { text: 'hello, stockade' } });
        assert.equal(echo.isError, false);
        assert.equal(textOf(echo), 'hello, stockade');
        assert.deepEqual(echo.structuredContent, { length: 15 });

        const badArgs = await sdk.client.callTool({ name: 'echo', arguments: { text: 42 } });
        assert.equal(badArgs.isError, true, 'bad arguments are a tool error, not a protocol error');

        const fail = await sdk.client.callTool({ name: 'fail', arguments: {} });
        assert.equal(fail.isError, true);
        assert.match(textOf(fail), /fail/);
    });

    test('real tools: read -> edit -> grep -> glob in the workspace', async (t) => {
        const names = tools.map((tool) => tool.name);
        const missing = REAL_TOOLS.filter((n) => !names.includes(n));
        if (missing.length > 0) {
            t.skip(`the server lacks ${missing.join(', ')}`);
            return;
        }
        const dir = fs.mkdtempSync(path.join(server.workspace, 'e2e-'));
        const file = path.join(dir, 'notes.txt');
        fs.writeFileSync(file, 'alpha\nbeta\ngamma\n');

        const read = await sdk.client.callTool({ name: 'read', arguments: { file_path: file } });
        assert.equal(read.isError, false, textOf(read));
        assert.match(textOf(read), /2→beta/);
        // The model reads content; the metadata rides in _meta, never in structuredContent,
        // which several clients hand to the model instead of the text.
        assert.equal(read.structuredContent, undefined);
        assert.match(read._meta['dev.stockade/result'].title, /^Read /);

        const edit = await sdk.client.callTool({
            name: 'edit', arguments: { file_path: file, old_string: 'beta', new_string: 'stockade_e2e_marker' },
        });
        assert.equal(edit.isError, false, textOf(edit));
        assert.equal(fs.readFileSync(file, 'utf8'), 'alpha\nstockade_e2e_marker\ngamma\n');

        const grep = await sdk.client.callTool({
            name: 'grep', arguments: { pattern: 'stockade_e2e_marker', path: dir },
        });
        assert.equal(grep.isError, false, textOf(grep));
        assert.match(textOf(grep), /notes\.txt/);

        const glob = await sdk.client.callTool({ name: 'glob', arguments: { pattern: '**/*.txt', path: dir } });
        assert.equal(glob.isError, false, textOf(glob));
        assert.match(textOf(glob), /notes\.txt/);
    });

    test('real tools: failures are isError results the model can act on', async (t) => {
        if (!REAL_TOOLS.every((n) => tools.some((tool) => tool.name === n))) {
            t.skip('the server lacks the real tools');
            return;
        }
        const missing = path.join(server.workspace, 'definitely-missing', 'nope.txt');
        const read = await sdk.client.callTool({ name: 'read', arguments: { file_path: missing } });
        assert.equal(read.isError, true);
        assert.ok(textOf(read).length > 0);

        const badArgs = await sdk.client.callTool({ name: 'read', arguments: { offset: 'x' } });
        assert.equal(badArgs.isError, true, 'bad arguments are a tool error, not a protocol error');
    });
});

describe('bash and process with the official TypeScript SDK', () => {
    let sdk;
    let names = [];

    before(async () => {
        sdk = await connectSdk();
        names = (await sdk.client.listTools()).tools.map((t) => t.name);
    });

    after(async () => {
        await sdk?.client.close();
    });

    const skipUnlessProcessTools = (t) => {
        if (!names.includes('bash') || !names.includes('process')) {
            t.skip('the server has no bash/process tools');
            return true;
        }
        return false;
    };

    test('bash runs a command, reports progress, and a non-zero exit is not an error', async (t) => {
        if (skipUnlessProcessTools(t)) return;
        const progress = [];
        const slow = await sdk.client.callTool(
            { name: 'bash', arguments: { command: 'sleep 2.5; echo done-sleeping' } },
            undefined,
            { onprogress: (p) => progress.push(p), timeout: 60000 },
        );
        assert.equal(slow.isError, false, textOf(slow));
        assert.match(textOf(slow), /done-sleeping/);
        assert.match(textOf(slow), /\[exit code 0 · /);
        assert.equal(slow._meta["dev.stockade/result"].exit_code, 0);
        assert.ok(progress.length >= 1, 'at least one progress notification during a 2.5 s command');

        const failing = await sdk.client.callTool({ name: 'bash', arguments: { command: 'exit 7' } });
        assert.equal(failing.isError, false);
        assert.equal(failing._meta["dev.stockade/result"].exit_code, 7);
    });

    test('a timed-out bash command continues as a process that can be read and stopped', async (t) => {
        if (skipUnlessProcessTools(t)) return;
        const moved = await sdk.client.callTool({
            name: 'bash', arguments: { command: 'for i in 1 2 3 4 5 6; do echo tick$i; sleep 0.5; done', timeout_ms: 1000 },
        });
        assert.equal(moved.isError, false, textOf(moved));
        assert.match(textOf(moved), /moved to background as process (p\d+)/);
        const id = moved._meta["dev.stockade/result"].process_id;
        const list = await sdk.client.callTool({ name: 'process', arguments: { action: 'list' } });
        assert.match(textOf(list), new RegExp(id));
        const rest = await sdk.client.callTool({ name: 'process', arguments: { action: 'wait', id } });
        assert.match(textOf(rest), /tick6/);

        const server = await sdk.client.callTool({
            name: 'process', arguments: { action: 'start', command: 'python3 -i -q' },
        });
        assert.equal(server.isError, false, textOf(server));
        const repl = server._meta["dev.stockade/result"].process_id;
        const wrote = await sdk.client.callTool({
            name: 'process', arguments: { action: 'write', id: repl, input: 'print(1234 * 2)\n' },
        });
        let seen = textOf(wrote);
        for (let i = 0; i < 10 && !seen.includes('2468'); i++) {
            const more = await sdk.client.callTool({ name: 'process', arguments: { action: 'read', id: repl } });
            seen += textOf(more);
        }
        assert.match(seen, /2468/);
        const stopped = await sdk.client.callTool({ name: 'process', arguments: { action: 'stop', id: repl } });
        assert.match(textOf(stopped), new RegExp(`Stopped ${repl}`));
        const unknown = await sdk.client.callTool({ name: 'process', arguments: { action: 'read', id: 'p999' } });
        assert.equal(unknown.isError, true);
        assert.match(textOf(unknown), /No process "p999"/);
    });

    test('cancelling a bash call through the SDK ends it', async (t) => {
        if (skipUnlessProcessTools(t)) return;
        const controller = new AbortController();
        const pending = sdk.client.callTool(
            { name: 'bash', arguments: { command: 'sleep 6001' } },
            undefined,
            { signal: controller.signal, timeout: 60000 },
        );
        await new Promise((r) => setTimeout(r, 500));
        controller.abort('test cancels');
        await assert.rejects(pending);
        let count = '';
        for (let i = 0; i < 30; i++) {
            const check = await sdk.client.callTool({
                name: 'bash',
                arguments: { command: "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done | grep -c '[s]leep 6001' || true" },
            });
            count = textOf(check).split('\n')[0];
            if (count === '0') break;
            await new Promise((r) => setTimeout(r, 100));
        }
        assert.equal(count, '0', 'the cancelled command is gone');
    });
});

describe('a connection the rules leave to the user is asked about while its call runs', () => {
    // --network allowlist in local mode: no rule names asked.test or other.test, so the
    // preset's ask reaches the user through the bash call that started curl.
    const isStockade = server.args.includes('serve');
    const answers = [];
    const questions = [];
    let upstream;
    let sdk;

    before(async () => {
        if (!isStockade) return;
        upstream = http.createServer((req, res) => res.end(`hello from ${req.headers.host}\n`));
        await new Promise((resolve) => upstream.listen(0, '127.0.0.1', resolve));
        const port = upstream.address().port;
        sdk = await connectSdk({
            extraArgs: ['--network', 'allowlist', '--no-user-settings',
                '--resolve', `asked.test:80=127.0.0.1:${port}`,
                '--resolve', `other.test:80=127.0.0.1:${port}`],
            capabilities: { elicitation: {} },
            onElicit: async (request) => {
                questions.push(request.params);
                return answers.shift() ?? { action: 'cancel' };
            },
        });
    });

    after(async () => {
        await sdk?.client.close();
        upstream?.close();
    });

    const curl = (host) => sdk.client.callTool({
        name: 'bash', arguments: { command: `curl -sS http://${host}/` },
    });

    test('once, for the session, and declined', async (t) => {
        if (!isStockade) { t.skip('not stockade serve'); return; }
        answers.push({ action: 'accept', content: { decision: 'once' } });
        const once = await curl('asked.test');
        assert.match(textOf(once), /hello from asked\.test/);
        assert.equal(questions.length, 1);
        assert.match(questions[0].message, /connect to asked\.test:80/);
        assert.match(questions[0].message, /curl -sS http:\/\/asked\.test\//);
        assert.deepEqual(questions[0].requestedSchema.required, ['decision']);

        answers.push({ action: 'accept', content: { decision: 'session' } });
        assert.match(textOf(await curl('asked.test')), /hello from asked\.test/);
        assert.equal(questions.length, 2, '"once" is not remembered');
        assert.match(textOf(await curl('asked.test')), /hello from asked\.test/);
        assert.equal(questions.length, 2, 'a session answer is not asked again');

        answers.push({ action: 'decline' });
        const declined = await curl('other.test');
        assert.doesNotMatch(textOf(declined), /hello from/);
        assert.match(textOf(declined),
            /network: refused 1 connection to other\.test:80 \(the user declined it \(decline\); the user can add network\.access\(other\.test\)\)/);
        assert.equal(questions.length, 3);
    });
});

describe('policy asks through elicitation with the official TypeScript SDK', () => {
    // Only `stockade serve` takes policy flags; the fake server has no bash tool.
    const isStockade = server.args.includes('serve');
    const askArgs = ['--ask', 'Bash(echo asked:*)', '--no-user-settings'];
    const answers = [];
    const questions = [];
    let sdk;
    let plain;

    before(async () => {
        if (!isStockade) return;
        sdk = await connectSdk({
            extraArgs: askArgs,
            capabilities: { elicitation: {} },
            onElicit: async (request) => {
                questions.push(request.params);
                return answers.shift() ?? { action: 'cancel' };
            },
        });
        plain = await connectSdk({ extraArgs: askArgs });
    });

    after(async () => {
        await sdk?.client.close();
        await plain?.client.close();
    });

    test('accept once, decline, and remember for the session', async (t) => {
        if (!isStockade) { t.skip('not stockade serve'); return; }
        answers.push({ action: 'accept', content: { decision: 'once' } });
        const once = await sdk.client.callTool({ name: 'bash', arguments: { command: 'echo asked once' } });
        assert.equal(once.isError, false, textOf(once));
        assert.match(textOf(once), /asked once/);
        assert.equal(questions.length, 1);
        assert.equal(questions[0].mode ?? 'form', 'form');
        assert.match(questions[0].message, /bash/);
        assert.match(questions[0].message, /Bash\(echo asked:\*\)/);
        assert.deepEqual(questions[0].requestedSchema.required, ['decision']);

        answers.push({ action: 'decline' });
        const declined = await sdk.client.callTool({ name: 'bash', arguments: { command: 'echo asked once' } });
        assert.equal(declined.isError, true);
        assert.match(textOf(declined), /The user declined/);
        assert.equal(questions.length, 2, '"once" is not remembered');

        answers.push({ action: 'accept', content: { decision: 'session' } });
        const first = await sdk.client.callTool({ name: 'bash', arguments: { command: 'echo asked session' } });
        assert.equal(first.isError, false, textOf(first));
        const again = await sdk.client.callTool({ name: 'bash', arguments: { command: 'echo asked session' } });
        assert.equal(again.isError, false, textOf(again));
        assert.match(textOf(again), /asked session/);
        assert.equal(questions.length, 3, 'a session grant is not asked again');

        const unasked = await sdk.client.callTool({ name: 'bash', arguments: { command: 'echo not asked' } });
        assert.equal(unasked.isError, false);
        assert.equal(questions.length, 3, 'a call no ask rule matches runs without a question');
    });

    test('a client without elicitation gets a denial that says why', async (t) => {
        if (!isStockade) { t.skip('not stockade serve'); return; }
        const denied = await plain.client.callTool({ name: 'bash', arguments: { command: 'echo asked x' } });
        assert.equal(denied.isError, true);
        assert.match(textOf(denied), /cannot ask the user/);
    });
});

describe('structuredContent, only when the operator asks for it', () => {
    const isStockade = server.args.includes('serve');
    let sdk;

    before(async () => {
        if (isStockade) sdk = await connectSdk({ extraArgs: ['--structured-content'] });
    });

    after(async () => { await sdk?.client.close(); });

    test('every tool declares an outputSchema and its results conform to it', async (t) => {
        if (!isStockade) { t.skip('not stockade serve'); return; }
        const tools = (await sdk.client.listTools()).tools;
        for (const tool of tools) {
            assert.equal(tool.outputSchema?.type, 'object', tool.name);
            assert.ok(tool.outputSchema.properties.duration_ms, tool.name);
        }
        const dir = fs.mkdtempSync(path.join(server.workspace, 'structured-'));
        const file = path.join(dir, 'a.txt');
        fs.writeFileSync(file, 'one\ntwo\n');
        // The SDK validates structuredContent against the tool's outputSchema: a result that
        // does not conform makes callTool throw.
        const calls = [
            ['read', { file_path: file }],
            ['edit', { file_path: file, old_string: 'two', new_string: 'three' }],
            ['write', { file_path: path.join(dir, 'b.txt'), content: 'x\n' }],
            ['grep', { pattern: 'three', path: dir }],
            ['glob', { pattern: '*.txt', path: dir }],
            ['bash', { command: 'echo hi; exit 3' }],
            ['process', { action: 'start', command: 'sleep 30' }],
            ['process', { action: 'list' }],
            ['process', { action: 'stop', id: 'p1' }],
        ];
        for (const [name, args] of calls) {
            const result = await sdk.client.callTool({ name, arguments: args });
            assert.equal(result.isError, false, `${name}: ${textOf(result)}`);
            assert.deepEqual(result.structuredContent, result._meta['dev.stockade/result'], name);
            assert.ok(textOf(result).length > 0, `${name} still has its text`);
        }
    });
});

describe('MCP 2026-07-28 stateless requests over raw stdio', () => {
    let raw;

    before(() => { raw = new RawServer(); });

    after(async () => {
        if (raw) assert.equal(await raw.close(), 0, 'the server exits 0 when stdin closes');
    });

    test('server/discover advertises versions, capabilities and identity', async () => {
        const reply = await raw.request('discover-1', 'server/discover', { _meta: modernMeta() });
        assert.equal(reply.error, undefined, JSON.stringify(reply.error));
        const result = reply.result;
        assert.equal(result.resultType, 'complete');
        assert.ok(result.supportedVersions.includes(MODERN));
        assert.ok(result.supportedVersions.includes('2025-11-25'));
        assert.ok(result.capabilities.tools);
        assert.equal(typeof result.ttlMs, 'number');
        assert.ok(['public', 'private'].includes(result.cacheScope));
        assert.equal(typeof result._meta['io.modelcontextprotocol/serverInfo'].name, 'string');
    });

    test('tools/list and tools/call without a handshake', async () => {
        const list = await raw.request(2, 'tools/list', { _meta: modernMeta() });
        assert.equal(list.result.resultType, 'complete');
        assert.ok(list.result.tools.length > 0);
        const call = await raw.request(3, 'tools/call', { name: 'no_such_tool', arguments: {}, _meta: modernMeta() });
        assert.equal(call.error.code, -32602);
    });

    test('an unsupported version gets UnsupportedProtocolVersionError (-32022)', async () => {
        const reply = await raw.request(4, 'tools/list', {
            _meta: modernMeta({ 'io.modelcontextprotocol/protocolVersion': '1900-01-01' }),
        });
        assert.equal(reply.error.code, -32022);
        assert.equal(reply.error.data.requested, '1900-01-01');
        assert.ok(reply.error.data.supported.includes(MODERN));
    });

    test('a request missing required _meta is invalid params (-32602)', async () => {
        const reply = await raw.request(5, 'tools/list', {
            _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN },
        });
        assert.equal(reply.error.code, -32602);
    });

    test('malformed JSON gets a parse error and the next request is still answered', async () => {
        raw.sendRaw('{"jsonrpc": "2.0", "id": 6, "method": \n');
        const bad = await raw.next();
        assert.equal('id' in bad, false, 'an id that cannot be read is omitted, not null');
        assert.equal(bad.error.code, -32700);
        const ok = await raw.request(7, 'server/discover', { _meta: modernMeta() });
        assert.equal(ok.result.resultType, 'complete');
    });

    test('a message over 8 MiB is rejected (-32600) and the server keeps serving', async () => {
        const big = `{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{"pad":"${'x'.repeat(9 << 20)}"}}\n`;
        raw.sendRaw(big);
        const reply = await raw.next(30000);
        assert.equal('id' in reply, false, 'an id that cannot be read is omitted, not null');
        assert.equal(reply.error.code, -32600);
        const ok = await raw.request(9, 'tools/list', { _meta: modernMeta() });
        assert.ok(ok.result.tools.length > 0);
    });
});
