// Pod mode end to end: `stockade serve --http --pod`, a warm pool's pod that starts with no
// tenant and is bound once, by POST /admin/bind or through --bind-file (a mounted Secret, updated
// by Kubernetes' symlink swap), to one tenant given as in a tenants file. The tenant's token comes
// in Stockade-Token (agent-sandbox's router strips Authorization) or in Authorization. A bound
// pod exits 0 when idle past --pod-idle-ttl or when its binding expires; SIGTERM drains within
// --drain. Driven by the official MCP TypeScript SDK and raw HTTP; STOCKADE_BIN names the
// binary (run_http.sh sets it); without it every test here is skipped.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';

import { chownTree, descendantsOf, startServe } from './harness.mjs';

const BIN = process.env.STOCKADE_BIN;
const skip = BIN ? false : 'STOCKADE_BIN is not set (run_http.sh sets it)';
const ROOT = process.getuid() === 0;
// As root, the tenant's root must be owned by one of its host uids.
const UID_RANGE = '1500300000-1500365535';
const UID = 1500300000;

const TOKEN = crypto.randomBytes(32).toString('hex');        // the tenant's
const OTHER_TOKEN = crypto.randomBytes(32).toString('hex');  // another tenant's
const ADMIN = crypto.randomBytes(32).toString('hex');        // the platform's
const sha256 = (text) => crypto.createHash('sha256').update(text).digest('hex');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const utc = (ms) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

// One pod: its directory (workspace root `ws`, state, admin hashes), its process and log.
class Pod {
    constructor(name) {
        this.dir = fs.mkdtempSync(path.join(os.tmpdir(), `stockade-pod-${name}-`));
        fs.chmodSync(this.dir, 0o755);
        fs.mkdirSync(path.join(this.dir, 'ws'));
        fs.mkdirSync(path.join(this.dir, 'state'));
        if (ROOT) chownTree(path.join(this.dir, 'ws'), UID);
        fs.writeFileSync(path.join(this.dir, 'admin.sha256'), `${sha256(ADMIN)}\n`);
        this.log = '';
    }

    async start(args) {
        ({ serve: this.serve, port: this.port } = await startServe(BIN, ['--pod',
            '--admin-token-file', path.join(this.dir, 'admin.sha256'), '--no-user-settings', ...args],
        { ...process.env, STOCKADE_STATE_DIR: path.join(this.dir, 'state') },
        (chunk) => { this.log += chunk; }));
        this.exited = new Promise((resolve) => {
            this.serve.on('exit', (code, signal) => resolve({ code, signal, at: Date.now() }));
        });
    }

    url(p = '/mcp') {
        return `http://127.0.0.1:${this.port}${p}`;
    }

    // The binding of tenant `name` (token `token`), with `extra` keys beside "tenant".
    binding({ name = 'acme', token = TOKEN, limits = {}, extra = {} } = {}) {
        return {
            tenant: {
                name, token_sha256: [sha256(token)], workspace_root: path.join(this.dir, 'ws'),
                ...(ROOT ? { host_uid_range: UID_RANGE } : {}), limits,
            },
            ...extra,
        };
    }

    async bind(body, token = ADMIN) {
        return fetch(this.url('/admin/bind'), {
            method: 'POST',
            headers: { 'Content-Type': 'application/json', ...(token ? { 'Stockade-Token': token } : {}) },
            body: typeof body === 'string' ? body : JSON.stringify(body),
        });
    }

    async admin(p) {
        return fetch(this.url(p), { headers: { Authorization: `Bearer ${ADMIN}` } });
    }

    async readyz() {
        const response = await fetch(this.url('/readyz'));
        return { status: response.status, text: await response.text() };
    }

    // A raw initialize with `headers`.
    async initialize(headers = {}) {
        return fetch(this.url(), {
            method: 'POST',
            headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
            body: JSON.stringify({
                jsonrpc: '2.0', id: 1, method: 'initialize',
                params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
            }),
        });
    }

    // An SDK client whose requests carry `headers`.
    async client(headers) {
        const client = new Client({ name: 'stockade-pod-e2e', version: '0.0.0' });
        const transport = new StreamableHTTPClientTransport(new URL(this.url()), { requestInit: { headers } });
        await client.connect(transport);
        return { client, transport };
    }

    kill() {
        if (this.serve && this.serve.exitCode === null && !this.serve.signalCode) this.serve.kill('SIGKILL');
    }

    remove() {
        this.kill();
        fs.rmSync(this.dir, { recursive: true, force: true });
    }
}

function textOf(result) {
    return result.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

async function echoHi(client) {
    const result = await client.callTool({ name: 'bash', arguments: { command: 'echo hi' } });
    assert.equal(result.isError, false, textOf(result));
    assert.match(textOf(result), /^hi$/m);
}

// Resolves once `pod`'s /readyz says `text`, within 5 s.
async function readyzSays(pod, text) {
    let last;
    for (let i = 0; i < 100; ++i) {
        last = await pod.readyz();
        if (last.status === 200 && last.text === text) return;
        await sleep(50);
    }
    assert.fail(`/readyz never said ${JSON.stringify(text)}; last ${JSON.stringify(last)}\n${pod.log}`);
}

describe('stockade serve --http --pod, bound by POST /admin/bind', { skip }, () => {
    const pod = skip ? null : new Pod('post');
    before(async () => {
        await pod.start(['--bind-file', path.join(pod.dir, 'not-written-yet.json'), '--drain', '4']);
    });
    after(() => {
        if (pod.serve && pod.serve.exitCode !== 0) console.error(`serve:\n${pod.log}`);
        pod.remove();
    });

    test('an unbound pod is ready to be claimed and refuses /mcp with 503', async () => {
        assert.deepEqual(await pod.readyz(), { status: 200, text: 'ready, unbound\n' });
        assert.match(pod.log, /listening on http:\/\/127\.0\.0\.1:\d+\/mcp \(pod, not bound to a tenant yet/);
        for (const headers of [{}, { 'Stockade-Token': TOKEN }, { Authorization: `Bearer ${TOKEN}` }]) {
            const refused = await pod.initialize(headers);
            assert.equal(refused.status, 503);
            assert.equal(refused.headers.get('retry-after'), '5');
            assert.equal(await refused.text(), 'This pod is not bound to a tenant yet; the platform binds it with '
                + 'POST /admin/bind (or its --bind-file). Retry once it is bound.\n');
        }
        const status = await pod.admin('/admin/pod');
        assert.equal(status.status, 200);
        assert.deepEqual(await status.json(), {
            bound: false, tenant: null, bound_at: null, expires: null, idle_seconds: null,
            idle_ttl_seconds: 1800, sessions: 0,
        });
        assert.match(await (await pod.admin('/metrics')).text(), /\nstockade_pod_bound 0\n/);
    });

    test('binding: the operator\'s token only, a bad body names its key, then once', async () => {
        assert.equal((await pod.bind(pod.binding(), null)).status, 401);
        assert.equal((await pod.bind(pod.binding(), TOKEN)).status, 401, 'a tenant token is not the platform\'s');
        const wrongAdmin = await pod.bind(pod.binding(), crypto.randomBytes(32).toString('hex'));
        assert.equal(wrongAdmin.status, 401);

        const badKey = await pod.bind(pod.binding({ limits: { sesions: 2 } }));
        assert.equal(badKey.status, 400);
        assert.match((await badKey.json()).error, /^tenant "acme": unknown key "limits\.sesions": the keys of limits are sessions, calls/);
        const badTop = await pod.bind(pod.binding({ extra: { expiry: '2030-01-01' } }));
        assert.equal(badTop.status, 400);
        assert.deepEqual(await badTop.json(), { error: 'unknown key "expiry": the keys are tenant, expires' });
        const notJson = await pod.bind('{"tenant": ');
        assert.equal(notJson.status, 400);
        assert.match((await notJson.json()).error, /^invalid JSON/);
        const missingRoot = pod.binding();
        missingRoot.tenant.workspace_root = path.join(pod.dir, 'missing');
        const noRoot = await pod.bind(missingRoot);
        assert.equal(noRoot.status, 400);
        assert.match((await noRoot.json()).error, /workspace root .* is not a directory that can be opened .*: create it, or fix workspace_root/);
        assert.deepEqual(await pod.readyz(), { status: 200, text: 'ready, unbound\n' }, 'refusals bind nothing');

        const bound = await pod.bind(pod.binding({ limits: { sessions: 4 } }));
        assert.equal(bound.status, 200);
        const status = await bound.json();
        assert.equal(status.bound, true);
        assert.equal(status.tenant, 'acme');
        assert.match(status.bound_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
        assert.equal(status.expires, null);
        assert.match(pod.log, /stockade serve: pod bound to tenant acme by POST \/admin\/bind\n/);

        const again = await pod.bind(pod.binding({ limits: { sessions: 4 } }));
        assert.equal(again.status, 200, 'the same binding again changes nothing');
        assert.equal((await again.json()).bound_at, status.bound_at);
        const other = await pod.bind(pod.binding({ name: 'beta', token: OTHER_TOKEN }));
        assert.equal(other.status, 409);
        assert.match((await other.json()).error, /^this pod is bound to tenant "acme" already, since .*; a pod is bound once, to one tenant: claim another pod for tenant "beta"$/);
        const changed = await pod.bind(pod.binding({ limits: { sessions: 8 } }));
        assert.equal(changed.status, 409, 'nor is the same tenant bound again with other settings');

        assert.deepEqual(await pod.readyz(), { status: 200, text: 'ready, bound to tenant acme\n' });
        assert.match(await (await pod.admin('/metrics')).text(), /\nstockade_pod_bound 1\n/);
    });

    test('the tenant\'s token works in Stockade-Token and in Authorization, and no other', async () => {
        for (const headers of [{ 'Stockade-Token': TOKEN }, { Authorization: `Bearer ${TOKEN}` }]) {
            const { client, transport } = await pod.client(headers);
            await echoHi(client);
            await transport.terminateSession();
            await client.close();
        }
        for (const headers of [{ 'Stockade-Token': OTHER_TOKEN }, { 'Stockade-Token': ADMIN }, { Authorization: `Bearer ${OTHER_TOKEN}` }, {}]) {
            const refused = await pod.initialize(headers);
            assert.equal(refused.status, 401, JSON.stringify(headers));
            await refused.text();
        }
        assert.doesNotMatch(pod.log, new RegExp(TOKEN), 'the token is never logged');
    });

    test('SIGTERM: a call that ends within --drain answers, a longer one is stopped, exit 0 within --drain', async () => {
        const { client } = await pod.client({ 'Stockade-Token': TOKEN });
        const short = client.callTool({ name: 'bash', arguments: { command: 'sleep 1; echo slept' } });
        const long = client.callTool({ name: 'bash', arguments: { command: 'sleep 31' } })
            .then((result) => ({ result }), (error) => ({ error }));
        for (let i = 0; i < 200 && !['sleep 1', 'sleep 31'].every((p) => descendantsOf(pod.serve.pid).some((d) => d.cmdline.includes(p))); ++i) {
            await sleep(25);
        }
        const before = descendantsOf(pod.serve.pid);
        assert.ok(before.some((d) => d.cmdline.includes('sleep 31')), JSON.stringify(before));
        const signalled = Date.now();
        pod.serve.kill('SIGTERM');
        const done = await short;
        assert.match(textOf(done), /slept/, 'a call that ends within the drain gets its result');
        const stopped = await long;
        assert.ok(stopped.error instanceof McpError, JSON.stringify(stopped.result));
        assert.match(stopped.error.message, /Stockade is shutting down: this call was still running when the 2 s given to running calls ran out/);
        const { code, at } = await pod.exited;
        assert.equal(code, 0, pod.log);
        // --drain 4: calls get 2 s, ending the sessions the rest; the process is gone by then.
        assert.ok(at - signalled < 4000, `exited ${at - signalled} ms after SIGTERM`);
        assert.match(pod.log, /http server draining on signal 15/);
        const left = before.filter((d) => { try { process.kill(d.pid, 0); return true; } catch { return false; } });
        assert.deepEqual(left, [], 'nothing it ran is left');
        await client.close().catch(() => {});
    });
});

describe('stockade serve --http --pod --bind-file, until its binding expires', { skip }, () => {
    const pod = skip ? null : new Pod('file');
    const mount = skip ? null : path.join(pod.dir, 'secret');
    before(async () => {
        // A Secret's volume before the platform wrote the key: binding.json -> ..data/binding.json
        // dangles.
        fs.mkdirSync(mount);
        fs.symlinkSync('..data/binding.json', path.join(mount, 'binding.json'));
        await pod.start(['--bind-file', path.join(mount, 'binding.json')]);
    });
    after(() => {
        if (pod.serve && pod.serve.exitCode !== 0) console.error(`serve:\n${pod.log}`);
        pod.remove();
    });

    test('the file binds the pod; the pod exits 0 when the binding expires, its session open', async () => {
        await sleep(1200);
        assert.deepEqual(await pod.readyz(), { status: 200, text: 'ready, unbound\n' }, 'no file yet: unbound');
        assert.equal((await pod.initialize({ 'Stockade-Token': TOKEN })).status, 503);
        // Kubernetes' update: a new timestamped directory, then ..data renamed over to it.
        const expires = utc(Date.now() + 9000);
        fs.mkdirSync(path.join(mount, '..2026_01_01_00_00_00.1'));
        fs.writeFileSync(path.join(mount, '..2026_01_01_00_00_00.1', 'binding.json'),
            JSON.stringify(pod.binding({ extra: { expires } })));
        fs.symlinkSync('..2026_01_01_00_00_00.1', path.join(mount, '..data_tmp'));
        fs.renameSync(path.join(mount, '..data_tmp'), path.join(mount, '..data'));
        await readyzSays(pod, 'ready, bound to tenant acme\n');
        assert.match(pod.log, new RegExp(`pod bound to tenant acme by --bind-file ${mount}/binding\\.json; it ends at ${expires}`));
        const status = await (await pod.admin('/admin/pod')).json();
        assert.equal(status.expires, expires);
        // POST /admin/bind agrees with the file: the same binding is no change, another is 409.
        assert.equal((await pod.bind(pod.binding({ extra: { expires } }))).status, 200);
        assert.equal((await pod.bind(pod.binding())).status, 409);

        const { client } = await pod.client({ 'Stockade-Token': TOKEN });
        await echoHi(client);
        const { code, at } = await pod.exited;
        assert.equal(code, 0, pod.log);
        assert.ok(at >= Date.parse(expires), `exited at ${utc(at)}, before ${expires}`);
        assert.ok(at < Date.parse(expires) + 5000, `exited at ${utc(at)}, long after ${expires}`);
        assert.match(pod.log, new RegExp(`http server draining: pod of tenant acme expired: its binding ended at ${expires}`));
        await client.close().catch(() => {});
    });
});

describe('stockade serve --http --pod --pod-idle-ttl 2s', { skip }, () => {
    const pod = skip ? null : new Pod('idle');
    before(async () => {
        await pod.start(['--pod-idle-ttl', '2s']);
    });
    after(() => {
        if (pod.serve && pod.serve.exitCode !== 0) console.error(`serve:\n${pod.log}`);
        pod.remove();
    });

    test('an unbound pod waits; a bound one exits 0 once it had no session and no request for 2 s', async () => {
        await sleep(3000);
        assert.equal(pod.serve.exitCode, null, 'an unbound pod never idles out');
        assert.equal((await pod.bind(pod.binding())).status, 200);
        const { client, transport } = await pod.client({ Authorization: `Bearer ${TOKEN}` });
        await echoHi(client);
        await sleep(2500);
        assert.equal(pod.serve.exitCode, null, 'not while its session is open');
        await echoHi(client);
        await transport.terminateSession();
        const ended = Date.now();
        const { code, at } = await pod.exited;
        assert.equal(code, 0, pod.log);
        assert.ok(at - ended >= 1900, `exited ${at - ended} ms after the session ended`);
        assert.ok(at - ended < 6000, `exited ${at - ended} ms after the session ended`);
        assert.match(pod.log, /http server draining: pod of tenant acme idle: no session and no request for 2 s \(--pod-idle-ttl 2 s\)/);
        await client.close().catch(() => {});
    });
});

describe('stockade serve --pod: what it refuses at the start', { skip }, () => {
    const pod = skip ? null : new Pod('flags');
    after(() => pod.remove());

    test('each refusal says what to do, with exit status 2', () => {
        const admin = ['--admin-token-file', path.join(pod.dir, 'admin.sha256')];
        const cases = [
            [['--pod'], /--pod is for serve over HTTP: add --http/],
            [['--bind-file', 'x'], /--bind-file is for serve over HTTP: add --http/],
            [['--http', '127.0.0.1:0', '--pod'], /--pod needs --admin-token-file FILE: the platform binds the pod with POST \/admin\/bind/],
            [['--http', '127.0.0.1:0', '--pod', ...admin, '--tenants', 'x.json'], /--pod serves the one tenant its binding names.*drop --tenants and --token-file/],
            [['--http', '127.0.0.1:0', '--pod', ...admin, '--workspace', pod.dir], /--pod: the tenant's workspace root comes with its binding \(workspace_root\): drop --workspace/],
            [['--http', '127.0.0.1:0', '--pod', ...admin, '--pod-idle-ttl', '30 m'], /--pod-idle-ttl: "30 m" is not a duration/],
            [['--http', '127.0.0.1:0', ...admin, '--bind-file', 'x', '--no-auth'], /--bind-file is for a pod: add --pod, or drop --bind-file/],
            [['--http', '127.0.0.1:0', '--no-auth', '--pod-idle-ttl', '2s'], /--pod-idle-ttl is for a pod: add --pod/],
        ];
        for (const [args, message] of cases) {
            const run = spawnSync(BIN, ['serve', ...args], {
                encoding: 'utf8', input: '', cwd: pod.dir, timeout: 30000,
                env: { ...process.env, STOCKADE_STATE_DIR: path.join(pod.dir, 'state') },
            });
            assert.equal(run.status, 2, `${args.join(' ')}: ${run.stderr}`);
            assert.match(run.stderr, message, args.join(' '));
        }
    });
});
