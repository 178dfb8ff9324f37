// The scripted model of the CI recipes test (tests/ci/run_ci_recipes.py): the agents suite's
// model server and Anthropic wire (tests/agents/lib/, tests/agents/wire/, imported as they are),
// with a scenario of its own: the model makes Claude Code call Stockade's bash tool three times,
// to write a file in the workspace, to print the sandbox's environment (which must not hold the
// API key) and to reach a host that no rule allows (refused in ci mode).
//
//   FAKE_SECRET=KEY EXPECTED_TASK=TEXT node ci_model.mjs REPORT.json
//
// Prints {"url": "http://127.0.0.1:PORT"} on one line of stdout once it listens; when its stdin
// is closed it writes REPORT.json ({problems, steps, requests, apiKeys, note}) and exits. A
// problem is a step whose result the model never got or did not read as expected, a request
// whose API key is not FAKE_SECRET (the CI secret store's), a conversation without the task, one
// of Claude Code's own tools offered to the model, or an error of the server itself.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const { startModelServer } = await import(path.join(here, '..', 'agents', 'lib', 'model_server.mjs'));
const anthropic = (await import(path.join(here, '..', 'agents', 'wire', 'anthropic-messages.mjs'))).default;

const reportPath = process.argv[2];
if (!reportPath) {
    console.error('usage: node ci_model.mjs REPORT.json');
    process.exit(2);
}
const expectedKey = process.env.FAKE_SECRET;
const task = process.env.EXPECTED_TASK;
if (!expectedKey || !task) {
    console.error('ci_model.mjs: set FAKE_SECRET (the API key of the CI secret store) and EXPECTED_TASK');
    process.exit(2);
}
// Claude Code's own tools, which `--tools ""` must keep from the model (the agents suite's list).
const { builtinTools } = (await import(path.join(here, '..', 'agents', 'clients', 'claude.mjs'))).default;

// What the file-writing call writes; run_ci_recipes.py checks the file on disk.
const NOTE_TEXT = 'written by the agent under stockade serve --mode ci';

function problems(text, has, lacks = []) {
    if (typeof text !== 'string') return [`no text reached the model (got ${typeof text})`];
    return [
        ...has.filter((h) => (h instanceof RegExp ? !h.test(text) : !text.includes(h)))
            .map((h) => `expected ${h} in the text the model got`),
        ...lacks.filter((l) => text.includes(l)).map((l) => `unexpected ${l} in the text the model got`),
    ];
}

const scenario = [
    {
        name: 'bash: write a file',
        tool: 'bash',
        arguments: { command: `mkdir -p notes && echo '${NOTE_TEXT}' > notes/ci.txt && cat notes/ci.txt` },
        expect: (t) => problems(t, [NOTE_TEXT, 'exit code 0']),
    },
    {
        // The API key is Claude Code's, in the runner's environment: the sandbox gets no
        // variable that --env does not name.
        name: 'bash: the environment of the sandbox',
        tool: 'bash',
        arguments: { command: 'env | sort' },
        expect: (t) => problems(t, ['PATH=', 'exit code 0'], [expectedKey, 'ANTHROPIC_']),
    },
    {
        // --mode ci with --network allowlist: a host no rule allows is refused by the proxy, at
        // connect time, without a question (nobody to ask). The proxy decides on the name before
        // it resolves anything, and the test runs in a network namespace with only loopback.
        name: 'bash: a host outside the allowlist',
        tool: 'bash',
        arguments: { command: 'curl -sS --max-time 10 https://example.com/' },
        expect: (t) => problems(t, ['network: refused 1 connection to example.com:443', 'not in the allowlist']),
    },
];

// The wire as it is, plus a look at the key each conversation request carries and at the task
// it was given.
const apiKeys = new Set();
let taskSeen = false;
const wire = {
    ...anthropic,
    decode(body, ctx) {
        const decoded = anthropic.decode(body, ctx);
        if (decoded.scripted) {
            apiKeys.add(String(ctx?.headers?.['x-api-key'] ?? ctx?.headers?.authorization ?? '(none)'));
            taskSeen ||= JSON.stringify(body?.messages ?? []).includes(task);
        }
        return decoded;
    },
};

const model = await startModelServer({ wires: [wire], scenario });
process.stdout.write(`${JSON.stringify({ url: model.url })}\n`);

process.stdin.resume();
await new Promise((resolve) => process.stdin.on('end', resolve));
await model.close();

const t = model.transcript;
const report = {
    problems: [...t.errors], steps: [], requests: t.requests.length, apiKeys: [...apiKeys], note: NOTE_TEXT,
};
scenario.forEach((s, i) => {
    const got = t.steps[i];
    const text = got?.result?.text;
    const p = got?.result ? s.expect(text) : ['the model never received a result for this step'];
    report.steps.push({ name: s.name, called: got?.called ?? null, text: text ?? null, problems: p });
    for (const x of p) report.problems.push(`step ${i + 1} (${s.name}): ${x}`);
});
if (apiKeys.size === 0) report.problems.push('the model got no conversation request');
else if (!taskSeen) report.problems.push(`the conversation does not hold the task ${JSON.stringify(task)}`);
for (const b of builtinTools) {
    if ((t.offered ?? []).includes(b)) report.problems.push(`Claude Code's own tool "${b}" was offered to the model`);
}
for (const k of apiKeys) {
    if (k !== expectedKey) report.problems.push(`a request carried the API key ${JSON.stringify(k)}, not the secret's`);
}
fs.writeFileSync(reportPath, `${JSON.stringify(report, null, 2)}\n`);
process.exit(0);
