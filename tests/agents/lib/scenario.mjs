// A day's work in miniature: what the scripted model asks the agent to do with Stockade's tools,
// and what the model must receive back for each call. The same scenario runs in every CLI.
//
// A step is {name, tool, arguments, expect}: `tool` is Stockade's tool name (the model server
// maps it to the name the CLI offers), `arguments` an object or a function of the texts of the
// results so far, and `expect(text)` returns a list of problems with the text the model got.
import fs from 'node:fs';
import path from 'node:path';

export const SECRET = 'stockade-agent-test-secret-7f3a';
// What the CLI is asked; the scripted model then calls the steps below whatever it says.
export const PROMPT = 'Make the greeting in src/app.py end with an exclamation mark, then note it in notes/summary.md.';
export const HTTP_PORT = 8765;
// The registries' test CA (lib/upstreams.mjs), which run.mjs puts in the project: the sandbox
// sees the workspace, not the suite's temporary directory.
export const REGISTRY_CA = 'registry-ca.pem';

// The project the agent works on, written before the CLI starts.
export const fixture = {
    'src/app.py': [
        'import json',
        '',
        '',
        'def greet(name):',
        '    message = "Hello, " + name',
        '    return message',
        '',
        '',
        'def main():',
        '    print(json.dumps({"greeting": greet("world")}))',
        '',
        '',
        'if __name__ == "__main__":',
        '    main()',
        '',
    ].join('\n'),
    'src/util.py': 'def add(a, b):\n    return a + b\n',
    'README.md': '# demo\n\nA tiny project for the agent suite.\n',
    // What `npm install` adds the dependency to (without one npm looks for a project upward).
    'package.json': JSON.stringify({ name: 'demo', version: '1.0.0', private: true }, null, 2) + '\n',
    'secrets/token.txt': `${SECRET}\n`,
    // The project's own policy layer: the denied read of the scenario.
    '.stockade/settings.json': JSON.stringify({ permissions: { deny: ['Read(./secrets/**)'] } }, null, 2) + '\n',
};

export function writeFixture(workspace) {
    for (const [rel, content] of Object.entries(fixture)) {
        const file = path.join(workspace, rel);
        fs.mkdirSync(path.dirname(file), { recursive: true });
        fs.writeFileSync(file, content);
    }
}

const METADATA = /"(duration_ms|title|first_line|exit_code|truncation)"\s*:/;

function problems(text, { has = [], lacks = [] }) {
    const out = [];
    if (typeof text !== 'string') return [`no text reached the model (got ${typeof text})`];
    for (const h of has) {
        if (h instanceof RegExp ? !h.test(text) : !text.includes(h)) out.push(`expected ${h} in the text`);
    }
    for (const l of [...lacks, METADATA, SECRET]) {
        if (l instanceof RegExp ? l.test(text) : text.includes(l)) out.push(`unexpected ${l} in the text`);
    }
    return out;
}

function spillPath(texts) {
    const m = /Full output: (\S+?) —/.exec(texts[texts.length - 1] ?? '');
    return m ? m[1] : '/nonexistent-spill-path';
}

function processId(texts) {
    for (const t of texts) {
        const m = /Started (p\d+)/.exec(t);
        if (m) return m[1];
    }
    return 'p1';
}

export function scenario(workspace) {
    const ws = (rel) => path.join(workspace, rel);
    return [
        {
            name: 'read',
            tool: 'read',
            arguments: { file_path: ws('src/app.py') },
            expect: (t) => problems(t, { has: ['1→import json', 'def greet(name):', '14→    main()'] }),
        },
        {
            // Quoted at depth 0 while the file has it at depth 4: a whitespace-tolerant match
            // that must keep the file's indentation.
            name: 'edit (fuzzy indentation)',
            tool: 'edit',
            arguments: {
                file_path: ws('src/app.py'),
                old_string: 'message = "Hello, " + name\nreturn message',
                new_string: 'message = "Hello, " + name + "!"\nreturn message',
            },
            expect: (t) => problems(t, { has: ['Edited', '    message = "Hello, " + name + "!"'] }),
        },
        {
            name: 'grep',
            tool: 'grep',
            arguments: { pattern: 'def \\w+\\(', include: '*.py' },
            expect: (t) => problems(t, { has: ['src/app.py', 'def greet(name):', 'src/util.py'] }),
        },
        {
            name: 'glob',
            tool: 'glob',
            arguments: { pattern: '**/*.py' },
            expect: (t) => problems(t, { has: ['src/app.py', 'src/util.py'] }),
        },
        {
            name: 'process start (loopback server)',
            tool: 'process',
            arguments: { action: 'start', command: `python3 -m http.server ${HTTP_PORT} --bind 127.0.0.1` },
            expect: (t) => problems(t, { has: [/Started p\d+/] }),
        },
        {
            name: 'bash curl 127.0.0.1',
            tool: 'bash',
            arguments: {
                command: `for i in $(seq 50); do curl -sS http://127.0.0.1:${HTTP_PORT}/src/util.py && break; sleep 0.2; done`,
            },
            expect: (t) => problems(t, { has: ['def add(a, b):', 'exit code 0'] }),
        },
        {
            // The recipes' `--network allowlist --allow-preset registries` at work: npm install
            // and pip install from registry.npmjs.org and pypi.org (the user's settings pin them
            // to lib/upstreams.mjs), then the installed packages run. The command names the test
            // CA itself, as the recipe cannot.
            name: 'bash install from npm and PyPI',
            tool: 'bash',
            arguments: {
                command: [
                    `npm_config_cafile=${ws(REGISTRY_CA)} npm install --no-audit --no-fund --loglevel=error tinypkg`,
                    `node -p '"npm: tinypkg says " + require("tinypkg")'`,
                    `PIP_CERT=${ws(REGISTRY_CA)} python3 -m pip install --disable-pip-version-check --no-input ` +
                        '--target pydeps --index-url https://pypi.org/simple tinypkg',
                    `PYTHONPATH=pydeps python3 -c 'import tinypkg; print("PyPI: tinypkg says", tinypkg.VALUE)'`,
                ].join(' && '),
            },
            expect: (t) => problems(t, {
                has: ['npm: tinypkg says 42', 'Successfully installed tinypkg-1.0.0', 'PyPI: tinypkg says 42',
                    'exit code 0'],
                lacks: ['network: refused'],
            }),
        },
        {
            name: 'read (denied)',
            tool: 'read',
            arguments: { file_path: ws('secrets/token.txt') },
            expect: (t) => problems(t, { has: [/denied/i, 'Read(./secrets/**)'] }),
        },
        {
            name: 'bash (big output)',
            tool: 'bash',
            arguments: { command: 'seq 1 200000' },
            expect: (t) => problems(t, { has: ['lines omitted', /Full output: \/\S+ —/, '200000'] }),
        },
        {
            name: 'read the spilled output',
            tool: 'read',
            arguments: (texts) => ({ file_path: spillPath(texts), offset: 100000, limit: 3 }),
            expect: (t) => problems(t, { has: ['100000→100000'] }),
        },
        {
            name: 'write',
            tool: 'write',
            arguments: { file_path: ws('notes/summary.md'), content: '# Summary\n\nGreeting now ends with "!".\n' },
            expect: (t) => problems(t, { has: ['Wrote', 'notes/summary.md'] }),
        },
        {
            name: 'process stop',
            tool: 'process',
            arguments: (texts) => ({ action: 'stop', id: processId(texts) }),
            expect: (t) => problems(t, { has: [/Stopped p\d+/], lacks: ['null'] }),
        },
    ];
}

// What must hold on disk once the CLI is done.
export function checkWorkspace(workspace) {
    const out = [];
    const app = fs.readFileSync(path.join(workspace, 'src/app.py'), 'utf8');
    if (!app.includes('\n    message = "Hello, " + name + "!"\n    return message\n')) {
        out.push(`src/app.py does not hold the edit at the file's indentation:\n${app}`);
    }
    const summary = path.join(workspace, 'notes/summary.md');
    if (!fs.existsSync(summary) || !fs.readFileSync(summary, 'utf8').startsWith('# Summary')) {
        out.push('notes/summary.md was not written');
    }
    // The installs landed in the project, as a dependency of it.
    const pkg = JSON.parse(fs.readFileSync(path.join(workspace, 'package.json'), 'utf8'));
    if (!pkg.dependencies?.tinypkg) out.push(`package.json does not list tinypkg: ${JSON.stringify(pkg)}`);
    for (const f of ['node_modules/tinypkg/index.js', 'pydeps/tinypkg/__init__.py']) {
        if (!fs.existsSync(path.join(workspace, f))) out.push(`${f} was not installed`);
    }
    return out;
}
