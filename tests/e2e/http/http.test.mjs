// End-to-end over Streamable HTTP: `stockade serve --http` with two tenants, driven by the
// official MCP TypeScript SDK's StreamableHTTPClientTransport (v1 and v2) and by raw HTTP for what a client
// must not be able to do. STOCKADE_BIN names the binary (run_http.sh sets it); without it every
// test here is skipped, so `node --test tests/e2e/` against the stdio servers passes them by.
//
// Tenants: "alpha" (token A; `echo asked ...` is asked about) and "beta" (token B, at most 2 sessions, 3 calls a second, idle
// sessions end after 3 s), each with its own workspace root, and, as root, its own host uid
// range. The operator's token O reads /metrics.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import {
    Client as ClientV2, StreamableHTTPClientTransport as StreamableHTTPClientTransportV2,
} from '@modelcontextprotocol/client';

import { MODERN, modernMeta } from '../protocol.mjs';
import { chownTree, descendantsOf, startServe } from './harness.mjs';

const BIN = process.env.STOCKADE_BIN;
const skip = BIN ? false : 'STOCKADE_BIN is not set (run_http.sh sets it)';
const ROOT = process.getuid() === 0;

const TOKEN_A = crypto.randomBytes(32).toString('hex');
const TOKEN_B = crypto.randomBytes(32).toString('hex');
const TOKEN_O = crypto.randomBytes(32).toString('hex');
const TOKEN_EXPIRED = crypto.randomBytes(32).toString('hex');  // beta's, expired in 2020
const TOKEN_LATER = crypto.randomBytes(32).toString('hex');    // beta's, until 2999
const sha256 = (text) => crypto.createHash('sha256').update(text).digest('hex');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

let dir;
let serve;
let port;
let serveLog = '';

function url(p = '/mcp') {
    return `http://127.0.0.1:${port}${p}`;
}

async function startServer() {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stockade-http-'));
    fs.chmodSync(dir, 0o755);
    for (const name of ['alpha', 'beta', 'state']) fs.mkdirSync(path.join(dir, name));
    fs.writeFileSync(path.join(dir, 'alpha', 'secret.txt'), 'alpha only\n');
    const tenants = {
        tenants: [
            {
                name: 'alpha', token_sha256: [sha256(TOKEN_A)],
                workspace_root: path.join(dir, 'alpha'),
                ...(ROOT ? { host_uid_range: '1500000000-1500065535' } : {}),
                ask: ['Bash(echo asked:*)'],
                limits: { sessions: 8, calls: 4, memory: '512M', pids: '128', cpu_weight: 300 },
            },
            {
                name: 'beta',
                token_sha256: [sha256(TOKEN_B), { sha256: sha256(TOKEN_EXPIRED), expires: '2020-01-01' },
                    { sha256: sha256(TOKEN_LATER), expires: '2999-12-31T23:59:59Z' }],
                workspace_root: path.join(dir, 'beta'),
                ...(ROOT ? { host_uid_range: '1500100000-1500165535' } : {}),
                limits: { sessions: 2, calls: 2, calls_per_second: 3, idle_ttl: '3s' },
            },
        ],
    };
    if (ROOT) {
        chownTree(path.join(dir, 'alpha'), 1500000000);
        chownTree(path.join(dir, 'beta'), 1500100000);
    }
    fs.writeFileSync(path.join(dir, 'tenants.json'), JSON.stringify(tenants));
    fs.writeFileSync(path.join(dir, 'admin.sha256'), `# the operator\n${sha256(TOKEN_O)}\n`);
    ({ serve, port } = await startServe(BIN, ['--tenants', path.join(dir, 'tenants.json'),
        '--admin-token-file', path.join(dir, 'admin.sha256'), '--no-user-settings', '--drain', '20'],
    { ...process.env, STOCKADE_STATE_DIR: path.join(dir, 'state') }, (chunk) => { serveLog += chunk; }));
}

async function sdkClient(token, { onElicit } = {}) {
    const client = new Client({ name: 'stockade-http-e2e', version: '0.0.0' },
        onElicit ? { capabilities: { elicitation: { form: {} } } } : undefined);
    if (onElicit) client.setRequestHandler(ElicitRequestSchema, onElicit);
    const transport = new StreamableHTTPClientTransport(new URL(url()), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
    });
    await client.connect(transport);
    return { client, transport };
}

function textOf(result) {
    return result.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

const HEADERS = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };

async function post(token, body, extra = {}) {
    const headers = { ...HEADERS, ...extra };
    if (token) headers.Authorization = `Bearer ${token}`;
    return fetch(url(), { method: 'POST', headers, body: JSON.stringify(body) });
}

async function initialize(token) {
    const response = await post(token, {
        jsonrpc: '2.0', id: 1, method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
    });
    return { response, session: response.headers.get('mcp-session-id'), body: await response.text() };
}

// The JSON-RPC messages of an SSE or JSON response body.
function messagesOf(text) {
    if (text.trimStart().startsWith('{')) return [JSON.parse(text)];
    return text.split('\n').filter((l) => l.startsWith('data: ') && l.length > 6).map((l) => JSON.parse(l.slice(6)));
}

// Raw bytes to the server; resolves with what came back before it closed (or `ms` passed).
function rawExchange(bytes, ms = 5000) {
    return new Promise((resolve) => {
        const socket = net.connect(port, '127.0.0.1');
        let received = '';
        socket.on('data', (chunk) => { received += chunk; });
        const done = () => { socket.destroy(); resolve(received); };
        socket.on('close', done);
        socket.on('error', done);
        setTimeout(done, ms);
        socket.on('connect', () => { socket.write(bytes, () => {}); });
    });
}

// `stockade sessions ARGS...`, with no STOCKADE_SERVER or STOCKADE_ADMIN_TOKEN but those of `env`.
function sessionsCli(args, env = {}) {
    const clean = { ...process.env };
    delete clean.STOCKADE_SERVER;
    delete clean.STOCKADE_ADMIN_TOKEN;
    return spawnSync(BIN, ['sessions', ...args], { encoding: 'utf8', env: { ...clean, ...env }, timeout: 30000 });
}

// The scenario of the stdio suite, through any SDK client connected as tenant alpha: the tool
// list, write -> read -> edit -> grep -> glob -> bash on one file of its workspace, and the
// metadata kept out of what the model reads. A tenant sees its workspace at /workspace, never
// where the server keeps it.
async function toolScenario(client, name) {
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.deepEqual(names, ['read', 'write', 'edit', 'grep', 'glob', 'bash', 'process']);
    const file = `/workspace/${name}`;
    let result = await client.callTool({ name: 'write', arguments: { file_path: file, content: 'one\ntwo\n' } });
    assert.equal(result.isError, false, textOf(result));
    result = await client.callTool({ name: 'read', arguments: { file_path: file } });
    assert.match(textOf(result), /1→one/);
    result = await client.callTool({ name: 'edit', arguments: { file_path: file, old_string: 'two', new_string: 'three' } });
    assert.equal(result.isError, false, textOf(result));
    result = await client.callTool({ name: 'grep', arguments: { pattern: 'three' } });
    assert.match(textOf(result), new RegExp(name.replace('.', '\\.')));
    result = await client.callTool({ name: 'glob', arguments: { pattern: '*.txt' } });
    assert.match(textOf(result), /secret\.txt/);
    result = await client.callTool({ name: 'bash', arguments: { command: `cat ${name} && pwd` } });
    assert.match(textOf(result), /one\nthree\n\/workspace\n/);
    assert.doesNotMatch(JSON.stringify(result), new RegExp(dir));
    assert.equal(fs.readFileSync(path.join(dir, 'alpha', name), 'utf8'), 'one\nthree\n');
    // Metadata stays in _meta, never in what the model reads.
    assert.ok(result._meta && result._meta['dev.stockade/result']);
    assert.doesNotMatch(textOf(result), /dev\.stockade/);
}

describe('stockade serve --http', { skip }, () => {
    before(startServer);
    after(() => {
        if (serve && (serve.signalCode || serve.exitCode)) {
            console.error(`serve ended with ${serve.signalCode ?? serve.exitCode}:\n${serveLog}`);
        }
        if (serve && serve.exitCode === null) serve.kill('SIGKILL');
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    test('the SDK client (v1) runs the tools in its tenant\'s workspace', async () => {
        const { client, transport } = await sdkClient(TOKEN_A);
        await toolScenario(client, 'notes-v1.txt');
        await transport.terminateSession();
        await client.close();
    });

    test('the SDK client (v2) runs the same calls', async () => {
        const client = new ClientV2({ name: 'stockade-http-e2e-v2', version: '0.0.0' });
        const transport = new StreamableHTTPClientTransportV2(new URL(url()), {
            requestInit: { headers: { Authorization: `Bearer ${TOKEN_A}` } },
        });
        await client.connect(transport);
        assert.match(transport.sessionId, /^[0-9a-f]{64}$/);
        await toolScenario(client, 'notes-v2.txt');
        await transport.terminateSession();
        await client.close();
    });

    test('a question to the user travels on the call\'s stream', async () => {
        const questions = [];
        const answers = [{ action: 'accept', content: { decision: 'once' } }, { action: 'decline' }];
        const { client, transport } = await sdkClient(TOKEN_A, {
            onElicit: async (request) => { questions.push(request.params); return answers.shift(); },
        });
        const once = await client.callTool({ name: 'bash', arguments: { command: 'echo asked once' } });
        assert.equal(once.isError, false, textOf(once));
        assert.match(textOf(once), /asked once/);
        assert.equal(questions.length, 1);
        assert.match(questions[0].message, /Bash\(echo asked:\*\)/);
        const declined = await client.callTool({ name: 'bash', arguments: { command: 'echo asked again' } });
        assert.equal(declined.isError, true);
        assert.match(textOf(declined), /The user declined/);
        assert.equal(questions.length, 2);
        await transport.terminateSession();
        await client.close();
    });

    test('another tenant cannot find, use or end a session', async () => {
        const { client, transport } = await sdkClient(TOKEN_A);
        const sessionA = transport.sessionId;
        assert.match(sessionA, /^[0-9a-f]{64}$/);
        const list = { jsonrpc: '2.0', id: 9, method: 'tools/list' };
        const asB = await post(TOKEN_B, list, { 'Mcp-Session-Id': sessionA, 'MCP-Protocol-Version': '2025-11-25' });
        assert.equal(asB.status, 404);
        const deleted = await fetch(url(), { method: 'DELETE', headers: { Authorization: `Bearer ${TOKEN_B}`, 'Mcp-Session-Id': sessionA } });
        assert.equal(deleted.status, 404);
        const stream = await fetch(url(), { headers: { Authorization: `Bearer ${TOKEN_B}`, Accept: 'text/event-stream', 'Mcp-Session-Id': sessionA } });
        assert.equal(stream.status, 404);
        // A guessed id is as unknown as another tenant's.
        const guessed = await post(TOKEN_A, list, { 'Mcp-Session-Id': crypto.randomBytes(32).toString('hex') });
        assert.equal(guessed.status, 404);
        // A's session is untouched.
        assert.equal((await client.listTools()).tools.length, 7);
        await transport.terminateSession();
        await client.close();
    });

    test('a tenant\'s files and processes are out of another\'s reach', async () => {
        const a = await sdkClient(TOKEN_A);
        const b = await sdkClient(TOKEN_B);
        const secret = path.join(dir, 'alpha', 'secret.txt');
        const read = await b.client.callTool({ name: 'read', arguments: { file_path: secret } });
        assert.equal(read.isError, true);
        const cat = await b.client.callTool({ name: 'bash', arguments: { command: `cat ${secret}; ls ${path.join(dir, 'alpha')}; echo end` } });
        assert.doesNotMatch(textOf(cat), /alpha only/);
        // A long process in A's sandbox is not in B's: B sees neither it nor its pid space.
        const started = await a.client.callTool({ name: "process", arguments: { action: "start", command: "sleep 30" } });
        assert.equal(started.isError, false, textOf(started));
        const ps = await b.client.callTool({ name: 'bash', arguments: { command: 'ps -e -o comm= | sort | uniq -c; kill -9 -1; echo killed' } });
        assert.doesNotMatch(textOf(ps), /sleep/);
        const stillA = await a.client.callTool({ name: 'process', arguments: { action: 'list' } });
        assert.match(textOf(stillA), /sleep 30/);
        if (ROOT) {
            const ida = textOf(await a.client.callTool({ name: 'bash', arguments: { command: 'cat /proc/self/uid_map' } }));
            const idb = textOf(await b.client.callTool({ name: 'bash', arguments: { command: 'cat /proc/self/uid_map' } }));
            assert.match(ida, /\s15000\d{5}\s/, ida);
            assert.match(idb, /\s15001\d{5}\s/, idb);
            // Each tenant's sandboxes share one cpu cgroup group of the tenant's weight: alpha's
            // 300 against beta's default 100, however many sandboxes each runs.
            const groups = new Map();
            for (const worker of descendantsOf(serve.pid).filter((p) => p.cmdline.includes('__worker'))) {
                for (const line of fs.readFileSync(`/proc/${worker.pid}/cgroup`, 'utf8').split('\n')) {
                    const [, controllers, where] = line.split(':');
                    const m = /^(.*\/tenant-(alpha|beta))\//.exec(where ?? '');
                    if (m && (controllers === '' || controllers.split(',').includes('cpu'))) {
                        const file = controllers === '' ? `/sys/fs/cgroup${m[1]}/cpu.weight` : `/sys/fs/cgroup/${controllers}${m[1]}/cpu.shares`;
                        groups.set(m[2], fs.readFileSync(file, 'utf8').trim());
                    }
                }
            }
            if (groups.size > 0 || fs.readFileSync('/proc/self/cgroup', 'utf8').includes(':cpu')) {
                const v2 = !fs.readFileSync('/proc/self/cgroup', 'utf8').includes(':cpu');
                assert.deepEqual(Object.fromEntries(groups), v2 ? { alpha: '300', beta: '100' } : { alpha: '3072', beta: '1024' });
            }
        }
        for (const side of [a, b]) {
            await side.transport.terminateSession();
            await side.client.close();
        }
    });

    test('tokens: none, wrong, expired and malformed get 401', async () => {
        const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '0' } } };
        const none = await post(undefined, init);
        assert.equal(none.status, 401);
        assert.match(none.headers.get('www-authenticate'), /^Bearer realm="stockade"/);
        const wrong = await post(crypto.randomBytes(32).toString('hex'), init);
        assert.equal(wrong.status, 401);
        assert.match(wrong.headers.get('www-authenticate'), /invalid_token/);
        const expired = await post(TOKEN_EXPIRED, init);
        assert.equal(expired.status, 401, 'a token past its expires is refused');
        assert.match(expired.headers.get('www-authenticate'), /invalid_token/);
        const later = await post(TOKEN_LATER, init);
        assert.equal(later.status, 200, 'a token before its expires is beta\'s');
        const session = later.headers.get('mcp-session-id');
        await fetch(url(), { method: 'DELETE', headers: { Authorization: `Bearer ${TOKEN_LATER}`, 'Mcp-Session-Id': session } });
        const basic = await fetch(url(), { method: 'POST', headers: { ...HEADERS, Authorization: 'Basic YTpi' }, body: JSON.stringify(init) });
        assert.equal(basic.status, 401);
        // A tenant token is not the operator's.
        assert.equal((await fetch(url('/metrics'), { headers: { Authorization: `Bearer ${TOKEN_A}` } })).status, 401);
        const metrics = await fetch(url('/metrics'), { headers: { Authorization: `Bearer ${TOKEN_O}` } });
        assert.equal(metrics.status, 200);
        const text = await metrics.text();
        assert.match(text, /stockade_tool_calls_total\{tenant="alpha",tool="write",outcome="ok"\} \d+/);
        assert.match(text, /stockade_tool_call_seconds_bucket\{tool="read",le="\+Inf"\} \d+/);
        assert.equal((await fetch(url('/healthz'))).status, 200);
        assert.equal((await fetch(url('/readyz'))).status, 200);
    });

    test('stockade sessions list and kill: the operator ends one session of one tenant', async () => {
        const a = await sdkClient(TOKEN_A);
        const b = await sdkClient(TOKEN_B);
        const idA = a.transport.sessionId;
        const idB = b.transport.sessionId;
        const tokenFile = path.join(dir, 'admin.token');
        fs.writeFileSync(tokenFile, `${TOKEN_O}\n`);
        const server = ['--server', `http://127.0.0.1:${port}`, '--admin-token-file', tokenFile];

        const json = sessionsCli(['list', '--json', ...server]);
        assert.equal(json.status, 0, json.stderr);
        const listed = new Map(JSON.parse(json.stdout).sessions.map((s) => [s.id, s]));
        assert.equal(listed.get(idA)?.tenant, 'alpha', json.stdout);
        assert.equal(listed.get(idB)?.tenant, 'beta', json.stdout);
        assert.ok(listed.get(idA).age_seconds >= 0 && listed.get(idA).calls >= 0);
        // Each names its event log (what `stockade log` takes) and the calls it has made.
        assert.match(listed.get(idA).log_id, /^s-[0-9a-f]{12}$/, json.stdout);
        assert.ok(listed.get(idA).calls_made >= 0, json.stdout);

        // The table, with the server and token from the environment this time.
        const table = sessionsCli(['list'], { STOCKADE_SERVER: url(), STOCKADE_ADMIN_TOKEN: TOKEN_O });
        assert.equal(table.status, 0, table.stderr);
        const lines = table.stdout.trimEnd().split('\n');
        assert.match(lines[0], /^ID\s+TENANT\s+LOG\s+AGE\s+IDLE\s+CALLS\s+RUNNING$/);
        assert.ok(lines.some((l) => new RegExp(`^${idA}\\s+alpha\\s+s-[0-9a-f]{12}\\s+\\d+s\\s+\\d+s\\s+\\d+\\s+\\d+$`).test(l)), table.stdout);
        assert.ok(lines.findIndex((l) => l.includes(idA)) < lines.findIndex((l) => l.includes(idB)), 'sorted by tenant');

        const killed = sessionsCli(['kill', idB, ...server]);
        assert.equal(killed.status, 0, killed.stderr);
        assert.equal(killed.stdout, `ended session ${idB}\n`);
        // The session ends on the server's own time: its id is soon unknown to the MCP endpoint.
        const list = { jsonrpc: '2.0', id: 9, method: 'tools/list' };
        let status;
        for (let i = 0; i < 40; ++i) {
            const r = await post(TOKEN_B, list, { 'Mcp-Session-Id': idB, 'MCP-Protocol-Version': '2025-11-25' });
            await r.text();
            status = r.status;
            if (status === 404) break;
            await sleep(50);
        }
        assert.equal(status, 404);
        assert.equal((await a.client.listTools()).tools.length, 7);
        const after = JSON.parse(sessionsCli(['list', '--json', ...server]).stdout).sessions.map((s) => s.id);
        assert.ok(after.includes(idA) && !after.includes(idB), after.join(','));

        // An id the server does not hold; the run goes on to the next id and exits 1.
        const again = sessionsCli(['kill', idB, idA, ...server]);
        assert.equal(again.status, 1);
        assert.match(again.stderr, new RegExp(`no session ${idB} on this server`));
        assert.equal(again.stdout, `ended session ${idA}\n`);

        // Tokens that are not the operator's, no token, no server.
        const wrongFile = path.join(dir, 'wrong.token');
        fs.writeFileSync(wrongFile, crypto.randomBytes(32).toString('hex'));
        fs.writeFileSync(path.join(dir, 'tenant-a.token'), TOKEN_A);
        for (const file of [wrongFile, path.join(dir, 'tenant-a.token')]) {
            const wrong = sessionsCli(['list', '--server', url(), '--admin-token-file', file]);
            assert.equal(wrong.status, 1);
            assert.match(wrong.stderr, /the admin token was refused \(401 Unauthorized\): give the token whose hash is in serve's --admin-token-file/);
            assert.equal(wrong.stdout, '');
        }
        const wrongKill = sessionsCli(['kill', idA, '--server', url(), '--admin-token-file', wrongFile]);
        assert.equal(wrongKill.status, 1);
        assert.match(wrongKill.stderr, /the admin token was refused/);
        const none = sessionsCli(['list', '--server', url()]);
        assert.equal(none.status, 1);
        assert.match(none.stderr, /needs the admin token .*--admin-token-file FILE/);
        const hashFile = sessionsCli(['list', '--server', url(), '--admin-token-file', path.join(dir, 'admin.sha256')]);
        assert.equal(hashFile.status, 2);
        assert.match(hashFile.stderr, /looks like serve's hash file/);
        const refused = sessionsCli(['list', '--server', 'http://127.0.0.1:1', '--admin-token-file', tokenFile]);
        assert.equal(refused.status, 1);
        assert.match(refused.stderr, /ECONNREFUSED.*is stockade serve --http running at http:\/\/127\.0\.0\.1:1\?/);
        for (const side of [a, b]) await side.client.close().catch(() => {});
    });

    test('the flags of serve --http are refused without it, and --no-auth off loopback', () => {
        const stdio = spawnSync(BIN, ['serve', '--tenants', path.join(dir, 'tenants.json')], { encoding: 'utf8', input: '' });
        assert.equal(stdio.status, 2);
        assert.match(stdio.stderr, /--tenants is for serve over HTTP: add --http/);
        // In a directory apart from the state (serve refuses a workspace that holds it).
        const apart = { encoding: 'utf8', cwd: path.join(dir, 'alpha') };
        const open = spawnSync(BIN, ['serve', '--http', '0.0.0.0:0', '--no-auth'], apart);
        assert.equal(open.status, 2);
        assert.match(open.stderr, /--no-auth is only for a loopback address/);
        const none = spawnSync(BIN, ['serve', '--http', '127.0.0.1:0'], apart);
        assert.equal(none.status, 2);
        assert.match(none.stderr, /--http needs tokens/);
    });

    test('a foreign Origin or Host is refused (DNS rebinding)', async () => {
        const { response } = await initialize(TOKEN_A).catch(() => ({}));
        assert.equal(response.status, 200);
        const evil = await fetch(url(), { method: 'POST', headers: { ...HEADERS, Authorization: `Bearer ${TOKEN_A}`, Origin: 'http://evil.example.com' }, body: '{}' });
        assert.equal(evil.status, 403);
        const host = await rawExchange('GET /healthz HTTP/1.1\r\nHost: evil.example.com\r\n\r\n', 2000);
        assert.match(host, /^HTTP\/1\.1 403/);
    });

    test('quotas: sessions, calls per second, idle sessions', async () => {
        const first = await initialize(TOKEN_B);
        const second = await initialize(TOKEN_B);
        assert.equal(first.response.status, 200);
        assert.equal(second.response.status, 200);
        const third = await initialize(TOKEN_B);
        assert.equal(third.response.status, 429);
        assert.match(third.body, /2 sessions open, its limit/);
        // Three calls a second: a burst of eight is partly refused, with Retry-After.
        const call = (id) => post(TOKEN_B, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'glob', arguments: { pattern: '*' } } },
            { 'Mcp-Session-Id': first.session, 'MCP-Protocol-Version': '2025-11-25' });
        const statuses = await Promise.all([1, 2, 3, 4, 5, 6, 7, 8].map((id) => call(100 + id).then(async (r) => { await r.text(); return r; })));
        const refused = statuses.filter((r) => r.status === 429);
        assert.ok(refused.length >= 1 && refused.length <= 6, statuses.map((r) => r.status).join(','));
        assert.ok(Number(refused[0].headers.get('retry-after')) >= 1);
        // Idle for more than 3 s: both sessions end, and their slots come back.
        await sleep(5000);
        const gone = await call(200);
        assert.equal(gone.status, 404);
        const again = await initialize(TOKEN_B);
        assert.equal(again.response.status, 200);
    });

    test('2026-07-28 stateless requests, headers checked against the body', async () => {
        const body = { jsonrpc: '2.0', id: 3, method: 'tools/list', params: { _meta: modernMeta() } };
        const ok = await post(TOKEN_A, body, { 'MCP-Protocol-Version': MODERN, 'Mcp-Method': 'tools/list' });
        assert.equal(ok.status, 200);
        const listed = await ok.json();
        assert.equal(listed.result.resultType, 'complete');
        assert.equal(listed.result.tools.length, 7);
        assert.equal(ok.headers.get('mcp-session-id'), null);
        const mismatch = await post(TOKEN_A, body, { 'MCP-Protocol-Version': MODERN, 'Mcp-Method': 'prompts/list' });
        assert.equal(mismatch.status, 400);
        assert.equal((await mismatch.json()).error.code, -32020);
        const call = { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'bash', arguments: { command: 'echo stateless' }, _meta: modernMeta() } };
        const ran = await post(TOKEN_A, call, { 'MCP-Protocol-Version': MODERN, 'Mcp-Method': 'tools/call', 'Mcp-Name': 'bash' });
        assert.equal(ran.status, 200);
        const messages = messagesOf(await ran.text());
        assert.match(messages.at(-1).result.content[0].text, /stateless/);
        const unknown = await post(TOKEN_A, { jsonrpc: '2.0', id: 5, method: 'nope/never', params: { _meta: modernMeta() } },
            { 'MCP-Protocol-Version': MODERN, 'Mcp-Method': 'nope/never' });
        assert.equal(unknown.status, 404);
    });

    test('hostile clients: a 1 GiB body, endless headers, a client gone mid-call', async () => {
        const big = await rawExchange(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN_A}\r\n`
            + 'Content-Type: application/json\r\nContent-Length: 1073741824\r\n\r\n{"jsonrpc":', 5000);
        assert.match(big, /^HTTP\/1\.1 413/);
        const endless = await rawExchange(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: ${'a'.repeat(64 << 10)}`, 5000);
        assert.match(endless, /^HTTP\/1\.1 431/);
        // A call whose client goes away: the session lives on and answers the next request.
        const { session } = await initialize(TOKEN_A);
        const controller = new AbortController();
        const cut = await fetch(url(), {
            method: 'POST', signal: controller.signal,
            headers: { ...HEADERS, Authorization: `Bearer ${TOKEN_A}`, 'Mcp-Session-Id': session },
            body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'bash', arguments: { command: 'sleep 1; echo late' } } }),
        });
        assert.equal(cut.headers.get('content-type'), 'text/event-stream');
        // The priming event names the stream to resume; then the client goes away.
        const reader = cut.body.getReader();
        let head = '';
        while (!/^id: \S+$/m.test(head)) head += new TextDecoder().decode((await reader.read()).value);
        const lastEventId = /^id: (\S+)$/m.exec(head)[1];
        controller.abort();
        const next = await post(TOKEN_A, { jsonrpc: '2.0', id: 8, method: 'tools/list' }, { 'Mcp-Session-Id': session });
        assert.equal(next.status, 200);
        assert.equal((await next.json()).result.tools.length, 7);
        // The cut stream's result waits to be resumed.
        await sleep(1200);
        const resumed = await fetch(url(), { headers: { Authorization: `Bearer ${TOKEN_A}`, Accept: 'text/event-stream', 'Mcp-Session-Id': session, 'Last-Event-ID': lastEventId } });
        assert.equal(resumed.status, 200);
        const replay = messagesOf(await resumed.text());
        assert.equal(replay.at(-1).id, 7);
        assert.match(replay.at(-1).result.content[0].text, /late/);
    });

    test('SIGTERM drains: a running call finishes, new work is refused, the server exits', async () => {
        const { client } = await sdkClient(TOKEN_A);
        const running = client.callTool({ name: 'bash', arguments: { command: 'sleep 1.5; echo finished' } });
        await sleep(300);
        serve.kill('SIGTERM');
        await sleep(200);
        const refused = await initialize(TOKEN_A).then((r) => r.response.status).catch(() => 'refused');
        assert.ok(refused === 503 || refused === 'refused', String(refused));
        const result = await running;
        assert.match(textOf(result), /finished/);
        const [code] = await new Promise((resolve) => {
            if (serve.exitCode !== null) resolve([serve.exitCode]);
            else serve.on('exit', (c) => resolve([c]));
        });
        assert.equal(code, 0, serveLog);
        await client.close().catch(() => {});
    });
});

const alive = (pid) => { try { process.kill(pid, 0); return true; } catch { return false; } };

describe('stockade serve --http when things die', { skip }, () => {
    before(async () => { port = undefined; serveLog = ''; await startServer(); });
    after(() => {
        if (serve && serve.exitCode === null && !serve.signalCode) serve.kill('SIGKILL');
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    test('a worker killed mid-call: that call fails, the session goes on', async () => {
        const { client } = await sdkClient(TOKEN_A);
        assert.equal((await client.callTool({ name: 'bash', arguments: { command: 'true' } })).isError, false);
        const call = client.callTool({ name: 'bash', arguments: { command: 'sleep 3; echo survived' } });
        await sleep(500);
        const workers = descendantsOf(serve.pid).filter((p) => p.cmdline.includes('__worker'));
        assert.equal(workers.length, 1, JSON.stringify(descendantsOf(serve.pid)));
        process.kill(workers[0].pid, 'SIGKILL');
        const failed = await call;
        assert.equal(failed.isError, true);
        assert.doesNotMatch(textOf(failed), /survived/);
        const next = await client.callTool({ name: 'bash', arguments: { command: 'echo again' } });
        assert.equal(next.isError, false, textOf(next));
        assert.match(textOf(next), /again/);
        await client.close();
    });

    test('the supervisor killed with SIGKILL leaves no worker and no process', async () => {
        const a = await sdkClient(TOKEN_A);
        const b = await sdkClient(TOKEN_B);
        for (const side of [a, b]) {
            const started = await side.client.callTool({ name: 'process', arguments: { action: 'start', command: 'sleep 313' } });
            assert.equal(started.isError, false, textOf(started));
        }
        await sleep(300);
        const before = descendantsOf(serve.pid);
        assert.ok(before.filter((p) => p.cmdline.includes('__worker')).length >= 2, JSON.stringify(before));
        assert.ok(before.some((p) => p.cmdline.includes('sleep 313')), JSON.stringify(before));
        serve.kill('SIGKILL');
        await new Promise((resolve) => serve.on('exit', resolve));
        let left = before.filter((p) => alive(p.pid));
        for (let i = 0; i < 40 && left.length > 0; ++i) {
            await sleep(50);
            left = left.filter((p) => alive(p.pid));
        }
        assert.deepEqual(left, []);
        if (ROOT) {
            // Nothing runs as a uid of either tenant's range.
            const ranged = [];
            for (const entry of fs.readdirSync('/proc')) {
                if (!/^\d+$/.test(entry)) continue;
                try {
                    const uid = Number(/^Uid:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${entry}/status`, 'utf8'))[1]);
                    if (uid >= 1500000000 && uid <= 1500165535) ranged.push(entry);
                } catch { /* gone */ }
            }
            assert.deepEqual(ranged, []);
        }
    });
});

describe('stockade serve --http on a unix socket', { skip }, () => {
    test('serves /mcp there without a token, and removes the socket when it stops', async () => {
        const where = fs.mkdtempSync(path.join(os.tmpdir(), 'stockade-unix-'));
        const socketPath = path.join(where, 'mcp.sock');
        fs.writeFileSync(path.join(where, 'not-a-socket'), 'keep me');
        const refused = spawnSync(BIN, ['serve', '--http', `unix:${path.join(where, 'not-a-socket')}`, '--no-auth', '--workspace', where], { encoding: 'utf8' });
        assert.equal(refused.status, 2);
        assert.match(refused.stderr, /is not a socket/);
        assert.equal(fs.readFileSync(path.join(where, 'not-a-socket'), 'utf8'), 'keep me');
        let log = '';
        fs.mkdirSync(path.join(where, 'ws'));
        const server = spawn(BIN, ['serve', '--http', `unix:${socketPath}`, '--no-auth', '--workspace', path.join(where, 'ws'), '--no-user-settings'], {
            env: { ...process.env, STOCKADE_STATE_DIR: path.join(where, 'state') }, stdio: ['ignore', 'ignore', 'pipe'],
        });
        server.stderr.on('data', (c) => { log += c; });
        for (let i = 0; i < 200 && !log.includes('listening on'); ++i) await sleep(25);
        assert.match(log, /listening on unix:.*mcp\.sock \(path \/mcp\)/);
        assert.match(log, /WARNING: --no-auth/);
        const request = (method, body) => new Promise((resolve, reject) => {
            const req = http.request({ socketPath, path: '/mcp', method, headers: { Host: 'localhost', ...HEADERS } }, (res) => {
                let text = '';
                res.on('data', (c) => { text += c; });
                res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text }));
            });
            req.on('error', reject);
            req.end(body);
        });
        const init = await request('POST', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'unix', version: '0' } } }));
        assert.equal(init.status, 200, init.text);
        assert.match(init.headers['mcp-session-id'], /^[0-9a-f]{64}$/);
        // The operator's CLI over the socket (--no-auth: no admin token either).
        const id = init.headers['mcp-session-id'];
        const listed = sessionsCli(['list', '--json', '--server', `unix:${socketPath}`]);
        assert.equal(listed.status, 0, listed.stderr);
        assert.deepEqual(JSON.parse(listed.stdout).sessions.map((s) => [s.id, s.tenant]), [[id, 'default']]);
        const killed = sessionsCli(['kill', id], { STOCKADE_SERVER: `unix:${socketPath}` });
        assert.equal(killed.status, 0, killed.stderr);
        assert.equal(killed.stdout, `ended session ${id}\n`);
        let empty;
        for (let i = 0; i < 40; ++i) {
            empty = sessionsCli(['list', '--server', `unix:${socketPath}`]);
            if (empty.stderr.includes('no sessions open')) break;
            await sleep(50);
        }
        assert.equal(empty.status, 0, empty.stderr);
        assert.equal(empty.stdout, '');
        assert.match(empty.stderr, /no sessions open on unix:/);
        server.kill('SIGTERM');
        const code = await new Promise((resolve) => server.on('exit', resolve));
        assert.equal(code, 0, log);
        assert.equal(fs.existsSync(socketPath), false);
        fs.rmSync(where, { recursive: true, force: true });
    });
});
