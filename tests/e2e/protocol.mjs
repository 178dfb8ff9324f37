// What the e2e tests share about the protocol itself.
export const MODERN = '2026-07-28';

// The per-request _meta of a 2026-07-28 request (no handshake), with `extra` keys on top.
export function modernMeta(extra = {}, client = 'stockade-e2e-raw') {
    return {
        'io.modelcontextprotocol/protocolVersion': MODERN,
        'io.modelcontextprotocol/clientCapabilities': {},
        'io.modelcontextprotocol/clientInfo': { name: client, version: '0.0.0' },
        ...extra,
    };
}
