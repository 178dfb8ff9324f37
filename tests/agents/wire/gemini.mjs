// Wire adapter: the Gemini API (generativelanguage v1beta) as Gemini CLI speaks it through
// GOOGLE_GEMINI_BASE_URL.
//
//   POST /v1beta/models/MODEL:streamGenerateContent?alt=sse   the agent loop (SSE, `data:` lines)
//   POST /v1beta/models/MODEL:generateContent                 side calls (router, checks...)
//   POST /v1beta/models/MODEL:countTokens, GET /v1beta/models[/MODEL]   answered by side()
//
// A request of the agent loop declares the tools (`tools[].functionDeclarations[].name`; MCP
// tools appear as mcp_<server>_<tool>) and asks for no JSON. Side requests either declare no
// tools (the model router's complexity classifier on a flash-lite model, summaries) or ask for
// JSON (`generationConfig.responseMimeType: application/json` with responseJsonSchema: router,
// loop detection, next-speaker check); those get a JSON object that fits their schema.
//
// Tool results come back as user parts `{functionResponse: {id, name, response}}`. For an MCP
// tool Gemini CLI puts the text blocks of the CallToolResult's `content`, each wrapped in
// `<untrusted_context>\n…\n</untrusted_context>` and joined with "\n", into `response.output`
// (structuredContent and _meta are dropped). For a result with isError it puts a sentence holding
// the whole CallToolResult as JSON (content, structuredContent, _meta) into `response.error`.
// `text` is that string, as the model reads it.
import { json, sse } from '../lib/model_server.mjs';

const ROUTE = /\/models\/([^/:]+):(streamGenerateContent|generateContent)$/;

function declaredTools(body) {
    const names = [];
    for (const t of body?.tools ?? []) {
        for (const d of t.functionDeclarations ?? t.function_declarations ?? []) names.push(d.name);
    }
    return names;
}

function wantsJson(body) {
    const g = body?.generationConfig ?? {};
    return /json/i.test(g.responseMimeType ?? '') || g.responseJsonSchema !== undefined ||
        g.responseSchema !== undefined;
}

function resultText(response) {
    if (typeof response?.output === 'string') return { text: response.output, isError: false };
    if (typeof response?.error === 'string') return { text: response.error, isError: true };
    if (response?.error !== undefined) return { text: JSON.stringify(response.error), isError: true };
    return { text: JSON.stringify(response ?? null), isError: false };
}

// A small value that fits a JSON schema (OpenAPI-style upper-case types included), so that a side
// request's JSON parses: the router gets complexity 1 (its minimum), loop detection confidence 0,
// the next-speaker check "user" (the first of its enum).
function fill(schema, key = '') {
    if (!schema || typeof schema !== 'object') return 'OK';
    if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[0];
    const type = String(Array.isArray(schema.type) ? schema.type[0] : schema.type ?? 'object').toLowerCase();
    switch (type) {
    case 'object': {
        const out = {};
        for (const [k, v] of Object.entries(schema.properties ?? {})) out[k] = fill(v, k);
        return out;
    }
    case 'array': return [];
    case 'integer': case 'number': return schema.minimum ?? (/confidence/i.test(key) ? 0 : 1);
    case 'boolean': return false;
    default: return 'OK';
    }
}

function candidate(parts) {
    return {
        candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }],
        usageMetadata: { promptTokenCount: 100, candidatesTokenCount: 10, totalTokenCount: 110 },
        modelVersion: 'scripted-model',
    };
}

export default {
    name: 'gemini',

    matches(method, pathname) {
        return method === 'POST' && ROUTE.test(pathname);
    },

    decode(body, { pathname }) {
        const tools = declaredTools(body);
        const json = wantsJson(body);
        const results = [];
        for (const content of body?.contents ?? []) {
            for (const part of content.parts ?? []) {
                const fr = part.functionResponse;
                if (!fr) continue;
                results.push({ id: fr.id, name: fr.name, ...resultText(fr.response) });
            }
        }
        const g = body?.generationConfig ?? {};
        return {
            scripted: tools.length > 0 && !json,
            tools,
            results,
            stream: pathname.endsWith(':streamGenerateContent'),
            json,
            schema: g.responseJsonSchema ?? g.responseSchema,
        };
    },

    respond(res, turn, decoded) {
        let parts;
        if (turn.type === 'tool') {
            parts = [{ functionCall: { id: turn.id, name: turn.name, args: turn.arguments } }];
        } else if (decoded.json) {
            parts = [{ text: JSON.stringify(decoded.schema ? fill(decoded.schema) : {}) }];
        } else {
            parts = [{ text: turn.text }];
        }
        const body = candidate(parts);
        if (decoded.stream) sse(res, [{ data: body }]);
        else json(res, 200, body);
    },

    side(req, res, body, { pathname }) {
        if (req.method === 'POST' && /\/models\/[^/:]+:countTokens$/.test(pathname)) {
            json(res, 200, { totalTokens: 100 });
            return true;
        }
        if (req.method === 'POST' && /\/models\/[^/:]+:(batchEmbedContents|embedContent)$/.test(pathname)) {
            json(res, 200, { embedding: { values: [0] }, embeddings: [{ values: [0] }] });
            return true;
        }
        if (req.method === 'GET' && /\/v1(beta)?\/models(\/[^/:]+)?$/.test(pathname)) {
            const model = (name) => ({
                name, displayName: 'scripted model', inputTokenLimit: 1048576, outputTokenLimit: 65536,
                supportedGenerationMethods: ['generateContent', 'streamGenerateContent', 'countTokens'],
            });
            const m = /\/models\/([^/:]+)$/.exec(pathname);
            json(res, 200, m ? model(`models/${m[1]}`) : { models: [model('models/gemini-2.5-pro')] });
            return true;
        }
        return false;
    },
};
