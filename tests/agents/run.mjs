// Runs one real agent CLI against `stockade serve`, the scripted model and the fake package
// registries, and checks what the model received.
//   node tests/agents/run.mjs <client>     (see run_agent.sh for the netns)
//
// Environment: STOCKADE_BIN (the stockade binary, required), AGENT_TIMEOUT_S (default 240),
// AGENT_KEEP=1 keeps the temporary directory for a look afterwards.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { startModelServer } from './lib/model_server.mjs';
import { checkWorkspace, PROMPT, REGISTRY_CA, scenario, writeFixture } from './lib/scenario.mjs';
import { pinSettings, startUpstreams } from './lib/upstreams.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const clientName = process.argv[2];
assert.ok(clientName, 'usage: node run.mjs <client>');
assert.ok(process.env.STOCKADE_BIN, 'set STOCKADE_BIN to the stockade binary');

const client = (await import(path.join(here, 'clients', `${clientName}.mjs`))).default;
const wire = (await import(path.join(here, 'wire', `${client.wire}.mjs`))).default;

const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), `stockade-agent-${clientName}-`)));
const workspace = path.join(base, 'project');
const home = path.join(base, 'home');
const binDir = path.join(base, 'bin');
for (const d of [workspace, home, binDir]) fs.mkdirSync(d, { recursive: true });
fs.symlinkSync(path.resolve(process.env.STOCKADE_BIN), path.join(binDir, 'stockade'));
writeFixture(workspace);

// The registries for the install step, on 127.0.0.1, and the user's Stockade settings that pin
// their names there: the recipes' `--allow-preset registries` then reaches them, not the internet
// (which this network namespace has no route to anyway).
const upstreams = await startUpstreams(path.join(base, 'upstreams'));
fs.copyFileSync(upstreams.ca, path.join(workspace, REGISTRY_CA));
fs.mkdirSync(path.join(home, '.config', 'stockade'), { recursive: true });
fs.writeFileSync(path.join(home, '.config', 'stockade', 'settings.json'),
    JSON.stringify(pinSettings(upstreams), null, 2) + '\n');

const steps = scenario(workspace);
const model = await startModelServer({
    wires: [wire],
    scenario: steps,
    resolveName: client.toolName,
});

const recipe = path.join(here, 'recipes', clientName);
const cliBin = path.join(here, 'node_modules', '.bin');
const setup = await client.setup({ workspace, home, modelUrl: model.url, recipe, cliBin, base, prompt: PROMPT });
const env = {
    PATH: `${binDir}:${cliBin}:${process.env.PATH}`,
    HOME: home,
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    NO_COLOR: '1',
    STOCKADE_STATE_DIR: path.join(base, 'state'),
    ...setup.env,
};

const timeoutS = Number(process.env.AGENT_TIMEOUT_S ?? 240);
const started = Date.now();
const out = fs.openSync(path.join(base, 'cli.stdout'), 'w');
const err = fs.openSync(path.join(base, 'cli.stderr'), 'w');
const child = spawn(setup.argv[0], setup.argv.slice(1), {
    cwd: setup.cwd ?? workspace, env, stdio: [setup.stdin ? 'pipe' : 'ignore', out, err], detached: true,
});
if (setup.stdin) child.stdin.end(setup.stdin);
let timedOut = false;
const timer = setTimeout(() => { timedOut = true; process.kill(-child.pid, 'SIGKILL'); }, timeoutS * 1000);
const [code, signal] = await new Promise((resolve) => child.on('exit', (c, s) => resolve([c, s])));
clearTimeout(timer);
try { process.kill(-child.pid, 'SIGKILL'); } catch { /* the group is gone */ }
await model.close();
await upstreams.close();
const seconds = ((Date.now() - started) / 1000).toFixed(1);

// ---- report and checks ----------------------------------------------------------------------
const failures = [];
const t = model.transcript;
console.log(`${clientName}: exit ${code ?? signal} after ${seconds} s; ${t.requests.length} model requests ` +
    `(${t.sideRequests} side requests); offered tools: ${(t.offered ?? []).join(', ')}`);
if (timedOut) failures.push(`the CLI did not finish within ${timeoutS} s`);
if (code !== 0 && !client.nonZeroExitOk) failures.push(`the CLI exited with ${code ?? signal}`);
failures.push(...t.errors);
for (const b of client.builtinTools ?? []) {
    if ((t.offered ?? []).includes(b)) failures.push(`the CLI's own tool "${b}" is still offered to the model`);
}
steps.forEach((s, i) => {
    const got = t.steps[i];
    const text = got?.result?.text;
    const p = got?.result ? s.expect(text) : ['the model never received a result for this step'];
    console.log(`\n--- step ${i + 1}: ${s.name} → ${got?.called ?? '(not called)'} ${p.length ? 'FAIL' : 'ok'}`);
    if (got?.arguments) console.log(`arguments: ${JSON.stringify(got.arguments)}`);
    if (typeof text === 'string') console.log(text.length > 1200 ? `${text.slice(0, 800)}\n[…]\n${text.slice(-300)}` : text);
    for (const x of p) failures.push(`step ${i + 1} (${s.name}): ${x}`);
});
failures.push(...checkWorkspace(workspace));
// The packages came from the pinned registries, over TLS, under their own names.
const requests = upstreams.requests();
for (const [host, file] of [['registry.npmjs.org', '/tinypkg/-/tinypkg-1.0.0.tgz'],
    ['files.pythonhosted.org', '/packages/tinypkg-1.0.0-py3-none-any.whl']]) {
    if (!requests.includes(`https host=${host} 'GET ${file} HTTP/1.1' 200`)) {
        failures.push(`https://${host}${file} was never served`);
    }
}

if (failures.length) {
    console.log(`\n${clientName}: ${failures.length} problem(s):\n- ${failures.join('\n- ')}`);
    const tail = (f) => fs.readFileSync(path.join(base, f), 'utf8').split('\n').slice(-40).join('\n');
    console.log(`\n--- CLI stdout (tail)\n${tail('cli.stdout')}\n--- CLI stderr (tail)\n${tail('cli.stderr')}`);
    console.log(`--- registry requests (tail)\n${tail('upstreams/requests.log')}`);
    console.log(`\n(kept ${base})`);
    process.exit(1);
}
console.log(`\n${clientName}: every step reached the model as text (${steps.length} steps, ${seconds} s)`);
if (process.env.AGENT_KEEP !== '1') fs.rmSync(base, { recursive: true, force: true });
else console.log(`(kept ${base})`);
