#include "runner/cli/serve_command.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <cstdlib>
#include <tuple>

#include <fmt/format.h>

#include "common/allocator.h"
#include "common/log.h"
#include "common/parse.h"
#include "common/version.h"
#include "images/image.h"
#include "runner/cli/exit_codes.h"
#include "runner/mcp/server.h"
#include "runner/session/host_environment.h"
#include "runner/session/session.h"
#include "tools/tool.h"

namespace stockade::runner {

namespace {

constexpr int kExitToolError = 1;

mcp::McpServer* g_server = nullptr;

void stop_on_signal(int) {
    if (g_server != nullptr) {
        g_server->request_stop();
    }
}

void print_banner(const Session& session) {
    const std::string& ws = session.workspace();
    const GitIdentity& id = session.git_identity();
    std::vector<std::string> visible = session.sandbox().image.readable_paths;
    visible.push_back(ws);
    visible.insert(visible.end(), session.sandbox().ro.begin(), session.sandbox().ro.end());
    visible.insert(visible.end(), session.sandbox().rw.begin(), session.sandbox().rw.end());
    const char* path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe): read once, at start
    fmt::print(
        stderr,
        "stockade serve: session {} on {} — speaking MCP on stdin/stdout.\n"
        "  Connect an agent, e.g.: claude mcp add stockade -- stockade serve --workspace {}\n"
        "  Limits: {} (--memory, --pids, --cpu, --tmp-size).\n"
        "  Commits in the sandbox are made as {} <{}> (--git-identity to change it).\n"
        "  Event log: {}\n"
        "  Resume later with: stockade serve --workspace {} --resume {}\n{}",
        session.paths().id, ws, ws, describe_limits(session.sandbox().limits, current_caller()),
        id.name, id.email, session.paths().events, ws, session.paths().id,
        hidden_path_dirs_hint(hidden_path_dirs(path == nullptr ? "" : path, visible)));
}

}  // namespace

Result<SessionConfig> session_config_from_flags(
    const std::string& workspace, const std::string& state_dir, const std::string& resume,
    const std::string& process_log_cap, const std::string& output_budget, const PolicyFlags& policy,
    const RunOptions& sandbox, bool structured_content) {
    RunOptions flags = sandbox;
    flags.workspace = workspace;
    ASSIGN_OR_RETURN(ParsedFlags parsed, parse_sandbox_flags(flags, current_caller()));
    for (const std::string& warning : parsed.warnings) {
        SPDLOG_LOGGER_WARN(log::get("runner"), "sandbox flags: {}", warning);
    }
    SessionConfig config{.sandbox = std::move(parsed.config),
                         .state_dir = state_dir,
                         .resume = resume,
                         .structured_content = structured_content};
    ASSIGN_OR_RETURN(config.policy, parse_policy_flags(policy));
    if (!sandbox.git_identity.empty()) {
        ASSIGN_OR_RETURN(config.git_identity, parse_git_identity(sandbox.git_identity));
    }
    if (!sandbox.host_uid_range.empty()) {
        ASSIGN_OR_RETURN(config.host_uid_range, parse_host_id_range(sandbox.host_uid_range));
    }
    for (const auto& [flag, text, bytes] :
         {std::tuple{"--process-log-cap", &process_log_cap, &config.process_log_cap_bytes},
          std::tuple{"--output-budget", &output_budget, &config.spill_cap_bytes},
          std::tuple{"--checkpoint-quota", &sandbox.checkpoint_quota,
                     &config.checkpoints.cap_bytes},
          std::tuple{"--checkpoint-file-cap", &sandbox.checkpoint_file_cap,
                     &config.checkpoints.max_file_bytes}}) {
        if (text->empty()) {
            continue;
        }
        auto size = parse_size(*text);
        if (!size) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("{} \"{}\": {}", flag, *text, size.error().message)};
        }
        *bytes = *size;
    }
    if (sandbox.checkpoints != "on" && sandbox.checkpoints != "off") {
        return Error{Errc::kInvalidArgument,
                     fmt::format("--checkpoints \"{}\": say on or off", sandbox.checkpoints)};
    }
    config.checkpoints.enabled = sandbox.checkpoints == "on";
    if (config.checkpoints.max_file_bytes > workspace::kMaxSnapshotReplyBytes) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("--checkpoint-file-cap \"{}\": at most {} bytes (8M)",
                                 sandbox.checkpoint_file_cap, workspace::kMaxSnapshotReplyBytes)};
    }
    return config;
}

namespace {

// A session of serve or call, from the flags (not started).
Result<std::unique_ptr<Session>> open_session(
    const std::string& workspace, const std::string& state_dir, const std::string& resume,
    const std::string& process_log_cap, const std::string& output_budget, const PolicyFlags& policy,
    const RunOptions& sandbox, bool structured_content) {
    ASSIGN_OR_RETURN(SessionConfig config,
                     session_config_from_flags(workspace, state_dir, resume, process_log_cap,
                                               output_budget, policy, sandbox, structured_content));
    return Session::open(std::move(config));
}

}  // namespace

int serve_command(const ServeOptions& options) {
    for (const auto& [set, flag] :
         {std::pair{!options.tenants.empty(), "--tenants"},
          std::pair{!options.token_file.empty(), "--token-file"},
          std::pair{!options.admin_token_file.empty(), "--admin-token-file"},
          std::pair{options.no_auth, "--no-auth"},
          std::pair{!options.allowed_hosts.empty(), "--allowed-host"},
          std::pair{!options.allowed_origins.empty(), "--allowed-origin"},
          std::pair{!options.drain.empty(), "--drain"}, std::pair{options.pod, "--pod"},
          std::pair{!options.bind_file.empty(), "--bind-file"},
          std::pair{!options.pod_idle_ttl.empty(), "--pod-idle-ttl"}}) {
        if (set) {
            fmt::print(stderr,
                       "stockade serve: {} is for serve over HTTP: add --http ADDRESS:PORT, or "
                       "drop it to serve on stdin/stdout\n",
                       flag);
            return kExitUsage;
        }
    }
    (void)::signal(SIGPIPE, SIG_IGN);
    release_large_buffers_on_free();
    // The protocol gets private copies of stdin and stdout; fds 0 and 1 become /dev/null and
    // stderr, so that nothing else — a library's stray print, a child — can read the protocol
    // or write into it.
    int proto_in = ::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
    int proto_out = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (proto_in < 0 || proto_out < 0 || null < 0 || ::dup2(null, STDIN_FILENO) < 0 ||
        ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
        fmt::print(stderr, "stockade serve: cannot set up stdio: {}\n", errno_string(errno));
        return kExitSetupFailed;
    }
    ::close(null);
    UniqueFd in_fd(proto_in);
    UniqueFd out_fd(proto_out);
    auto session = open_session(options.workspace, options.state_dir, options.resume,
                                options.process_log_cap, options.output_budget, options.policy,
                                options.sandbox, options.structured_content);
    if (!session) {
        fmt::print(stderr, "stockade serve: {}\n", session.error().message);
        return session.error().code == Errc::kInvalidArgument ||
                       session.error().code == Errc::kNotFound
                   ? kExitUsage
                   : kExitSetupFailed;
    }
    if (auto started = (*session)->start_worker(); !started) {
        fmt::print(stderr, "stockade serve: {}\n", started.error().message);
        return started.error().code == Errc::kUnavailable ? kExitUnavailable : kExitSetupFailed;
    }
    // The banner is for a person at a terminal. An agent CLI that starts us reads stderr as
    // a log (Claude Code reports each line of it as an error), so it gets nothing there.
    if (::isatty(STDERR_FILENO) == 1) {
        print_banner(**session);
    }
    mcp::ServerOptions server_options;
    server_options.version = std::string(kVersion);
    server_options.instructions =
        "Every tool runs inside a sandbox that sees only this workspace: paths outside it are "
        "refused, and nothing you run can reach the network unless the operator allowed it.";
    mcp::McpServer server(**session, server_options);
    g_server = &server;
    struct sigaction sa {};
    sa.sa_handler = stop_on_signal;
    (void)::sigaction(SIGTERM, &sa, nullptr);
    (void)::sigaction(SIGINT, &sa, nullptr);
    (void)::sigaction(SIGHUP, &sa, nullptr);
    auto served = server.run(in_fd.get(), out_fd.get());
    g_server = nullptr;
    session->reset();  // stops the worker: nothing outlives the session
    if (!served) {
        fmt::print(stderr, "stockade serve: {}\n", served.error().message);
        return kExitSetupFailed;
    }
    return 0;
}

int call_command(const CallOptions& options) {
    (void)::signal(SIGPIPE, SIG_IGN);
    nlohmann::json arguments = nlohmann::json::parse(options.arguments, nullptr, false);
    if (arguments.is_discarded() || !arguments.is_object()) {
        fmt::print(stderr,
                   "stockade call: the arguments must be a JSON object, e.g. '{{\"file_path\": "
                   "\"README.md\"}}'\n");
        return kExitUsage;
    }
    auto session =
        open_session(options.workspace, options.state_dir, options.resume, options.process_log_cap,
                     options.output_budget, options.policy, options.sandbox, false);
    if (!session) {
        fmt::print(stderr, "stockade call: {}\n", session.error().message);
        return kExitUsage;
    }
    mcp::ToolCallResult result = (*session)->call(options.tool, arguments, "cli");
    if (result.unknown_tool) {
        std::string known;
        for (const auto& tool : (*session)->list_tools()) {
            known += (known.empty() ? "" : ", ") + tool.name;
        }
        fmt::print(stderr, "stockade call: unknown tool \"{}\"; the tools are: {}\n", options.tool,
                   known);
        return kExitUsage;
    }
    if (options.json) {
        nlohmann::json out = {{"content", {{{"type", "text"}, {"text", result.text}}}},
                              {"_meta", result.meta},
                              {"isError", result.is_error}};
        fmt::print("{}\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
    } else {
        fmt::print("{}\n", result.text);
    }
    if (result.is_error) {
        return kExitToolError;
    }
    // A command's own status, as the shell would give it.
    const nlohmann::json& meta =
        result.meta.value(std::string(tools::kResultMetaKey), nlohmann::json::object());
    if (options.tool == "bash" && meta.is_object()) {
        if (auto code = meta.find("exit_code"); code != meta.end() && code->is_number_integer()) {
            return code->get<int>();
        }
        if (auto signal = meta.find("signal"); signal != meta.end() && signal->is_string()) {
            for (int n = 1; n < 65; ++n) {
                const char* abbrev = ::sigabbrev_np(n);
                if (abbrev != nullptr && *signal == fmt::format("SIG{}", abbrev)) {
                    return 128 + n;
                }
            }
        }
    }
    return 0;
}

}  // namespace stockade::runner
