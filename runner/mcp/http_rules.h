// The rules of MCP's Streamable HTTP transport that need no socket: which Host and Origin a
// request may carry, what its Accept header allows, the bearer token of its Authorization
// header, the Mcp-* headers of protocol 2026-07-28 checked against the body, the HTTP status of
// a JSON-RPC error, session ids, and Server-Sent Events framing. The server
// (runner/mcp/http_server.h) applies them; they are pure so that they can be tested and fuzzed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/parse.h"
#include "runner/mcp/jsonrpc.h"

namespace stockade::mcp::http {

// Where the server listens, and which names it answers to.
struct HostRules {
    // The bind is loopback or a unix socket: browsers on this machine can reach it, so a page
    // from elsewhere must not (DNS rebinding). Host must then name a loopback address, and an
    // Origin, when sent, must be a loopback origin.
    bool loopback = true;
    // Further Host values (name[:port], lower case) and Origins ("https://app.example.com")
    // that are allowed (--allowed-host, --allowed-origin).
    std::vector<std::string> hosts;
    std::vector<std::string> origins;
};

// Whether a request with these Host and Origin headers (empty: absent) may be served. On a
// non-loopback bind any Host is served (a gateway in front decides names), and an Origin only
// when listed: agents do not send one; browsers do, and are not our clients.
bool host_allowed(std::string_view host, const HostRules& rules);
bool origin_allowed(std::string_view origin, const HostRules& rules);

// The Accept header's verdict for a POST: JSON-RPC responses as application/json, streams as
// text/event-stream. An absent header or */* accepts both.
struct Accepts {
    bool json = false;
    bool event_stream = false;
};
Accepts parse_accept(std::string_view accept);

// The token of "Bearer TOKEN" (scheme case-insensitive, surrounding spaces dropped); nullopt for
// any other scheme or an empty token.
std::optional<std::string> bearer_token(std::string_view authorization);

// A header value with the optional white space around it removed (RFC 9110 §5.5).
using stockade::trim_ows;

// Protocol 2026-07-28 (SEP-2243): the standard headers must repeat what the body says.
// `protocol_header`, `method_header`, `name_header`: the values of MCP-Protocol-Version,
// Mcp-Method and Mcp-Name, nullopt when absent. `protocol_version`: the version the body's
// _meta declares. Returns the error message for a -32020 HeaderMismatch, or nullopt when they
// agree.
std::optional<std::string> modern_header_mismatch(std::optional<std::string_view> protocol_header,
                                                  std::optional<std::string_view> method_header,
                                                  std::optional<std::string_view> name_header,
                                                  std::string_view protocol_version,
                                                  const jsonrpc::Request& request);

// The name a request's Mcp-Name header must carry: params.name of tools/call and prompts/get,
// params.uri of resources/read and resources/subscribe; nullopt for other methods.
std::optional<std::string> request_name(const jsonrpc::Request& request);

// The HTTP status of a response carrying JSON-RPC error `code`, under protocol 2026-07-28: 404
// for an unknown method, 400 for a request the client must change, 500 for our failure.
// Earlier revisions answer errors with 200.
unsigned error_status(int code, bool modern);

// A new session id: 256 bits from the kernel's CSPRNG, as 64 lower-case hex digits.
std::string new_session_id();
// Whether `id` has the shape of one of ours (checked before any lookup).
bool is_session_id(std::string_view id);

// One Server-Sent Event: "id: ID\ndata: LINE\n\n" (event "message"). `data` is one JSON-RPC
// message, which has no raw newlines. An empty `data` makes the priming event that tells a
// client the id to resume from; `retry_ms` > 0 adds a retry field.
std::string sse_event(std::string_view id, std::string_view data, unsigned retry_ms = 0);

// An SSE event id is "STREAM-SEQ": the session's stream number and the event's number in it.
struct EventId {
    std::uint64_t stream = 0;
    std::uint64_t seq = 0;
};
std::string event_id(EventId id);
std::optional<EventId> parse_event_id(std::string_view text);

}  // namespace stockade::mcp::http
