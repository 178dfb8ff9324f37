// What the HTTP end-to-end tests share: starting `stockade serve --http`, and the host's process
// tree as /proc shows it (for what a server left running).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';

// Starts `BIN serve --http ADDRESS ARGS...` (ADDRESS 127.0.0.1:0 unless given) and waits for its
// "listening on" line. Every chunk of its stdout (marked) and stderr goes to onLog. Returns
// { serve, port }.
export async function startServe(bin, args, env, onLog, address = '127.0.0.1:0') {
    const serve = spawn(bin, ['serve', '--http', address, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    serve.stdout.on('data', (chunk) => { onLog(`[stdout] ${chunk}`); });
    serve.stderr.on('data', (chunk) => { text += chunk; onLog(String(chunk)); });
    let port;
    for (let i = 0; i < 200 && !port; ++i) {
        const match = /listening on http:\/\/127\.0\.0\.1:(\d+)\/mcp/.exec(text);
        if (match) port = Number(match[1]);
        else await new Promise((resolve) => setTimeout(resolve, 25));
    }
    assert.ok(port, `serve did not start:\n${text}`);
    return { serve, port };
}

// pid -> [ppid, cmdline] of every process this user may read.
export function processTree() {
    const out = new Map();
    for (const entry of fs.readdirSync('/proc')) {
        if (!/^\d+$/.test(entry)) continue;
        try {
            const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
            const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
            const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
            out.set(Number(entry), [ppid, cmdline]);
        } catch { /* gone, or not ours to read */ }
    }
    return out;
}

// Every process below `pid`, as { pid, cmdline }.
export function descendantsOf(pid) {
    const tree = processTree();
    const found = [];
    const walk = (parent) => {
        for (const [child, [ppid, cmdline]] of tree) {
            if (ppid === parent) { found.push({ pid: child, cmdline }); walk(child); }
        }
    };
    walk(pid);
    return found;
}

// Gives `dir` and everything in it to `uid` (and the group of that number). As root, serve
// refuses a tenant whose workspace root is not owned by one of the tenant's host uids.
export function chownTree(dir, uid) {
    fs.chownSync(dir, uid, uid);
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        const child = `${dir}/${entry.name}`;
        if (entry.isDirectory()) chownTree(child, uid);
        else fs.lchownSync(child, uid, uid);
    }
}

// A port nothing listens on now, for a server whose URL must be known before it starts.
export async function freePort() {
    const probe = net.createServer();
    await new Promise((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address();
    await new Promise((resolve) => probe.close(resolve));
    return port;
}
