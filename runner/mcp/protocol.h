// MCP protocol revisions and how one request picks the revision it is served under.
//
// Two eras (docs/protocol.md):
//   legacy (2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05): an `initialize` handshake
//     negotiates a version for the whole connection; requests carry no version of their own.
//   modern (2026-07-28): no handshake; every request carries its version and the client's
//     capabilities in params._meta ("io.modelcontextprotocol/protocolVersion",
//     "io.modelcontextprotocol/clientCapabilities", optional ".../clientInfo").
// A dual-era server picks per request: _meta with a protocol version selects stateless
// serving under that version; otherwise the connection's negotiated legacy version applies.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

#include "runner/mcp/jsonrpc.h"
#include "runner/mcp/tool_host.h"
#include "tools/tool.h"

namespace stockade::mcp {

inline constexpr std::string_view kProtocol20260728 = "2026-07-28";
inline constexpr std::string_view kProtocol20251125 = "2025-11-25";
inline constexpr std::string_view kProtocol20250618 = "2025-06-18";
inline constexpr std::string_view kProtocol20250326 = "2025-03-26";
inline constexpr std::string_view kProtocol20241105 = "2024-11-05";

// Reserved _meta keys (2026-07-28 basic/index "Per-request protocol fields").
inline constexpr std::string_view kMetaProtocolVersion = "io.modelcontextprotocol/protocolVersion";
inline constexpr std::string_view kMetaClientCapabilities =
    "io.modelcontextprotocol/clientCapabilities";
inline constexpr std::string_view kMetaClientInfo = "io.modelcontextprotocol/clientInfo";
inline constexpr std::string_view kMetaServerInfo = "io.modelcontextprotocol/serverInfo";
inline constexpr std::string_view kMetaProgressToken = "progressToken";

// Every version we serve, most preferred first.
std::span<const std::string_view> supported_versions() noexcept;
bool is_supported_version(std::string_view version) noexcept;
// Modern versions are served statelessly and their results carry "resultType".
bool is_modern_version(std::string_view version) noexcept;
// The version to answer an `initialize` with: the client's if it is a legacy version we
// serve, else our latest legacy version (the client then decides whether to disconnect).
std::string negotiate_initialize_version(std::string_view requested);

// What a revision defines, of what this server sends: a client is sent only what its revision
// has (docs/protocol.md §3, "Older revisions"). Each member names the revision that added it.
struct RevisionFeatures {
    bool tool_annotations = false;  // Tool.annotations, ToolAnnotations.title (2025-03-26)
    bool progress_message = false;  // notifications/progress params.message (2025-03-26)
    bool titles = false;            // Tool.title, Implementation.title (2025-06-18)
    // CallToolResult.structuredContent, Tool.outputSchema (2025-06-18).
    bool structured_content = false;
    bool elicitation = false;       // elicitation/create (2025-06-18)
    bool elicitation_mode = false;  // elicitation/create params.mode (2025-11-25)
    // An SSE event with an id and empty data that primes the client to resume (2025-11-25).
    // Clients of earlier revisions parse every event's data as a message.
    bool sse_priming = false;
};
// The features of a version we serve (of an unknown one: none).
RevisionFeatures revision_features(std::string_view version) noexcept;

// What a legacy `initialize` established on this connection.
struct LegacySession {
    bool initialized = false;
    std::string version;         // negotiated; empty before initialize
    nlohmann::json client_info;  // null when not given
    nlohmann::json client_capabilities = nlohmann::json::object();
};

// The revision and client declarations one request is served under.
struct RequestProtocol {
    std::string version;
    bool stateless = false;      // declared in the request's own _meta
    bool modern = false;         // is_modern_version(version)
    nlohmann::json client_info;  // null when not given
    nlohmann::json client_capabilities = nlohmann::json::object();
    nlohmann::json progress_token;  // a string or an integer, or null
};

struct ProtocolError {
    jsonrpc::ErrorCode code = jsonrpc::ErrorCode::kInvalidParams;
    std::string message;
    nlohmann::json data;
};

// Resolves the protocol of a request other than `initialize`. `params` is the request's params
// (an object, or null when absent). Requests without _meta before any `initialize` are served
// leniently under our latest legacy version: no legacy revision specifies an error for them.
std::variant<RequestProtocol, ProtocolError> resolve_protocol(const nlohmann::json& params,
                                                              const LegacySession& session);

// A tool's tools/list entry under `version`, the one serialiser of it: the schema gets the two
// properties the MCP spec and DESIGN.md §8 require of every tool unless it sets them, and only
// the hints the tool gives. What `version` does not define is left out: the title goes in the
// annotations under 2025-03-26, and nothing but name, description and inputSchema is sent under
// 2024-11-05.
nlohmann::json tool_json(const ToolInfo& tool, std::string_view version);

// The ToolInfo of one of our tools; its outputSchema only with `output_schema` (serve
// --structured-content).
ToolInfo tool_info(const tools::ToolSpec& spec, bool output_schema);

}  // namespace stockade::mcp
