// The load client of bench/http.sh: `stockade serve --http` with two tenants' sessions doing
// `read` and `bash true` in a loop, beside the same calls over stdio, and with a third tenant
// flooding. Prints one table; exits 0 whatever the figures (a report, not a test).
//   node bench/http_load.mjs --bin BUILD/stockade [--sessions 200] [--duration 60] [--check 1]
// --check 1 (the ctest load_http): exits 1 when a call failed or went unanswered, or the server
// did not stop cleanly. Timings are still printed, never judged.
import { spawn, execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import nodeHttp from 'node:http';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';

const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, a, i, all) => {
    if (a.startsWith('--')) pairs.push([a.slice(2), all[i + 1]]);
    return pairs;
}, []));
const BIN = args.bin;
const SESSIONS = Number(args.sessions ?? 200);
const DURATION = Number(args.duration ?? 60) * 1000;
const FLOOD_SESSIONS = Number(args['flood-sessions'] ?? 20);
const FLOOD_LOOPS = Number(args['flood-loops'] ?? 4);  // concurrent loops per flood session
const ROOT = process.getuid() === 0;
// The HTTP client: Node's fetch (what the official TypeScript SDK uses), or node:http with a
// keep-alive agent, a cheaper client that leaves more of two cores to the server.
const CLIENT = args.client ?? 'fetch';
if (!['fetch', 'http'].includes(CLIENT)) throw new Error(`--client fetch|http, not ${CLIENT}`);
const agent = new nodeHttp.Agent({ keepAlive: true, maxSockets: Infinity });
// POST `body` to `url` with `headers`: {status, headers (lower-case names), text}.
async function post(url, headers, body) {
    if (CLIENT === 'fetch') {
        const r = await fetch(url, { method: 'POST', headers, body });
        return { status: r.status, header: (n) => r.headers.get(n), text: await r.text() };
    }
    return new Promise((resolve, reject) => {
        const req = nodeHttp.request(url, { method: 'POST', headers, agent }, (res) => {
            const chunks = [];
            res.on('data', (c) => chunks.push(c));
            res.on('end', () => resolve({ status: res.statusCode, header: (n) => res.headers[n] ?? null, text: Buffer.concat(chunks).toString('utf8') }));
            res.on('error', reject);
        });
        req.on('error', reject);
        req.end(body);
    });
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const sha256 = (t) => crypto.createHash('sha256').update(t).digest('hex');

function percentile(values, p) {
    if (values.length === 0) return NaN;
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}
const ms = (v) => (Number.isFinite(v) ? v.toFixed(2) : '—');

// ---- set-up ------------------------------------------------------------------------------------

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stockade-http-bench-'));
fs.chmodSync(dir, 0o755);
const lines = Array.from({ length: 2000 }, (_, i) => `line ${i} of the file the sessions read`).join('\n');
const tenants = ['alpha', 'beta', 'gamma'].map((name, i) => {
    const root = path.join(dir, name);
    fs.mkdirSync(root);
    fs.writeFileSync(path.join(root, 'file.txt'), `${lines}\n`);
    const token = crypto.randomBytes(32).toString('hex');
    if (ROOT) {  // as root, a tenant's root belongs to one of its host uids
        for (const p of [root, path.join(root, 'file.txt')]) fs.chownSync(p, 1700000000 + i * 100000, 1700000000 + i * 100000);
    }
    return {
        token,
        entry: {
            name, token_sha256: [sha256(token)], workspace_root: root,
            ...(ROOT ? { host_uid_range: `${1700000000 + i * 100000}-${1700000000 + i * 100000 + 65535}` } : {}),
            limits: { sessions: SESSIONS + FLOOD_SESSIONS, calls: 4, idle_ttl: "1h" },
        },
    };
});
fs.writeFileSync(path.join(dir, 'tenants.json'), JSON.stringify({ tenants: tenants.map((t) => t.entry) }));
fs.mkdirSync(path.join(dir, 'state'));
const env = { ...process.env, STOCKADE_STATE_DIR: path.join(dir, 'state'), SPDLOG_LEVEL: process.env.BENCH_SERVER_LOG ? 'info' : 'error' };

let serverLog = '';
const server = spawn(BIN, ['serve', '--http', '127.0.0.1:0', '--tenants', path.join(dir, 'tenants.json'),
    '--no-user-settings'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
server.stderr.on('data', (c) => {
    serverLog += c;
    if (process.env.BENCH_SERVER_LOG) fs.appendFileSync(process.env.BENCH_SERVER_LOG, c);
});
let port;
for (let i = 0; i < 400 && !port; ++i) {
    const m = /listening on http:\/\/127\.0\.0\.1:(\d+)\/mcp/.exec(serverLog);
    if (m) port = Number(m[1]); else await sleep(25);
}
if (!port) throw new Error(`serve did not start: ${serverLog}`);
const URL_ = `http://127.0.0.1:${port}/mcp`;

function rssKiB(pid) {
    try {
        const m = /VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
        return m ? Number(m[1]) : 0;
    } catch { return 0; }
}
// Proportional set size: a page shared by N processes counts 1/N in each (the session worker's
// code is one sealed memfd that every worker executes).
function pssKiB(pid) {
    try {
        const m = /^Pss:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
        return m ? Number(m[1]) : 0;
    } catch { return 0; }
}
// CPU seconds (user + system) a process and the children it reaped have used (/proc/PID/stat).
const TICK = 100;  // USER_HZ
function cpuSeconds(pid) {
    try {
        const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
        const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / TICK;  // with reaped children
    } catch { return 0; }
}
const treeCpu = (pids) => pids.reduce((sum, p) => sum + cpuSeconds(p) + descendants(p).reduce((a, d) => a + cpuSeconds(d), 0), 0);
const clientCpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };
function descendants(pid) {
    const children = new Map();
    for (const entry of fs.readdirSync('/proc')) {
        if (!/^\d+$/.test(entry)) continue;
        try {
            const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
            const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
            if (!children.has(ppid)) children.set(ppid, []);
            children.get(ppid).push(Number(entry));
        } catch { /* gone */ }
    }
    const out = [];
    const walk = (p) => { for (const c of children.get(p) ?? []) { out.push(c); walk(c); } };
    walk(pid);
    return out;
}

// ---- clients -------------------------------------------------------------------------------------

class HttpSession {
    constructor(tenant) { this.tenant = tenant; this.id = 0; }
    headers() {
        const h = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: `Bearer ${this.tenant.token}` };
        if (this.session) { h['Mcp-Session-Id'] = this.session; h['MCP-Protocol-Version'] = '2025-11-25'; }
        return h;
    }
    async request(method, params) {
        const id = ++this.id;
        const r = await post(URL_, this.headers(), JSON.stringify({ jsonrpc: '2.0', id, method, params }));
        const text = r.text;
        if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${text.slice(0, 200)}`);
        if (!this.session) this.session = r.header('mcp-session-id');
        const messages = text.trimStart().startsWith('{') ? [JSON.parse(text)]
            : text.split('\n').filter((l) => l.startsWith('data: ') && l.length > 6).map((l) => JSON.parse(l.slice(6)));
        const reply = messages.find((m) => m.id === id);
        if (!reply || reply.error || reply.result?.isError) throw new Error(`bad reply: ${text.slice(0, 300)}`);
        return reply.result;
    }
    async open() {
        await this.request('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '0' } });
        await post(URL_, this.headers(), JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    }
    call(name, a) { return this.request('tools/call', { name, arguments: a }); }
}

class StdioSession {
    constructor(workspace) { this.workspace = workspace; this.id = 0; this.pending = new Map(); }
    async open() {
        this.proc = spawn(BIN, ['serve', '--workspace', this.workspace, '--no-user-settings'], { env, stdio: ['pipe', 'pipe', 'ignore'] });
        readline.createInterface({ input: this.proc.stdout }).on('line', (line) => {
            const m = JSON.parse(line);
            const waiter = this.pending.get(m.id);
            if (waiter) { this.pending.delete(m.id); waiter(m); }
        });
        await this.request('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '0' } });
        this.proc.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
    }
    async request(method, params) {
        const id = ++this.id;
        const reply = await new Promise((resolve) => {
            this.pending.set(id, resolve);
            this.proc.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
        });
        if (reply.error || reply.result?.isError) throw new Error(`bad reply: ${JSON.stringify(reply).slice(0, 300)}`);
        return reply.result;
    }
    call(name, a) { return this.request('tools/call', { name, arguments: a }); }
    close() { this.proc.stdin.end(); }
}

// Each session: read, bash true, read, ... until the deadline. Latencies in ms by tool.
async function loop(sessions, until, workspaceOf, stats, loops = 1) {
    const one = async (s) => {
        while (Date.now() < until) {
            for (const [tool, a] of [['read', { file_path: path.join(workspaceOf(s), 'file.txt') }], ['bash', { command: 'true' }]]) {
                const t0 = performance.now();
                stats.sent++;
                try {
                    await s.call(tool, a);
                    const took = performance.now() - t0;
                    stats[tool].push(took);
                    if (process.env.BENCH_SLOW && took > Number(process.env.BENCH_SLOW)) {
                        console.error(`slow: ${tool} ${took.toFixed(0)} ms session ${s.session?.slice(0, 12) ?? 'stdio'} at ${new Date().toISOString()}`);
                    }
                } catch (e) {
                    stats.errors++;
                    if (stats.errors <= 3) console.error(`error: ${e.message}`);
                }
            }
        }
    };
    await Promise.all(sessions.flatMap((s) => Array.from({ length: loops }, () => one(s))));
}
const newStats = () => ({ read: [], bash: [], sent: 0, errors: 0 });
const answered = (s) => s.read.length + s.bash.length;

// ---- 1. session creation against `stockade run -- true` -----------------------------------------

// In alternating pairs, so that both sides see the same machine: as many sessions open, the
// same page cache, the same neighbours.
const runTimes = [];
const rssBefore = rssKiB(server.pid);
const pssBefore = pssKiB(server.pid);
const sessions = [];
const createTimes = [];
for (let i = 0; i < SESSIONS; ++i) {
    const r0 = performance.now();
    execFileSync(BIN, ['run', '--workspace', tenants[0].entry.workspace_root, '--', 'true'], { env, stdio: 'ignore' });
    runTimes.push(performance.now() - r0);
    const s = new HttpSession(tenants[i % 2]);
    const t0 = performance.now();
    await s.open();
    createTimes.push(performance.now() - t0);
    sessions.push(s);
}
await sleep(1000);
const rssIdle = rssKiB(server.pid);
const pssIdle = pssKiB(server.pid);
const workers = descendants(server.pid);
const workerRss = workers.reduce((sum, p) => sum + rssKiB(p), 0);
const workerPss = workers.reduce((sum, p) => sum + pssKiB(p), 0);

// The anchor: as many bwrap sandboxes as sessions, each running `sleep` with the binds a user
// would type, all namespaces; PSS of every process of theirs (bwrap's monitor, its pid 1, sleep).
let bwrapPss = NaN;
let bwrapProcs = 0;
try {
    execFileSync('bwrap', ['--version'], { stdio: 'ignore' });
    const bwraps = [];
    for (let i = 0; i < SESSIONS; ++i) {
        const binds = ['/usr', '/bin', '/lib', '/lib64', '/etc'].filter((p) => fs.existsSync(p)).flatMap((p) => ['--ro-bind', p, p]);
        bwraps.push(spawn('bwrap', [...binds, '--bind', tenants[0].entry.workspace_root, '/workspace', '--tmpfs', '/tmp',
            '--proc', '/proc', '--dev', '/dev', '--unshare-all', '--die-with-parent', '--', 'sleep', '600'], { stdio: 'ignore' }));
    }
    await sleep(1000 + SESSIONS * 5);
    const procs = bwraps.flatMap((b) => [b.pid, ...descendants(b.pid)]);
    bwrapProcs = procs.length;
    bwrapPss = procs.reduce((sum, p) => sum + pssKiB(p), 0);
    for (const b of bwraps) b.kill('SIGKILL');
    await sleep(500);
} catch (e) {
    console.error(`bwrap anchor skipped: ${e.message}`);
}

// ---- 2. the loop over HTTP, 3. the same over stdio -----------------------------------------------

// A tenant's session sees its workspace at /workspace (docs/http.md, "Neutral paths").
const workspaceOfHttp = () => '/workspace';
const http = newStats();
const httpCpu0 = [treeCpu([server.pid]), clientCpu()];
await loop(sessions, Date.now() + DURATION, workspaceOfHttp, http);
const httpCpu = [treeCpu([server.pid]) - httpCpu0[0], clientCpu() - httpCpu0[1]];
const rssLoaded = rssKiB(server.pid);

const stdioSessions = [];
for (let i = 0; i < SESSIONS; ++i) {
    const s = new StdioSession(tenants[i % 2].entry.workspace_root);
    await s.open();
    stdioSessions.push(s);
}
const stdio = newStats();
const stdioPids = stdioSessions.map((s) => s.proc.pid);
const stdioCpu0 = [treeCpu(stdioPids), clientCpu()];
await loop(stdioSessions, Date.now() + DURATION, (s) => s.workspace, stdio);
const stdioCpu = [treeCpu(stdioPids) - stdioCpu0[0], clientCpu() - stdioCpu0[1]];
for (const s of stdioSessions) s.close();
await sleep(500);

// ---- 4. the same HTTP loop while a third tenant floods ------------------------------------------

const flooders = [];
for (let i = 0; i < FLOOD_SESSIONS; ++i) {
    const s = new HttpSession(tenants[2]);
    await s.open();
    flooders.push(s);
}
const flooded = newStats();
const flood = newStats();
const until = Date.now() + DURATION;
await Promise.all([
    loop(sessions, until, workspaceOfHttp, flooded),
    loop(flooders, until, workspaceOfHttp, flood, FLOOD_LOOPS),
]);

server.kill('SIGTERM');
const serverExit = await new Promise((r) => server.on('exit', (code, signal) => r({ code, signal })));
fs.rmSync(dir, { recursive: true, force: true });

// ---- report ----------------------------------------------------------------------------------------

const verdict = (ok) => (ok ? 'met' : '**MISS**');
const rows = [];
for (const tool of ['read', 'bash']) {
    const [h50, h99, s50, s99] = [percentile(http[tool], 50), percentile(http[tool], 99), percentile(stdio[tool], 50), percentile(stdio[tool], 99)];
    rows.push(`| \`${tool}\`, ${SESSIONS} sessions at once | ${ms(h50)} (${ms(h99)}) | ${ms(s50)} (${ms(s99)}) | ${(h50 / s50).toFixed(2)} (${(h99 / s99).toFixed(2)}) | p50 ≤ 1.3: ${verdict(h50 / s50 <= 1.3)} |`);
}
const runP50 = percentile(runTimes, 50);
const createP50 = percentile(createTimes, 50);
rows.push(`| session creation (initialize, its sandbox started) vs one \`stockade run -- true\`, alternating | ${ms(createP50)} (${ms(percentile(createTimes, 99))}) | ${ms(runP50)} (${ms(percentile(runTimes, 99))}) | ${(createP50 / runP50).toFixed(2)} | ≤ 1.5: ${verdict(createP50 / runP50 <= 1.5)} |`);
for (const tool of ['read', 'bash']) {
    const [a, b] = [percentile(flooded[tool], 99), percentile(http[tool], 99)];
    rows.push(`| \`${tool}\` p99 of alpha and beta while gamma floods (${FLOOD_SESSIONS}×${FLOOD_LOOPS} loops) vs without | ${ms(a)} | ${ms(b)} | ${(a / b).toFixed(2)} | ≤ 2: ${verdict(a / b <= 2)} |`);
}
const perSession = (rssIdle - rssBefore) / SESSIONS / 1024;
console.log(`stockade serve --http: ${SESSIONS} sessions (tenants alpha and beta), ${DURATION / 1000} s per phase, ${ROOT ? 'as root' : 'unprivileged'}, client ${CLIENT === 'fetch' ? "Node's fetch" : 'node:http (keep-alive)'}`);
console.log('');
console.log('| figure | HTTP p50 (p99), ms | anchor p50 (p99), ms | ratio | target |');
console.log('|---|---|---|---|---|');
for (const r of rows) console.log(r);
console.log('');
console.log(`supervisor RSS: ${(rssBefore / 1024).toFixed(1)} MiB before, ${(rssIdle / 1024).toFixed(1)} MiB with ${SESSIONS} idle sessions = ${perSession.toFixed(2)} MiB per session (target ≤ 2: ${verdict(perSession <= 2)}); ${(rssLoaded / 1024).toFixed(1)} MiB after the load`);
console.log(`their sandboxes: ${workers.length} processes, ${(workerRss / 1024 / SESSIONS).toFixed(2)} MiB RSS per session`);
const perSessionPss = (workerPss + (pssIdle - pssBefore)) / SESSIONS / 1024;
console.log(`memory per idle session (its sandbox's PSS plus the supervisor's PSS growth, / ${SESSIONS}): ${perSessionPss.toFixed(2)} MiB (target ≤ 1.5: ${verdict(perSessionPss <= 1.5)}); `
    + `the supervisor's share ${((pssIdle - pssBefore) / SESSIONS / 1024).toFixed(2)}; bwrap running sleep: ${(bwrapPss / SESSIONS / 1024).toFixed(2)} MiB per sandbox (${bwrapProcs} processes)`);
console.log(`calls: HTTP ${answered(http)}/${http.sent} answered, ${http.errors} errors; stdio ${answered(stdio)}/${stdio.sent}, ${stdio.errors} errors; flooded phase ${answered(flooded)}/${flooded.sent}, ${flooded.errors} errors; the flood ${answered(flood)}/${flood.sent}, ${flood.errors} errors`);
const perCall = (cpu, stats) => cpu.map((c) => (c / answered(stats) * 1e6).toFixed(0));
const [hs, hc] = perCall(httpCpu, http);
const [ss, sc] = perCall(stdioCpu, stdio);
console.log(`CPU per call: HTTP ${hs} µs in the server (and its sandboxes), ${hc} µs in the client; stdio ${ss} µs in the servers, ${sc} µs in the client`);
console.log(`throughput: HTTP ${(answered(http) / (DURATION / 1000)).toFixed(0)} calls/s, stdio ${(answered(stdio) / (DURATION / 1000)).toFixed(0)} calls/s`);

if (args.check) {
    const failures = [];
    for (const [name, stats] of [['HTTP', http], ['stdio', stdio], ['flooded', flooded], ['the flood', flood]]) {
        if (stats.errors > 0) failures.push(`${name}: ${stats.errors} calls failed`);
        if (answered(stats) + stats.errors !== stats.sent) failures.push(`${name}: ${stats.sent - answered(stats) - stats.errors} calls got no answer`);
        if (stats.sent === 0) failures.push(`${name}: no call was made`);
    }
    if (createTimes.length !== SESSIONS) failures.push(`${createTimes.length} of ${SESSIONS} sessions opened`);
    if (serverExit.code !== 0) failures.push(`serve exited with ${JSON.stringify(serverExit)} after SIGTERM`);
    for (const f of failures) console.error(`FAIL: ${f}`);
    if (failures.length > 0) console.error(serverLog.slice(-4000));
    process.exit(failures.length > 0 ? 1 : 0);
}
