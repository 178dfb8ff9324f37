// Wire adapter: the OpenAI Chat Completions API (POST …/chat/completions), as spoken by the
// `@ai-sdk/openai-compatible` provider of OpenCode and by other OpenAI-compatible clients.
//
// Request: {model, messages, tools: [{type: 'function', function: {name, parameters}}], stream,
// stream_options}. Tool results come back as {role: 'tool', tool_call_id, content} messages after
// the assistant message whose `tool_calls` asked for them; `content` is a string (OpenCode sends
// the MCP result's text parts joined by a blank line) or, with some clients, an array of
// {type: 'text', text} parts. The API has no error flag on a tool result, so isError is false.
//
// Side requests: a request that offers no tools is not the agent loop (OpenCode's title
// generation: a system prompt "You are a title generator…", no `tools`); the server answers it
// with a short text. GET …/models is answered with a one-model list.
//
// Answers: with `stream: true`, server-sent events of chat.completion.chunk objects — the tool
// call's id, type and name in the first delta, its arguments in a second one (clients must
// accumulate by `index`), then finish_reason "tool_calls" (or "stop" after text), a usage chunk
// when stream_options.include_usage asks for it, and `data: [DONE]`. Without streaming, one
// chat.completion object.
import { json, sse } from '../lib/model_server.mjs';

function contentText(content) {
    if (typeof content === 'string') return content;
    if (Array.isArray(content)) {
        return content.map((p) => (typeof p === 'string' ? p : p?.text ?? '')).join('\n');
    }
    if (content == null) return '';
    return JSON.stringify(content);
}

function offeredTools(body) {
    const tools = Array.isArray(body?.tools) ? body.tools : [];
    const names = tools.map((t) => t?.function?.name ?? t?.name).filter((n) => typeof n === 'string');
    // The legacy `functions` field, for completeness.
    for (const f of Array.isArray(body?.functions) ? body.functions : []) {
        if (typeof f?.name === 'string') names.push(f.name);
    }
    return names;
}

function toolResults(messages) {
    const nameById = new Map();
    const results = [];
    for (const m of Array.isArray(messages) ? messages : []) {
        if (m?.role === 'assistant') {
            for (const c of Array.isArray(m.tool_calls) ? m.tool_calls : []) {
                if (c?.id) nameById.set(c.id, c.function?.name ?? c.name);
            }
        } else if (m?.role === 'tool') {
            results.push({ id: m.tool_call_id, name: nameById.get(m.tool_call_id), text: contentText(m.content), isError: false });
        } else if (m?.role === 'function') {
            results.push({ id: undefined, name: m.name, text: contentText(m.content), isError: false });
        }
    }
    return results;
}

const usage = { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 };

export default {
    name: 'openai-chat',

    matches(method, pathname) {
        return method === 'POST' && /(^|\/)chat\/completions$/.test(pathname);
    },

    decode(body) {
        const tools = offeredTools(body);
        return {
            scripted: tools.length > 0,
            tools,
            results: toolResults(body?.messages),
            stream: body?.stream === true,
            model: body?.model ?? 'scripted',
            includeUsage: body?.stream_options?.include_usage === true,
        };
    },

    respond(res, turn, decoded) {
        const id = `chatcmpl-scripted-${Date.now()}`;
        const created = Math.floor(Date.now() / 1000);
        const model = decoded.model ?? 'scripted';
        const args = turn.type === 'tool' ? JSON.stringify(turn.arguments ?? {}) : '';
        const finish = turn.type === 'tool' ? 'tool_calls' : 'stop';
        if (!decoded.stream) {
            const message = turn.type === 'tool'
                ? { role: 'assistant', content: null, tool_calls: [{ id: turn.id, type: 'function', function: { name: turn.name, arguments: args } }] }
                : { role: 'assistant', content: turn.text };
            json(res, 200, { id, object: 'chat.completion', created, model, choices: [{ index: 0, message, finish_reason: finish }], usage });
            return;
        }
        const chunk = (delta, finish_reason = null) => ({
            data: { id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason }] },
        });
        const events = turn.type === 'tool'
            ? [
                chunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: turn.id, type: 'function', function: { name: turn.name, arguments: '' } }] }),
                chunk({ tool_calls: [{ index: 0, function: { arguments: args } }] }),
            ]
            : [chunk({ role: 'assistant', content: turn.text })];
        events.push(chunk({}, finish));
        if (decoded.includeUsage) {
            events.push({ data: { id, object: 'chat.completion.chunk', created, model, choices: [], usage } });
        }
        events.push({ data: '[DONE]' });
        sse(res, events);
    },

    side(req, res, body, { pathname }) {
        if (req.method === 'GET' && /(^|\/)models$/.test(pathname)) {
            json(res, 200, { object: 'list', data: [{ id: 'scripted-model', object: 'model', created: 0, owned_by: 'stockade-tests' }] });
            return true;
        }
        return false;
    },
};
