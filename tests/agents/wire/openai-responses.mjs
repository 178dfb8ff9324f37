// Wire adapter: the OpenAI Responses API (POST {base_url}/responses, streamed as server-sent
// events), as the Codex CLI speaks it to a custom `[model_providers.X]` with wire_api = "responses".
//
// What Codex 0.171 sends (store = false, no previous_response_id): every request carries the whole
// conversation in `input` — developer/user `message`s, then for each tool step the model's
// `function_call` (or `custom_tool_call`, for apply_patch) and Codex's `function_call_output`
// (`custom_tool_call_output`) with the same call_id. `tools` holds plain `function` tools and
// `namespace` tools: an MCP server's tools are offered as {type: 'namespace', name:
// 'mcp__stockade', tools: [{type: 'function', name: 'read', ...}, ...]}, and the model calls one
// with {type: 'function_call', namespace: 'mcp__stockade', name: 'read'} (a flat name
// 'mcp__stockade__read' is refused: "unsupported call"). This adapter reports such a tool as
// 'mcp__stockade__read' and splits the name again when it answers.
//
// A tool result's `output` is either a string or a list of content items ({type: 'input_text',
// text} / {type: 'input_image', ...}); the text the model reads is the strings joined with "\n".
// Codex itself puts a "Wall time: N seconds\nOutput:" item first; it is kept, as the model reads it.
//
// Requests that are not the agent loop (compaction, reviews) carry a `request_kind` other than
// "turn" in the x-codex-turn-metadata header; they are side requests.

import { json, sse } from '../lib/model_server.mjs';

function turnMetadata(headers) {
    const raw = headers?.['x-codex-turn-metadata'];
    if (!raw) return null;
    try { return JSON.parse(raw); } catch { return null; }
}

function outputText(output) {
    if (typeof output === 'string') return output;
    if (Array.isArray(output)) {
        return output.map((c) => {
            if (typeof c === 'string') return c;
            if (c?.type === 'input_text' || c?.type === 'output_text' || c?.type === 'text') return c.text ?? '';
            if (c?.type === 'input_image') return '[image]';
            return JSON.stringify(c);
        }).join('\n');
    }
    return output == null ? output : JSON.stringify(output);
}

function flatName(namespace, name) {
    return namespace ? `${namespace}__${name}` : name;
}

let serial = 0;

export default {
    name: 'openai-responses',

    matches(method, pathname) {
        return method === 'POST' && /\/responses$/.test(pathname);
    },

    decode(body, { headers } = {}) {
        if (body === null || typeof body !== 'object') {
            const enc = headers?.['content-encoding'];
            throw new Error(`openai-responses: the request body is not JSON${enc ? ` (content-encoding ${enc})` : ''}`);
        }
        const meta = turnMetadata(headers);
        const kind = meta?.request_kind;
        const tools = [];
        const split = new Map(); // flat name -> {namespace, name}
        for (const t of body.tools ?? []) {
            if (t.type === 'namespace') {
                for (const sub of t.tools ?? []) {
                    const flat = flatName(t.name, sub.name);
                    tools.push(flat);
                    split.set(flat, { namespace: t.name, name: sub.name, type: sub.type });
                }
            } else if (t.name) {
                tools.push(t.name);
                split.set(t.name, { namespace: null, name: t.name, type: t.type });
            } else {
                tools.push(t.type); // web_search, tool_search, image_generation, local_shell...
            }
        }
        const calls = new Map();
        const results = [];
        for (const item of Array.isArray(body.input) ? body.input : []) {
            if (item.type === 'function_call' || item.type === 'custom_tool_call') {
                calls.set(item.call_id, flatName(item.namespace, item.name));
            } else if (item.type === 'function_call_output' || item.type === 'custom_tool_call_output') {
                results.push({
                    id: item.call_id,
                    name: calls.get(item.call_id) ?? null,
                    text: outputText(item.output),
                    isError: typeof item.success === 'boolean' ? !item.success : false,
                });
            }
        }
        return {
            scripted: kind === undefined || kind === 'turn',
            tools,
            results,
            stream: body.stream !== false,
            model: body.model,
            split,
        };
    },

    respond(res, turn, decoded) {
        const n = ++serial;
        const responseId = `resp_scripted_${n}`;
        const usage = {
            input_tokens: 100, input_tokens_details: { cached_tokens: 0 },
            output_tokens: 10, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 110,
        };
        let item;
        const events = [];
        if (turn.type === 'tool') {
            const target = decoded.split?.get(turn.name) ?? { namespace: null, name: turn.name };
            const args = JSON.stringify(turn.arguments ?? {});
            item = { type: 'function_call', id: `fc_scripted_${n}`, call_id: turn.id, name: target.name, arguments: args, status: 'completed' };
            if (target.namespace) item.namespace = target.namespace;
            events.push({ event: 'response.output_item.added', data: { type: 'response.output_item.added', output_index: 0, item: { ...item, arguments: '', status: 'in_progress' } } });
            events.push({ event: 'response.function_call_arguments.delta', data: { type: 'response.function_call_arguments.delta', item_id: item.id, output_index: 0, delta: args } });
            events.push({ event: 'response.function_call_arguments.done', data: { type: 'response.function_call_arguments.done', item_id: item.id, output_index: 0, arguments: args } });
        } else {
            const part = { type: 'output_text', text: turn.text, annotations: [] };
            item = { type: 'message', id: `msg_scripted_${n}`, role: 'assistant', status: 'completed', content: [part] };
            events.push({ event: 'response.output_item.added', data: { type: 'response.output_item.added', output_index: 0, item: { ...item, content: [], status: 'in_progress' } } });
            events.push({ event: 'response.content_part.added', data: { type: 'response.content_part.added', item_id: item.id, output_index: 0, content_index: 0, part: { ...part, text: '' } } });
            events.push({ event: 'response.output_text.delta', data: { type: 'response.output_text.delta', item_id: item.id, output_index: 0, content_index: 0, delta: turn.text } });
            events.push({ event: 'response.output_text.done', data: { type: 'response.output_text.done', item_id: item.id, output_index: 0, content_index: 0, text: turn.text } });
            events.push({ event: 'response.content_part.done', data: { type: 'response.content_part.done', item_id: item.id, output_index: 0, content_index: 0, part } });
        }
        events.push({ event: 'response.output_item.done', data: { type: 'response.output_item.done', output_index: 0, item } });
        const response = { id: responseId, object: 'response', created_at: Math.floor(Date.now() / 1000), model: decoded.model ?? 'scripted', status: 'completed', output: [item], usage };
        if (!decoded.stream) {
            json(res, 200, response);
            return;
        }
        sse(res, [
            { event: 'response.created', data: { type: 'response.created', response: { ...response, status: 'in_progress', output: [], usage: null } } },
            { event: 'response.in_progress', data: { type: 'response.in_progress', response: { ...response, status: 'in_progress', output: [], usage: null } } },
            ...events,
            { event: 'response.completed', data: { type: 'response.completed', response } },
        ]);
    },
};
