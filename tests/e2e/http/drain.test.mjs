// A drain that runs out: `stockade serve --http --drain 1`, calls still running (`bash sleep`)
// when SIGTERM comes and still running a second later. Each call, whichever way its client
// reads it, is stopped and answered with a JSON-RPC error naming the shutdown; the server exits
// 0 and leaves nothing running. Driven by the official MCP TypeScript SDK and by raw HTTP;
// STOCKADE_BIN names the binary (run_http.sh sets it); without it every test here is skipped.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';

import { MODERN, modernMeta } from '../protocol.mjs';
import { descendantsOf, startServe } from './harness.mjs';

const BIN = process.env.STOCKADE_BIN;
const skip = BIN ? false : 'STOCKADE_BIN is not set (run_http.sh sets it)';
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const alive = (pid) => { try { process.kill(pid, 0); return true; } catch { return false; } };

// What every call the drain stopped is answered with.
const SHUTDOWN = /^Stockade is shutting down: this call was still running when the 1 s given to running calls ran out, so it was stopped and its processes killed; it may have done part of its work\. Retry it in a new session once the server is back\.$/;

let dir;
let serve;
let port;
let serveLog = '';

function url() {
    return `http://127.0.0.1:${port}/mcp`;
}

async function post(body, headers) {
    return fetch(url(), {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', ...headers },
        body: JSON.stringify(body),
    });
}

// The JSON-RPC messages of an SSE body.
function messagesOf(text) {
    return text.split('\n').filter((l) => l.startsWith('data: ') && l.length > 6).map((l) => JSON.parse(l.slice(6)));
}

// Resolves when every one of `patterns` names a running process under serve.
async function running(patterns) {
    for (let i = 0; i < 200; ++i) {
        const tree = descendantsOf(serve.pid);
        if (patterns.every((p) => tree.some((proc) => proc.cmdline.includes(p)))) return tree;
        await sleep(50);
    }
    assert.fail(`not all of ${patterns.join(', ')} started:\n${JSON.stringify(descendantsOf(serve.pid))}\n${serveLog}`);
}

describe('stockade serve --http --drain 1', { skip }, () => {
    before(async () => {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stockade-drain-'));
        fs.chmodSync(dir, 0o755);
        fs.mkdirSync(path.join(dir, 'ws'));
        fs.mkdirSync(path.join(dir, 'state'));
        ({ serve, port } = await startServe(BIN, ['--no-auth', '--workspace', path.join(dir, 'ws'),
            '--no-user-settings', '--drain', '1'],
        { ...process.env, STOCKADE_STATE_DIR: path.join(dir, 'state'), SPDLOG_LEVEL: 'info' },
        (chunk) => { serveLog += chunk; }));
    });
    after(() => {
        if (serve && serve.exitCode === null && !serve.signalCode) serve.kill('SIGKILL');
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    test('calls still running at the deadline are stopped and answered; nothing is left', async () => {
        // 2025-11-25 through the SDK: the answer comes on the call's SSE stream.
        const client = new Client({ name: 'stockade-drain-e2e', version: '0.0.0' });
        await client.connect(new StreamableHTTPClientTransport(new URL(url())));
        const viaSdk = client.callTool({ name: 'bash', arguments: { command: 'sleep 31' } })
            .then((result) => ({ result }), (error) => ({ error }));
        // 2025-11-25 by hand, a client that takes JSON only: the answer is the response.
        const init = await post({
            jsonrpc: '2.0', id: 1, method: 'initialize',
            params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
        }, { Accept: 'application/json' });
        assert.equal(init.status, 200);
        const session = init.headers.get('mcp-session-id');
        await init.text();
        const viaJson = post({ jsonrpc: '2.0', id: 'j', method: 'tools/call', params: { name: 'bash', arguments: { command: 'sleep 32' } } },
            { Accept: 'application/json', 'Mcp-Session-Id': session, 'MCP-Protocol-Version': '2025-11-25' });
        // 2026-07-28, stateless: the answer comes on its SSE stream.
        const viaModern = post({ jsonrpc: '2.0', id: 'm', method: 'tools/call', params: { name: 'bash', arguments: { command: 'sleep 33' }, _meta: modernMeta() } },
            { Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': MODERN, 'Mcp-Method': 'tools/call', 'Mcp-Name': 'bash' });

        const before = await running(['sleep 31', 'sleep 32', 'sleep 33']);
        assert.ok(before.some((p) => p.cmdline.includes('__worker')), JSON.stringify(before));
        const signalled = Date.now();
        serve.kill('SIGTERM');

        const sdk = await viaSdk;
        assert.ok(sdk.error instanceof McpError, `the SDK call got ${JSON.stringify(sdk.result ?? String(sdk.error))}`);
        assert.equal(sdk.error.code, -32603);
        assert.match(sdk.error.message, /^MCP error -32603: Stockade is shutting down/);
        assert.match(sdk.error.message.replace(/^MCP error -32603: /, ''), SHUTDOWN);

        const json = await viaJson;
        assert.equal(json.status, 200);
        assert.equal(json.headers.get('content-type'), 'application/json');
        const answer = await json.json();
        assert.equal(answer.id, 'j');
        assert.equal(answer.error.code, -32603);
        assert.match(answer.error.message, SHUTDOWN);

        const modern = await viaModern;
        assert.equal(modern.status, 200);
        assert.equal(modern.headers.get('content-type'), 'text/event-stream');
        const messages = messagesOf(await modern.text());
        assert.equal(messages.length, 1, JSON.stringify(messages));
        assert.equal(messages[0].id, 'm');
        assert.equal(messages[0].error.code, -32603);
        assert.match(messages[0].error.message, SHUTDOWN);

        const code = await new Promise((resolve) => {
            if (serve.exitCode !== null) resolve(serve.exitCode);
            else serve.on('exit', (c) => resolve(c));
        });
        assert.equal(code, 0, serveLog);
        assert.ok(Date.now() - signalled < 15000, `serve took ${Date.now() - signalled} ms to stop`);
        assert.match(serveLog, /http drain: 3 calls still running at the deadline; stopping them, answering each with an error/);
        // Nothing it ran is left: not the sleeps, not the workers.
        let left = before.filter((p) => alive(p.pid));
        for (let i = 0; i < 40 && left.length > 0; ++i) {
            await sleep(50);
            left = left.filter((p) => alive(p.pid));
        }
        assert.deepEqual(left, []);
        await client.close().catch(() => {});
    });
});
