// The package registries the agents' installs reach: tests/network/upstreams.py, the fake
// internet of the network tests (HTTPS with a CA of its own, on 127.0.0.1 in the suite's network
// namespace), serving a `tinypkg` on registry.npmjs.org and on pypi.org/files.pythonhosted.org.
//
// The recipes start `stockade serve --network allowlist --allow-preset registries` as a user
// types it; what sends those names to 127.0.0.1 is the user's own settings file, which the suite
// writes into its temporary HOME (sandbox.network.resolve, see pinSettings). The CA is not the
// recipe's business either: the scripted command trusts it itself (npm_config_cafile, PIP_CERT).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const SCRIPT = path.join(here, '..', '..', 'network', 'upstreams.py');

// The preset's names that upstreams.py serves (and has in its certificate).
export const REGISTRY_NAMES = [
    'registry.npmjs.org', 'pypi.org', 'files.pythonhosted.org', 'github.com', 'codeload.github.com',
];

// Starts the server in `dir` and waits until it listens (~0.2 s). Its request log (--verbose:
// one line per request, with the Host it was sent to) goes to dir/requests.log.
export async function startUpstreams(dir) {
    fs.mkdirSync(dir, { recursive: true });
    const log = path.join(dir, 'requests.log');
    const logFd = fs.openSync(log, 'w');
    // /usr/bin/python3, as tests/testing/upstreams.cc: the script is written for Debian's (stdlib
    // only), whatever python3 comes first on PATH. --die-with-parent: it ends with run.mjs, even
    // one that fails half-way.
    const child = spawn('/usr/bin/python3', [SCRIPT, '--dir', dir, '--verbose', '--die-with-parent'], {
        stdio: ['ignore', 'ignore', logFd],
    });
    fs.closeSync(logFd);
    let exited = null;
    child.on('exit', (code, signal) => { exited = code ?? signal; });
    const state = path.join(dir, 'upstreams.json');
    const deadline = Date.now() + 60_000;
    while (!fs.existsSync(state)) {
        if (exited !== null || Date.now() > deadline) {
            try { child.kill('SIGKILL'); } catch { /* gone */ }
            const why = exited !== null ? `exited with ${exited}` : 'did not listen within 60 s';
            throw new Error(`tests/network/upstreams.py ${why}:\n${fs.readFileSync(log, 'utf8')}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const info = JSON.parse(fs.readFileSync(state, 'utf8'));
    return {
        httpsPort: info.https_port,
        ca: info.ca,
        requests: () => fs.readFileSync(log, 'utf8'),
        close: () => new Promise((resolve) => {
            if (exited !== null) return resolve();
            const kill = setTimeout(() => child.kill('SIGKILL'), 2000);
            child.once('exit', () => { clearTimeout(kill); resolve(); });
            child.kill('SIGTERM');
        }),
    };
}

// The user's settings (~/.config/stockade/settings.json) that pin the registries to the server:
// HTTPS only, the preset's port for them.
export function pinSettings(upstreams, names = REGISTRY_NAMES) {
    return {
        sandbox: {
            network: { resolve: names.map((n) => `${n}:443=127.0.0.1:${upstreams.httpsPort}`) },
        },
    };
}
