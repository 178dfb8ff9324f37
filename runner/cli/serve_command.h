// `stockade serve`: MCP over stdio for one session; `stockade call`: one tool call from the shell.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "runner/cli/sandbox_flags.h"
#include "runner/session/session.h"

namespace stockade::runner {

struct ServeOptions {
    std::string workspace{};
    std::string state_dir{};
    std::string resume{};
    std::string process_log_cap{};    // --process-log-cap SIZE; empty: the default (8G)
    std::string output_budget{};      // --output-budget SIZE; empty: the default (512M)
    bool structured_content = false;  // --structured-content
    PolicyFlags policy{};
    RunOptions sandbox{};  // --isolation, --network, --memory, --pids, --cpu, --tmp-size
    // --http ADDRESS: MCP over Streamable HTTP, many sessions (runner/cli/http_serve.h).
    std::string http{};
    std::string tenants{};           // --tenants FILE
    std::string token_file{};        // --token-file FILE: the default tenant's token hashes
    std::string admin_token_file{};  // --admin-token-file FILE: /metrics and /admin/sessions
    bool no_auth = false;            // --no-auth: loopback and unix-socket binds only
    // --oauth FILE: OAuth access tokens instead of token hashes (runner/mcp/oauth.h); needs
    // --tenants.
    std::string oauth{};
    std::vector<std::string> allowed_hosts{};
    std::vector<std::string> allowed_origins{};
    std::string drain{};            // --drain SECONDS: how long running calls may finish on SIGTERM
    std::size_t max_sessions = 64;  // --max-sessions: the default tenant's sessions open at once
    // --pod: one tenant, bound after the start (runner/host/pod_backend.h); --bind-file FILE,
    // --pod-idle-ttl DURATION.
    bool pod = false;
    std::string bind_file{};
    std::string pod_idle_ttl{};
};

// MCP over stdio (serve --http is http_serve_command, runner/cli/http_serve.h).
int serve_command(const ServeOptions& options);

// The SessionConfig of a session of serve, call or serve --http from their flags (not
// opened). With sandbox.workspace_per_session (serve --http), the workspace is left for the
// host to set. Warnings of the sandbox flags are logged. Errors are usage errors
// (kInvalidArgument, kNotFound) naming the flag.
Result<SessionConfig> session_config_from_flags(
    const std::string& workspace, const std::string& state_dir, const std::string& resume,
    const std::string& process_log_cap, const std::string& output_budget, const PolicyFlags& policy,
    const RunOptions& sandbox, bool structured_content);

struct CallOptions {
    std::string workspace{};
    std::string state_dir{};
    std::string resume{};
    std::string tool{};
    std::string arguments{};  // JSON object text
    bool json = false;        // print the whole result, not only the model-facing text
    std::string process_log_cap{};
    std::string output_budget{};
    PolicyFlags policy{};
    RunOptions sandbox{};
};

// Exit status: a bash call's own (128+N for signal N), else 0, or 1 for an isError result.
int call_command(const CallOptions& options);

}  // namespace stockade::runner
