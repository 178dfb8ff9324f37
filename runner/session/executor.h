// The path of one tool call (DESIGN.md §3), in the order it runs, in one function:
//   1 parse     the tool by name; its arguments checked against its schema and read
//   2 plan      what the call asks of the policy (the tool's capabilities), with the paths its
//               file names lead to through symlinks when rules name files
//   3 decide    the policy, less what the user granted for the session
//   4 ask       an ask put to the user through the client, or the operator's fallback
//   5 run       the tool, over the session's workspace and process manager
//   6 collect   every result bounded and inert (the backstop), the notes after it
//   7 record    ToolRequested / Decided / Asked / Answered / Started / Completed | Failed
// A denial never reaches stage 5. The session owns the state a call uses (file stamps, the
// process table, the grants); the executor owns the order. Front ends (MCP over stdio, MCP
// over HTTP) frame and dispatch; they hold no tool or policy logic.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/event_sink.h"
#include "policy/policy.h"
#include "runner/mcp/tool_host.h"
#include "runner/session/session_grants.h"
#include "runner/session/session_meters.h"
#include "tools/tool.h"

namespace stockade::runner {

class SandboxNetwork;

struct ExecutorParts {
    const tools::ToolRegistry& tools;
    const policy::Policy& policy;
    SessionGrants& grants;
    EventSink& events;
    // What every call's ToolContext starts from: the workspace, stamps, locks, spill store,
    // process manager and protected paths of the session. (call_id, cancel, progress and
    // may_read are set per call.)
    tools::ToolContext context;
    // Where calls run: the workspace root and whether its loopback is the session's own.
    policy::RequestContext where;
    bool host_network = false;  // the sandbox has the host's network (--network host)
    // --network allowlist: the proxy decides each connection when it is made, so the
    // network.access a command implies is not asked about before it runs.
    bool network_at_connect = false;
    // --network allowlist in local mode: while a call runs, the connections of the commands it
    // started may be asked about through its elicitation (may be null).
    SandboxNetwork* network = nullptr;
    bool ask_fallback_allow = false;  // --ask-fallback allow
    // A note for the model after the call's own output, once (the worker died since the last
    // call, ...); may be empty.
    std::function<std::string()> session_note{};
    // A note for the model after the output of the session's first call, whichever it is (a
    // Read deny rule that git's history defeats: tracked_denials_note); may be empty.
    std::string first_note{};
    SessionMeters* meters = nullptr;  // counts the decisions (may be null; outlives the executor)
    // Checkpoints (runner/session/checkpoints.h) around a call that may change the workspace:
    // (call, false) before it runs, (call, true) after its completion is recorded. May be empty.
    std::function<void(const std::string& call, bool after)> checkpoint{};
};

// The outcome of a call, for a front end to frame.
struct ExecutedCall {
    tools::ToolResult result{};  // content for the model; metadata for _meta and the event log
    bool unknown_tool = false;   // no such tool: the front end answers with a protocol error
};

class Executor {
public:
    explicit Executor(ExecutorParts parts) : parts_(std::move(parts)) {}

    // Runs one call through the seven stages. `call_id` is unique in the session (it names
    // spill files and events). Never throws: a tool that throws is a failed result.
    ExecutedCall run(const std::string& tool, const nlohmann::json& arguments,
                     const mcp::CallInfo& info, const std::string& call_id);

    // The paths of a call that lead elsewhere through a symlink: (as given, where it leads).
    using PathAliases = std::vector<std::pair<std::string, std::string>>;

private:
    // Stage 2's addition: for a call of a file tool when rules name files, the requests of the
    // paths its names reach through symlinks, so that a rule holds for a file under any name.
    PathAliases add_real_paths(const tools::Tool& tool,
                               std::vector<policy::CapabilityRequest>& requests) const;
    // Stages 3 and 4: nullopt to run the call, or the refusal to return. `note`: what the
    // model must also be told when it runs (a network rule the sandbox cannot honour).
    std::optional<tools::ToolResult> decide(const std::string& tool,
                                            std::vector<policy::CapabilityRequest> requests,
                                            const nlohmann::json& arguments,
                                            const mcp::CallInfo& info, const std::string& call_id,
                                            std::string& note);
    // ToolContext::may_read of a call: whether a file a search found may be shown, under its
    // own path and, beneath a symlinked search root, under where it leads.
    bool may_read(const std::string& tool, const std::string& path,
                  const PathAliases& aliases) const;

    ExecutorParts parts_;
    std::atomic<bool> first_note_given_{false};  // the first call to finish took it
};

}  // namespace stockade::runner
