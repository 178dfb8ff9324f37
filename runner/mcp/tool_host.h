// ToolHost: what the MCP front-end needs from the rest of the supervisor. McpServer speaks the
// protocol; a ToolHost lists the tools and runs one call (parse → policy → run → collect, see
// DESIGN.md §3). Tests and the e2e fake server implement it with literals.
#pragma once

#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace stockade::mcp {

// MCP ToolAnnotations. Every field is a hint; an unset field is omitted from tools/list, and
// the client then assumes the spec's default (readOnly false, destructive true, idempotent
// false, openWorld true).
struct ToolAnnotations {
    std::optional<bool> read_only_hint;
    std::optional<bool> destructive_hint;
    std::optional<bool> idempotent_hint;
    std::optional<bool> open_world_hint;
};

struct ToolInfo {
    std::string name;         // 1-128 of [A-Za-z0-9_.-]
    std::string title;        // display name; omitted when empty
    std::string description;  // model-facing
    // A JSON Schema object. The server adds "type": "object" and "additionalProperties": false
    // when the schema does not set them.
    nlohmann::json input_schema = nlohmann::json::object();
    nlohmann::json output_schema;  // null: none
    ToolAnnotations annotations;
};

// Reports progress of a call. `done` should grow with each report; the server drops reports
// that do not grow it (MCP requires progress to increase) and those of calls whose request
// carried no progressToken. Thread-safe. Must not be called after call_tool() has returned.
using ProgressFn =
    std::function<void(double done, std::optional<double> total, std::string message)>;

struct CallInfo {
    std::string request_id;  // the JSON-RPC id: a string, or an integer in decimal
    std::stop_token stop;    // requested on notifications/cancelled and at input EOF
    ProgressFn progress;     // never empty
    // The protocol revision the request is served under, and what the client declared in it
    // (initialize params in the 2025 era, the request's _meta from 2026-07-28 on). Use the
    // capabilities, e.g. to decide whether an `ask` can become an elicitation.
    std::string protocol_version;
    nlohmann::json client_info;          // MCP Implementation, or null
    nlohmann::json client_capabilities;  // MCP ClientCapabilities, or an empty object
};

struct ToolCallResult {
    std::string text;       // model-facing content; the server sends it as one text block
    bool is_error = false;  // failed runs, policy denials, bad arguments: the model sees these
    // Metadata for the client (structuredContent), null for none. Before protocol 2026-07-28
    // only an object may be sent; other values are then dropped.
    nlohmann::json structured;
    // The tool does not exist: the server answers with JSON-RPC error -32602, not a result.
    bool unknown_tool = false;
};

// Thread-safety: list_tools() is called from the server's reader thread; call_tool() from up to
// ServerOptions::max_concurrent_calls worker threads at once, concurrently with list_tools().
class ToolHost {
public:
    virtual ~ToolHost() = default;

    // The tools, in a deterministic order that the server keeps (the order the model sees).
    virtual std::vector<ToolInfo> list_tools() = 0;

    // Runs one call. Must return promptly once info.stop is requested (the result is then
    // discarded: MCP says a cancelled request gets no response). Should not throw; an
    // exception becomes JSON-RPC error -32603.
    virtual ToolCallResult call_tool(const std::string& name, const nlohmann::json& arguments,
                                     const CallInfo& info) = 0;
};

}  // namespace stockade::mcp
