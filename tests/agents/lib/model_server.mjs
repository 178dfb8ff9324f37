// The scripted model: an HTTP server on 127.0.0.1 that plays the model for a real agent CLI.
//
// Each request the CLI sends carries the whole conversation so far. A wire adapter
// (tests/agents/wire/<api>.mjs) decodes it into the tool names offered to the model and the tool
// results the CLI handed back; the server answers with the next step of the scenario (a call of
// one of Stockade's tools) or, once every step has its result, with a final text. Step i is
// answered when the conversation holds i tool results, so the server keeps no conversation state
// of its own and a CLI that retries a request gets the same answer again.
//
// Wire adapter (export default):
//   name                                  e.g. 'anthropic-messages'
//   matches(method, pathname) -> bool     does this adapter serve the request?
//   decode(body, {pathname, headers, query}) -> {
//       scripted: bool,   // false: a side request (title, summary, quota check): answered with
//                         //        a short text, never counted as a step
//       tools: [string],  // the tool names offered to the model
//       results: [{id, name, text, isError}],  // tool results in the conversation, in order;
//                         // text is exactly what the model reads (raw JSON stays raw JSON)
//       stream: bool }
//   respond(res, turn, decoded, {pathname, query})
//       turn: {type: 'tool', id, name, arguments} | {type: 'text', text}
//   side(req, res, body, {pathname, query}) -> bool   optional: answers endpoints that are not a
//       conversation (model lists, token counting); true when it answered
//
// Everything is recorded in `transcript` for the test's assertions.
import http from 'node:http';

export function toolNameFor(offered, tool) {
    // MCP tools reach the model under a client-specific name: mcp__stockade__read (Claude Code),
    // stockade_read (OpenCode), read or stockade__read (Gemini CLI)... Prefer a name that says
    // "stockade"; never take a built-in that merely ends with the same word.
    const suffixed = offered.filter((n) => n === tool || n.endsWith(`__${tool}`) ||
        n.endsWith(`_${tool}`) || n.endsWith(`.${tool}`) || n.endsWith(`-${tool}`));
    return suffixed.find((n) => /stockade/i.test(n)) ?? suffixed.find((n) => n === tool);
}

export async function startModelServer({ wires, scenario, resolveName = toolNameFor, finalText = 'All steps are done.' }) {
    const transcript = { requests: [], steps: [], offered: null, errors: [], sideRequests: 0 };
    const server = http.createServer(async (req, res) => {
        const url = new URL(req.url, 'http://127.0.0.1');
        const chunks = [];
        for await (const c of req) chunks.push(c);
        const raw = Buffer.concat(chunks).toString('utf8');
        let body = null;
        try { body = raw ? JSON.parse(raw) : null; } catch { body = null; }
        const ctx = { pathname: url.pathname, query: url.searchParams, headers: req.headers };
        transcript.requests.push({ method: req.method, path: url.pathname });
        try {
            for (const wire of wires) {
                if (wire.side && wire.side(req, res, body, ctx)) return;
            }
            const wire = wires.find((w) => w.matches(req.method, url.pathname));
            if (!wire) {
                res.writeHead(404, { 'content-type': 'application/json' });
                res.end(JSON.stringify({ error: { message: `scripted model: no route ${req.method} ${url.pathname}` } }));
                return;
            }
            const decoded = wire.decode(body, ctx);
            if (!decoded.scripted) {
                transcript.sideRequests++;
                wire.respond(res, { type: 'text', text: 'OK' }, decoded, ctx);
                return;
            }
            transcript.offered = decoded.tools;
            const step = decoded.results.length;
            // Every result so far, attributed to the step that asked for it.
            decoded.results.forEach((r, i) => {
                transcript.steps[i] = { ...(transcript.steps[i] ?? {}), step: scenario[i]?.name, result: r };
            });
            if (step >= scenario.length) {
                wire.respond(res, { type: 'text', text: finalText }, decoded, ctx);
                return;
            }
            const s = scenario[step];
            const name = resolveName(decoded.tools, s.tool);
            if (!name) {
                transcript.errors.push(`step ${s.name}: no offered tool for "${s.tool}" among ${decoded.tools.join(', ')}`);
                wire.respond(res, { type: 'text', text: `I cannot find the ${s.tool} tool.` }, decoded, ctx);
                return;
            }
            const args = typeof s.arguments === 'function'
                ? s.arguments(decoded.results.map((r) => r.text)) : s.arguments;
            transcript.steps[step] = { step: s.name, called: name, arguments: args };
            wire.respond(res, { type: 'tool', id: `call_${step + 1}_${s.tool}`, name, arguments: args }, decoded, ctx);
        } catch (e) {
            transcript.errors.push(`${req.method} ${url.pathname}: ${e.stack ?? e}`);
            if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ error: { message: String(e) } }));
        }
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address();
    return {
        port,
        url: `http://127.0.0.1:${port}`,
        transcript,
        close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(resolve); }),
    };
}

// Server-sent events: one `event:` (optional) and one `data:` line per event.
export function sse(res, events) {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    for (const e of events) {
        if (e.event) res.write(`event: ${e.event}\n`);
        res.write(`data: ${typeof e.data === 'string' ? e.data : JSON.stringify(e.data)}\n\n`);
    }
    res.end();
}

export function json(res, status, value) {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(value));
}
