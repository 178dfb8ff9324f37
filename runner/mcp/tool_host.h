// ToolHost: what the MCP front-end needs from the rest of the supervisor. McpServer speaks the
// protocol; a ToolHost lists the tools and runs one call (parse → policy → run → collect, see
// DESIGN.md §3). Tests and the e2e fake server implement it with literals.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "tools/tool.h"

namespace stockade::mcp {

// The initialize result's _meta key naming the session's event log: {"event_log_id": "s-…"}.
inline constexpr std::string_view kMetaSessionKey = "dev.stockade/session";

struct ToolInfo {
    std::string name;         // 1-128 of [A-Za-z0-9_.-]
    std::string title;        // display name; omitted when empty
    std::string description;  // model-facing
    // A JSON Schema object. The server adds "type": "object" and "additionalProperties": false
    // when the schema does not set them.
    nlohmann::json input_schema = nlohmann::json::object();
    nlohmann::json output_schema;  // null: none. Set only by a host that sends structuredContent
    // MCP ToolAnnotations, every one a hint: a tool's own (tools/tool.h), sent as readOnlyHint,
    // destructiveHint, idempotentHint and openWorldHint. Nullopt: none, and the client assumes
    // the spec's defaults (readOnly false, destructive true, idempotent false, openWorld true).
    std::optional<tools::ToolAnnotations> annotations;
};

// Reports progress of a call (tools::ProgressFn). `done` should grow with each report; the
// server drops reports that do not grow it (MCP requires progress to increase) and those of
// calls whose request carried no progressToken. Thread-safe. Must not be called after
// call_tool() has returned.
using ProgressFn = tools::ProgressFn;

// A question for the user, asked through the client (MCP elicitation, form mode).
struct ElicitRequest {
    // Shown to the user as is. MCP forbids asking for secrets (passwords, tokens) in form mode.
    std::string message;
    // The form: a flat JSON Schema object whose properties are primitives, e.g.
    //   {"type": "object", "properties": {"reason": {"type": "string"}}, "required": ["reason"]}
    // Property types: "string" (with optional enum/oneOf/format/minLength/maxLength), "number",
    // "integer", "boolean", or "array" of string enums. Null or {} means an empty form: the user
    // only accepts, declines or cancels. Anything else is refused (kInvalidArgument) unsent.
    nlohmann::json requested_schema;
    // How long to wait for the user. Then the client is told the question is withdrawn
    // (notifications/cancelled) and elicit() returns kDeadlineExceeded. Capped at 24 h.
    std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

struct ElicitResponse {
    std::string action;  // "accept" (the user submitted the form), "decline", or "cancel"
    // "accept": the submitted values, an object checked against requested_schema (required
    // properties present, values of the declared types, enum values from the enum; properties
    // not in the schema are dropped). "decline" and "cancel": null.
    nlohmann::json content;

    [[nodiscard]] bool accepted() const { return action == "accept"; }
};

// Asks the user and waits for the answer. Thread-safe; blocks the calling (tool) thread.
// Errors: kInvalidArgument (a bad request, or a malformed answer from the client),
// kDeadlineExceeded (no answer within the timeout), kUnavailable (the client answered with an
// error), kCancelled (the call was cancelled, the connection closed, or, under 2026-07-28, the
// question was sent back to the client: see CallInfo::elicit). Every error means "no answer":
// fall back as if elicitation were not available. Must not be called after call_tool() returned.
using ElicitFn = std::function<Result<ElicitResponse>(const ElicitRequest&)>;

struct CallInfo {
    std::string request_id;  // the JSON-RPC id: a string, or an integer in decimal
    std::stop_token stop;    // requested on notifications/cancelled and at input EOF
    ProgressFn progress;     // never empty
    // The protocol revision the request is served under, and what the client declared in it
    // (initialize params in the 2025 era, the request's _meta from 2026-07-28 on).
    std::string protocol_version;
    nlohmann::json client_info;          // MCP Implementation, or null
    nlohmann::json client_capabilities;  // MCP ClientCapabilities, or an empty object
    // Asks the user through the client. Empty when the client did not declare form-mode
    // elicitation (capabilities.elicitation {} or {"form": {}}) for this request.
    //   2025-11-25 / 2025-06-18: sends an elicitation/create request and blocks until the
    //     client answers.
    //   2026-07-28 (no server-to-client requests; "multi round-trip requests"): an answer the
    //     client sent with this request (params.inputResponses) is returned at once. Otherwise
    //     the call's stop token is requested, elicit() returns kCancelled, and once call_tool()
    //     returns, its result is replaced by an input_required result carrying the question;
    //     the client retries the whole call with the answer. So under 2026-07-28 a call that
    //     asks runs again from the start: ask before doing anything with side effects.
    ElicitFn elicit;

    [[nodiscard]] bool can_elicit() const { return static_cast<bool>(elicit); }
};

struct ToolCallResult {
    std::string text;       // model-facing content; the server sends it as one text block
    bool is_error = false;  // failed runs, policy denials, bad arguments: the model sees these
    // The result's `_meta`: metadata for the client's UI, the event log and programs (title,
    // counts, exit code, paths...), under namespaced keys. An object, or null for none; under
    // 2026-07-28 the server adds its serverInfo key. Clients do not hand `_meta` to the model.
    nlohmann::json meta;
    // structuredContent, null for none. Claude Code, Codex and VS Code give the model
    // structuredContent *instead of* content when a result has both, so a host sets it only
    // when the operator asked for it (and then declares ToolInfo::output_schema). Before
    // protocol 2026-07-28 only an object may be sent; other values are then dropped.
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

    // The id of the session's event log in the state directory ("s-…", what `stockade log`
    // takes), named in the initialize result's _meta and in /admin/sessions; empty: none.
    [[nodiscard]] virtual std::string event_log_id() const { return {}; }

    // The operator's POST /admin/sessions/ID/rewind: `request` is its JSON body ({"to": CALL,
    // "dry_run": bool, "force": bool}); the answer, the report as JSON. Blocking (the workspace
    // is walked and written): called on a thread of its own. kInvalidArgument and kNotFound
    // are the operator's to fix (400, 404).
    virtual Result<nlohmann::json> rewind(const nlohmann::json& /*request*/) {
        return Error{Errc::kUnavailable, "this session cannot be rewound"};
    }
};

}  // namespace stockade::mcp
