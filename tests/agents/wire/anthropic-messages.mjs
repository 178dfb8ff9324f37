// Wire adapter: Anthropic's Messages API, as Claude Code speaks it (interface: lib/model_server.mjs).
//
// The conversation arrives as POST /v1/messages (Claude Code adds ?beta=true) with the whole
// history in `messages`; the tools offered to the model are `tools[].name`, and each tool result
// the CLI hands back is a `tool_result` block in a user message: {tool_use_id, content, is_error},
// content either a string or an array of blocks ({type: 'text', text} ...). The reply is one
// assistant message, streamed as server-sent events when the request says `stream: true`
// (message_start, content_block_start / _delta / _stop per block, message_delta with the
// stop_reason, message_stop), else a single JSON message.
//
// The agent loop is told apart from side requests by its tools: every agent-loop request offers
// some (with `--tools ""` still the MCP tools and a DeferredToolPlaceholder), while the small
// model's side requests (titles, topics, summaries) offer none.
//
// Side traffic answered here (side()): HEAD /api/hello (the CLI's connectivity check),
// POST /v1/messages/count_tokens and GET /v1/models. A POST /v1/messages that offers no tools is
// marked unscripted by decode(), and the server answers it with a short text.
import { json, sse } from '../lib/model_server.mjs';

const MESSAGES = '/v1/messages';

// The text the model reads for one tool_result block.
function resultText(content) {
    if (typeof content === 'string') return content;
    if (!Array.isArray(content)) return content == null ? '' : JSON.stringify(content);
    return content.map((b) => (b?.type === 'text' ? b.text : `[${b?.type ?? 'unknown'} block]`)).join('\n');
}

// Tools offered by name only (tool search): Claude Code lists them in a text of the conversation,
// "The following deferred tools are now available via ToolSearch. ...:\nName\nName\n\n".
function deferredTools(messages) {
    const names = [];
    for (const m of messages) {
        const texts = typeof m?.content === 'string' ? [m.content]
            : Array.isArray(m?.content) ? m.content.filter((b) => b?.type === 'text').map((b) => b.text) : [];
        for (const t of texts) {
            const at = t.indexOf('deferred tools are now available');
            if (at < 0) continue;
            const list = t.slice(t.indexOf(':\n', at) + 2).split('\n\n')[0];
            names.push(...list.split('\n').map((n) => n.trim()).filter((n) => /^[\w.-]+$/.test(n)));
        }
    }
    return names;
}

function usage(output) {
    return { input_tokens: 100, output_tokens: output, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
}

function block(turn) {
    return turn.type === 'tool'
        ? { type: 'tool_use', id: turn.id, name: turn.name, input: turn.arguments ?? {} }
        : { type: 'text', text: turn.text };
}

let counter = 0;

export default {
    name: 'anthropic-messages',

    matches(method, pathname) {
        return method === 'POST' && pathname === MESSAGES;
    },

    side(req, res, body, { pathname }) {
        if (pathname === '/api/hello') {
            res.writeHead(200, { 'content-type': 'application/json' });
            res.end(req.method === 'HEAD' ? undefined : '{}');
            return true;
        }
        if (req.method === 'POST' && pathname === `${MESSAGES}/count_tokens`) {
            json(res, 200, { input_tokens: Math.ceil(JSON.stringify(body ?? {}).length / 4) });
            return true;
        }
        if (req.method === 'GET' && pathname === '/v1/models') {
            json(res, 200, { data: [], has_more: false, first_id: null, last_id: null });
            return true;
        }
        return false;
    },

    decode(body) {
        const messages = Array.isArray(body?.messages) ? body.messages : [];
        const declared = (body?.tools ?? []).map((t) => t?.name).filter((n) => typeof n === 'string');
        // Every name the model is told about: the tools array and the deferred list.
        const tools = [...new Set([...declared, ...deferredTools(messages)])];
        const names = new Map();
        const results = [];
        for (const m of messages) {
            if (!Array.isArray(m?.content)) continue;
            for (const b of m.content) {
                if (m.role === 'assistant' && b?.type === 'tool_use') names.set(b.id, b.name);
                if (m.role === 'user' && b?.type === 'tool_result') {
                    results.push({
                        id: b.tool_use_id,
                        name: names.get(b.tool_use_id),
                        text: resultText(b.content),
                        isError: b.is_error === true,
                    });
                }
            }
        }
        return { scripted: declared.length > 0, tools, results, stream: body?.stream === true };
    },

    respond(res, turn, decoded) {
        const id = `msg_scripted_${++counter}`;
        const model = 'scripted-model';
        const content = block(turn);
        const stopReason = turn.type === 'tool' ? 'tool_use' : 'end_turn';
        if (!decoded.stream) {
            json(res, 200, {
                id, type: 'message', role: 'assistant', model, content: [content],
                stop_reason: stopReason, stop_sequence: null, usage: usage(10),
            });
            return;
        }
        const start = turn.type === 'tool' ? { ...content, input: {} } : { type: 'text', text: '' };
        const delta = turn.type === 'tool'
            ? { type: 'input_json_delta', partial_json: JSON.stringify(content.input) }
            : { type: 'text_delta', text: content.text };
        const ev = (event, data) => ({ event, data: { type: event, ...data } });
        sse(res, [
            ev('message_start', {
                message: {
                    id, type: 'message', role: 'assistant', model, content: [],
                    stop_reason: null, stop_sequence: null, usage: usage(1),
                },
            }),
            ev('content_block_start', { index: 0, content_block: start }),
            ev('content_block_delta', { index: 0, delta }),
            ev('content_block_stop', { index: 0 }),
            ev('message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: 10 } }),
            ev('message_stop', {}),
        ]);
    },
};
