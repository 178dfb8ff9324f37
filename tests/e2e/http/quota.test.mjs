// What one tenant's sessions share on a `stockade serve --http`: the disk quota of their tool
// output (spilled results and process logs, ended sessions' included, reclaimed oldest first)
// and the meters /metrics shows for it: output written, disk held, processes running, workers
// restarted; and serve's JSON log. Driven by the official MCP TypeScript SDK; STOCKADE_BIN names
// the binary (run_http.sh sets it); without it every test here is skipped.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { chownTree, descendantsOf, startServe } from './harness.mjs';

const BIN = process.env.STOCKADE_BIN;
const skip = BIN ? false : 'STOCKADE_BIN is not set (run_http.sh sets it)';
const ROOT = process.getuid() === 0;
const TOKEN = crypto.randomBytes(32).toString('hex');
const ADMIN = crypto.randomBytes(32).toString('hex');
const sha256 = (text) => crypto.createHash('sha256').update(text).digest('hex');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const QUOTA = 64 * 1024;

let dir;
let serve;
let port;
let serveLog = '';

async function session() {
    const client = new Client({ name: 'stockade-quota-e2e', version: '0.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
    });
    await client.connect(transport);
    const call = async (name, args) => {
        const result = await client.callTool({ name, arguments: args });
        return { ...result, text: result.content.map((c) => c.text).join('\n') };
    };
    return { client, transport, call };
}

// The value of `family{tenant="small"}` (or `{tenant="small",decision="..."}`) in /metrics.
async function metric(family, decision) {
    const response = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { Authorization: `Bearer ${ADMIN}` } });
    assert.equal(response.status, 200);
    const text = await response.text();
    const labels = decision ? `tenant="small",decision="${decision}"` : 'tenant="small"';
    const match = new RegExp(`^${family}\\{${labels}\\} (\\d+)$`, 'm').exec(text);
    assert.ok(match, `${family} is not in /metrics:\n${text}`);
    return Number(match[1]);
}

async function openSessions() {
    const response = await fetch(`http://127.0.0.1:${port}/admin/sessions`, { headers: { Authorization: `Bearer ${ADMIN}` } });
    return (await response.json()).sessions.length;
}

// Bytes of tool output on disk under the tenant's state directory.
function onDisk() {
    let total = 0;
    const walk = (p) => {
        for (const entry of fs.readdirSync(p, { withFileTypes: true })) {
            const full = path.join(p, entry.name);
            if (entry.isDirectory()) walk(full);
            else if (entry.isFile() && full.includes(`${path.sep}tool-output${path.sep}`)) total += fs.statSync(full).size;
        }
    };
    walk(path.join(dir, 'state', 'tenants', 'small'));
    return total;
}

const GREP = { pattern: 'needle', path: '.' };
// Where a session's result says its full output is: /stockade/tool-output/NAME inside (a tenant
// never sees the server's layout), which is the session's tool-output directory in the state
// directory, found through the session's event-log id in /admin/sessions.
async function spilledTo(s, text) {
    const inside = /Full results: (\S+)/.exec(text)?.[1];
    if (!inside) return undefined;
    assert.match(inside, /^\/stockade\/tool-output\//);
    const response = await fetch(`http://127.0.0.1:${port}/admin/sessions`, { headers: { Authorization: `Bearer ${ADMIN}` } });
    const listed = (await response.json()).sessions.find((x) => x.id === s.transport.sessionId);
    assert.ok(listed, `session ${s.transport.sessionId} is not in /admin/sessions`);
    return path.join(dir, 'state', 'tenants', 'small', 'sessions', listed.log_id, 'tool-output', path.basename(inside));
}

describe('one tenant\'s sessions share a disk quota and its meters', { skip }, () => {
    before(async () => {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stockade-quota-'));
        fs.chmodSync(dir, 0o755);
        for (const name of ['small', 'state']) fs.mkdirSync(path.join(dir, name));
        // grep's full result for "needle" is about 40 KB: one spill fits the quota, two do not.
        const lines = Array.from({ length: 1000 }, (_, i) => `needle ${String(i).padStart(4, '0')} ${'x'.repeat(20)}`);
        fs.writeFileSync(path.join(dir, 'small', 'hay.txt'), `${lines.join('\n')}\n`);
        if (ROOT) chownTree(path.join(dir, 'small'), 1500200000);
        fs.writeFileSync(path.join(dir, 'tenants.json'), JSON.stringify({
            tenants: [{
                name: 'small', token_sha256: [sha256(TOKEN)], workspace_root: path.join(dir, 'small'),
                ...(ROOT ? { host_uid_range: '1500200000-1500265535' } : {}),
                deny: ['Bash(rm:*)'],
                limits: { sessions: 4, disk: `${QUOTA}` },
            }],
        }));
        fs.writeFileSync(path.join(dir, 'admin.sha256'), `${sha256(ADMIN)}\n`);
        ({ serve, port } = await startServe(BIN, ['--tenants', path.join(dir, 'tenants.json'),
            '--admin-token-file', path.join(dir, 'admin.sha256'), '--no-user-settings'],
        { ...process.env, STOCKADE_STATE_DIR: path.join(dir, 'state'), SPDLOG_LEVEL: 'info', STOCKADE_LOG_FORMAT: 'json' },
        (chunk) => { serveLog += chunk; }));
    });
    after(() => {
        if (serve && serve.exitCode === null) serve.kill('SIGKILL');
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    test('spills past the tenant\'s quota are refused until an ended session\'s output is reclaimed', async () => {
        assert.equal(await metric('stockade_disk_limit_bytes'), QUOTA);
        const first = await session();
        const firstSpill = await spilledTo(first, (await first.call('grep', GREP)).text);
        assert.ok(firstSpill, 'the first session\'s grep spills its full result');
        assert.ok(fs.existsSync(firstSpill));
        const held = await metric('stockade_disk_bytes');
        assert.ok(held > QUOTA / 2 && held <= QUOTA, `disk held ${held}`);
        assert.equal(await metric('stockade_output_bytes_total'), held);

        // Another session of the same tenant: the quota is shared, so its spill does not fit.
        const second = await session();
        const refused = await second.call('grep', GREP);
        assert.equal(refused.isError, false);
        assert.equal(await spilledTo(second, refused.text), undefined, refused.text);
        assert.match(refused.text, /Results truncated\. Use a more specific pattern/);
        assert.ok(onDisk() <= QUOTA, `${onDisk()} bytes on disk`);

        // The first session ends: its output is what the quota gives up first.
        await first.transport.terminateSession();
        await first.client.close();
        for (let i = 0; i < 100 && (await openSessions()) > 1; ++i) await sleep(50);
        const third = await session();
        const thirdSpill = await spilledTo(third, (await third.call('grep', GREP)).text);
        assert.ok(thirdSpill, 'the ended session\'s output was reclaimed for the new spill');
        assert.equal(fs.existsSync(firstSpill), false, 'the ended session\'s spill is gone');
        assert.ok(fs.existsSync(thirdSpill));
        assert.ok(onDisk() <= QUOTA, `${onDisk()} bytes on disk`);
        await second.client.close();
        await third.client.close();
    });

    test('/metrics counts the tenant\'s running processes and restarted workers', async () => {
        const s = await session();
        assert.equal(await metric('stockade_processes'), 0);
        const started = await s.call('process', { action: 'start', command: 'sleep 60' });
        assert.equal(started.isError, false, started.text);
        assert.equal(await metric('stockade_processes'), 1);
        const id = /\b(p\d+)\b/.exec(started.text)[1];
        assert.equal((await s.call('process', { action: 'stop', id })).isError, false);
        for (let i = 0; i < 100 && await metric('stockade_processes') !== 0; ++i) await sleep(50);
        assert.equal(await metric('stockade_processes'), 0);

        const restarts = await metric('stockade_worker_restarts_total');
        const workers = descendantsOf(serve.pid).filter((p) => p.cmdline.includes('__worker'));
        assert.ok(workers.length >= 1, JSON.stringify(descendantsOf(serve.pid)));
        for (const worker of workers) process.kill(worker.pid, 'SIGKILL');
        await sleep(200);
        // The first call after the kill may find the worker dead and fail; one retry gets a new one.
        let after = await s.call('bash', { command: 'echo again' });
        if (after.isError) after = await s.call('bash', { command: 'echo again' });
        assert.match(after.text, /again/);
        assert.ok(await metric('stockade_worker_restarts_total') > restarts);
        // Every call so far was allowed; a denied one is counted as such.
        const allowed = await metric('stockade_policy_decisions_total', 'allow');
        assert.ok(allowed >= 4, `allowed ${allowed}`);
        assert.equal(await metric('stockade_policy_decisions_total', 'deny'), 0);
        const denied = await s.call('bash', { command: 'rm -f nothing' });  // the tenant's deny rule
        assert.equal(denied.isError, true);
        assert.equal(await metric('stockade_policy_decisions_total', 'deny'), 1, denied.text);
        await s.client.close();
    });

    test('the log is one JSON object a line, and each call\'s lines name its tenant, session and call', async () => {
        const s = await session();
        assert.equal((await s.call('bash', { command: 'echo logged' })).isError, false);
        await s.client.close();
        const lines = serveLog.split('\n').filter((line) => line.trim() !== '');
        const records = lines.map((line) => { try { return JSON.parse(line); } catch { assert.fail(`not JSON: ${line}`); } });
        const ends = records.filter((r) => r.msg === 'mcp call end' && r.tool === 'bash');
        assert.ok(ends.length > 0, lines.slice(-20).join('\n'));
        for (const r of ends) {
            assert.equal(r.tenant, 'small');
            assert.match(r.session, /^[0-9a-f]{12}$/);
            assert.ok(r.call && r.dur_ms, JSON.stringify(r));
            assert.equal(r.level, 'info');
        }
        assert.ok(records.some((r) => r.msg.startsWith('listening on http://127.0.0.1:')), 'serve\'s own lines are records too');
    });
});
