#include "runner/session/session.h"

#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <chrono>

#include <fmt/format.h>

#include "common/log.h"
#include "common/parse.h"
#include "common/syscall.h"
#include "runner/mcp/protocol.h"
#include "runner/session/git_index.h"
#include "runner/session/host_environment.h"
#include "runner/session/host_ids.h"
#include "runner/session/policy_enforcement.h"
#include "tools/process_tools.h"
#include "tools/text.h"

namespace stockade::runner {

namespace {

std::atomic<uint64_t> g_call_counter{0};

// Call ids become file names (tool-output/<tool>-<call>.txt): keep them to a safe alphabet.
std::string sanitize_call_id(const std::string& id) {
    std::string out;
    for (char c : id) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '_';
        out.push_back(ok ? c : '_');
        if (out.size() >= 64) {
            break;
        }
    }
    return out.empty() ? "call" : out;
}

// What the worker's view keeps read-only or hides, with the reason the model is told: paths
// as the sandbox shows them.
std::vector<tools::ProtectedPath> protected_paths(const SandboxConfig& sandbox) {
    const std::string& workspace = sandbox.workspace_inside();
    std::vector<tools::ProtectedPath> out;
    for (const std::string& host_path : sandbox.read_only_paths) {
        const std::string path = sandbox.inside(host_path);
        const bool git = path == workspace + "/.git/config" || path == workspace + "/.git/hooks";
        out.push_back(
            {.path = path,
             .reason = git ? "Stockade keeps .git/config and .git/hooks read-only, so that "
                             "nothing run here can plant a hook or a setting that runs with the "
                             "user's next git command outside the sandbox. Set options for one "
                             "command instead (git -c name=value ...) or in ~/.gitconfig (HOME "
                             "is /tmp here); commits already carry an identity."
                           : "a deny rule of the policy (Edit or Write) makes it read-only; "
                             "leave it as it is."});
    }
    for (const std::string& path : sandbox.masked_paths) {
        out.push_back({.path = sandbox.inside(path),
                       .reason = "a deny rule of the policy (Read) hides it; work without it."});
    }
    return out;
}

}  // namespace

// Spilled outputs: <session>/tool-output/<tool>-<call>.txt, read-only inside the sandbox.
class Session::Spill final : public tools::SpillStore {
public:
    // `dir_fd`: the tool-output directory, which outlives the store (SessionPaths).
    Spill(std::string dir, int dir_fd, OutputBudget& budget)
        : dir_(std::move(dir)), dir_fd_(dir_fd), budget_(budget) {}
    Result<std::string> spill(std::string_view tool, std::string_view call_id,
                              std::string_view content) override {
        const std::string name =
            fmt::format("{}-{}.txt", tool, sanitize_call_id(std::string(call_id)));
        std::string path = fmt::format("{}/{}", dir_, name);
        if (!budget_.take_all(content.size())) {
            return Error{Errc::kResourceExhausted,
                         fmt::format("spill \"{}\": {} is full", path, budget_.limit_met())};
        }
        int fd = retry_eintr([&] {
            return ::openat(dir_fd_, name.c_str(),
                            O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        });
        if (fd < 0) {
            return errno_error(fmt::format("spill \"{}\"", path), errno);
        }
        UniqueFd owned(fd);
        (void)::fchmod(fd, 0644);  // read inside the sandbox through its bind, whatever the umask
        RETURN_IF_ERROR(write_all(fd, content));
        return path;
    }

private:
    std::string dir_;
    int dir_fd_;
    OutputBudget& budget_;
};

Result<std::unique_ptr<Session>> Session::open(SessionConfig config) {
    std::unique_ptr<Session> session(new Session());
    SandboxConfig worker = std::move(config.sandbox);
    session->workspace_ = worker.workspace;  // opened by whoever made the config
    // The model and the policy see the workspace where the sandbox shows it (serve --http:
    // /workspace); the supervisor reaches it by descriptor.
    const std::string inside = worker.workspace_inside();
    std::vector<std::string> policy_warnings;
    auto loaded = load_policy(config.policy, session->workspace_, policy_warnings, inside);
    if (!loaded) {
        return std::move(loaded).error();
    }
    session->policy_ = std::make_unique<policy::Policy>(std::move(loaded).value());
    // A Read-denied file that git tracks stays readable through git: say so at the start, to
    // the operator here and to the model after the first result.
    const std::vector<TrackedDenial> tracked =
        git_tracked_denied(*session->policy_, session->workspace_, inside);
    for (const TrackedDenial& denial : tracked) {
        policy_warnings.push_back(tracked_denial_warning(denial));
    }
    session->structured_content_ = config.structured_content;
    for (const auto& warning : policy_warnings) {
        SPDLOG_LOGGER_WARN(log::get("runner"), "policy: {}", warning);
    }
    // Deny rules on paths become masks and read-only mounts in the worker's view, so that
    // they hold for whatever a command does; network.access decides the network namespace.
    if (session->policy_->quotas()) {
        apply_hosted_quotas(worker.limits);  // --mode hosted: what the flags leave unset is tighter
    }
    const CallerContext caller = current_caller();
    ASSIGN_OR_RETURN(std::vector<std::string> settings_notes,
                     apply_sandbox_settings(session->policy_->sandbox(), caller.environ, worker));
    for (const auto& note : settings_notes) {
        SPDLOG_LOGGER_WARN(log::get("runner"), "sandbox settings: {}", note);
    }
    // Commits made inside need an identity; HOME there is /tmp, so no config file gives one.
    GitIdentity identity = fallback_git_identity();
    if (config.git_identity) {
        identity = *config.git_identity;
    } else if (auto own = operator_git_identity(caller.environ)) {
        identity = *own;
    }
    session->git_identity_ = identity;
    std::vector<std::string> env = git_identity_env(identity);
    env.insert(env.end(), worker.env.begin(), worker.env.end());  // --env wins over them
    worker.env = std::move(env);
    worker.network = session_network(*session->policy_, worker.network);
    session->network_mode_ = worker.network;

    // A privileged supervisor gives the session a host uid of its own: the kernel's per-user
    // counts that its sandbox draws on are then never another session's.
    if (caller.privileged && !worker.host_uid) {
        const HostIdRange range = config.host_uid_range.value_or(session_host_ids(caller));
        ASSIGN_OR_RETURN(session->host_id_,
                         lease_host_id(range.first, range.count, kHostIdLockDir));
        worker.host_uid = session->host_id_.id();
        if (!worker.host_gid) {
            worker.host_gid = session->host_id_.id();
        }
    } else if (worker.host_uid && !worker.host_gid) {
        worker.host_gid = *worker.host_uid;
    }
    const SandboxConfig before_rules = worker;
    Enforcement enforcement =
        enforcement_for(*session->policy_, session->workspace_, kMaxEnforcementEntries, inside);
    for (const auto& note : enforcement.notes) {
        SPDLOG_LOGGER_WARN(log::get("runner"), "policy enforcement: {}", note);
    }
    apply_enforcement(enforcement, worker);
    session->protected_ = protected_paths(worker);
    session->sandbox_ = worker;

    // The supervisor's own records stay out of the sandbox's reach: a state directory the
    // workspace or a bind overlaps is refused, and every file in it is opened by descriptor.
    HostDir state = config.state;
    if (!state.valid()) {
        ASSIGN_OR_RETURN(state, resolve_state_dir(config.state_dir.empty() ? default_state_dir()
                                                                           : config.state_dir));
    }
    std::vector<std::string> binds = worker.ro;  // real paths
    binds.insert(binds.end(), worker.rw.begin(), worker.rw.end());
    RETURN_IF_ERROR(check_state_dir_apart(state.path(), session->workspace_.path(), binds));
    const std::string id = config.resume.empty() ? new_session_id() : config.resume;
    ASSIGN_OR_RETURN(session->paths_, open_session_dir(state, id, !config.resume.empty()));
    if (config.prune_outputs) {
        (void)prune_tool_outputs(state, config.spill_cap_bytes);  // this session's is locked
    }
    session->meters_ = config.meters;
    ASSIGN_OR_RETURN(EventLog log, EventLog::open_at(session->paths_.dir_fd.get(), "events.jsonl",
                                                     session->paths_.events, id));
    session->log_ = std::make_unique<EventLog>(std::move(log));
    session->budget_ = std::make_unique<OutputBudget>(
        config.spill_cap_bytes, session->paths_.tool_output_dir.fd(), config.disk_pool);
    // Spilled outputs and process logs are named as the sandbox shows them.
    const std::string spill_inside =
        worker.spill_view.empty() ? session->paths_.tool_output : worker.spill_view;
    session->spill_ = std::make_unique<Spill>(spill_inside, session->paths_.tool_output_dir.fd(),
                                              *session->budget_);
    // A later worker (a restart, after a crash or a kill) masks what the rules match then, not
    // the paths they matched at the start: a file that moved is protected under its new name.
    auto rederive = [policy = session->policy_.get(), workspace = session->workspace_, before_rules,
                     inside]() {
        SandboxConfig again = before_rules;
        const Enforcement now = enforcement_for(*policy, workspace, kMaxEnforcementEntries, inside);
        apply_enforcement(now, again);
        return again;
    };
    std::function<void(UniqueFd)> on_proxy_listener;
    std::function<void(UniqueFd)> on_dns_socket;
    if (worker.network == sandbox::NetworkMode::kNone) {
        ASSIGN_OR_RETURN(session->network_,
                         SandboxNetwork::start(SandboxNetworkConfig{
                             .mode = worker.network, .events = session->log_.get()}));
    } else if (worker.network == sandbox::NetworkMode::kAllowlist) {
        RETURN_IF_ERROR(add_settings_pins(*session->policy_, worker.network_pins));
        ASSIGN_OR_RETURN(session->network_, SandboxNetwork::start(SandboxNetworkConfig{
                                                .mode = worker.network,
                                                .policy = session->policy_.get(),
                                                .pins = worker.network_pins,
                                                .events = session->log_.get(),
                                                .max_connections = worker.network_max_connections,
                                                .bytes_per_second = worker.network_bytes_per_second,
                                                .grants = &session->grants_}));
        on_proxy_listener = [network = session->network_.get()](UniqueFd listener) {
            network->serve(std::move(listener));
        };
    }
    if (session->network_) {
        on_dns_socket = [network = session->network_.get()](UniqueFd socket) {
            if (auto served = network->serve_resolver(std::move(socket)); !served) {
                // Closed, the socket refuses each query at once, only without naming the host.
                SPDLOG_LOGGER_WARN(log::get("network"), "the sandbox's resolver: {}",
                                   served.error().message);
            }
        };
    }
    session->worker_ =
        std::make_unique<SessionWorker>(WorkerConfig{.workspace = inside,
                                                     .spill = session->paths_.tool_output_dir,
                                                     .sandbox = worker,
                                                     .rederive = rederive,
                                                     .on_proxy_listener = on_proxy_listener,
                                                     .on_dns_socket = on_dns_socket,
                                                     .meters = session->meters_.get()},
                                        session->log_.get());
    if (config.checkpoints.enabled) {
        CheckpointOptions options = config.checkpoints;
        if (!options.pool) {
            options.pool = config.disk_pool;
        }
        auto checkpoints = Checkpoints::open(session->paths_.dir_fd.get(), session->workspace_,
                                             std::move(options), session->log_.get());
        if (checkpoints) {
            session->checkpoints_ = std::move(checkpoints).value();
        } else {
            SPDLOG_LOGGER_WARN(log::get("runner"),
                               "checkpoints are off for this session: {}. Free the state "
                               "directory (or fix its permissions) to have them again.",
                               checkpoints.error().message);
        }
    }
    int next_process = 1;
    session->log_->record("PolicyLoaded",
                          {{"preset", policy::preset_name(session->policy_->preset())},
                           {"mode", policy::mode_name(session->policy_->mode())},
                           {"rules", session->policy_->rules().size()},
                           {"warnings", policy_warnings},
                           {"masked", enforcement.masked_paths},
                           {"read_only", enforcement.read_only_paths},
                           {"network", sandbox::network_name(worker.network)}},
                          false);
    if (!config.resume.empty()) {
        size_t restored = session->replay_stamps(next_process);
        session->log_->record("SessionResumed", {{"stamps", restored}}, true);
    } else {
        nlohmann::json started{{"workspace", session->workspace_.path()},
                               {"image", worker.image.name}};
        if (worker.image.stored()) {
            started["image_digest"] = worker.image.tree->digest.str();
        }
        if (!config.mcp_session_id.empty()) {
            started["mcp_session"] = config.mcp_session_id;
        }
        if (!config.tenant.empty()) {
            started["tenant"] = config.tenant;
        }
        session->log_->record("SessionStarted", std::move(started), true);
    }
    session->processes_ = std::make_unique<ProcessManagerImpl>(
        *session->worker_,
        ProcessManagerConfig{.log_dir = spill_inside + "/process-logs",
                             .log_parent_fd = session->paths_.tool_output_dir.fd(),
                             .log_cap_bytes = config.process_log_cap_bytes,
                             .first_id = next_process,
                             .pids_limit = worker.limits.pids.value_or(kDefaultPids),
                             .budget = session->budget_.get(),
                             .network = session->network_.get(),
                             .meters = session->meters_.get()},
        session->log_.get());
    session->executor_ = std::make_unique<Executor>(ExecutorParts{
        .tools = session->tools_,
        .policy = *session->policy_,
        .grants = session->grants_,
        .events = *session->log_,
        .context = tools::ToolContext{.session_id = session->paths_.id,
                                      .ws = session->worker_.get(),
                                      .stamps = &session->stamps_,
                                      .locks = &session->locks_,
                                      .spill = session->spill_.get(),
                                      .events = session->log_.get(),
                                      .processes = session->processes_.get(),
                                      .protected_paths = &session->protected_},
        .where = session_request_context(inside, session->network_mode_),
        .host_network = session->network_mode_ == sandbox::NetworkMode::kHost,
        .network_at_connect = session->network_mode_ == sandbox::NetworkMode::kAllowlist,
        .network = session->network_.get(),
        .ask_fallback_allow = config.policy.ask_fallback == AskFallback::kAllow,
        .session_note = [worker = session->worker_.get()] { return worker->take_loss_note(); },
        .first_note = tracked_denials_note(tracked),
        .meters = session->meters_.get(),
        .checkpoint =
            session->checkpoints_
                ? std::function<void(const std::string&, bool)>(
                      [checkpoints = session->checkpoints_.get(), worker = session->worker_.get()](
                          const std::string& call, bool after) {
                          if (after) {
                              checkpoints->after_call_async(*worker, call);
                          } else {
                              checkpoints->before_call(*worker, call);
                          }
                      })
                : nullptr});
    return session;
}

Session::~Session() {
    if (checkpoints_) {
        checkpoints_->drain();  // the last call's checkpoint, while the worker is there
    }
    // Processes first: SIGTERM and a grace period, then the worker and its pid namespace.
    processes_.reset();
    if (worker_) {
        worker_->stop();
    }
    network_.reset();  // its open connections end, and are recorded, before the session does
    if (log_) {
        log_->record("SessionEnded", nlohmann::json::object(), true);
    }
}

Status Session::start_worker() {
    return worker_->start();
}

size_t Session::replay_stamps(int& next_process) {
    auto replay = EventLog::read_supervisor_log(paths_.dir_fd.get(), "events.jsonl", paths_.events);
    if (!replay) {
        return 0;
    }
    size_t restored = 0;
    for (const auto& event : replay->events) {
        const std::string type = event.value("type", "");
        if (type == "ProcessStarted" || type == "ProcessAdopted") {
            // Ids of the earlier run stay unique: "p3" always names one process in the log.
            const std::string id = event.value("id", "");
            int n = 0;
            if (id.size() > 1 && id[0] == 'p' &&
                std::from_chars(id.data() + 1, id.data() + id.size(), n).ec == std::errc{}) {
                next_process = std::max(next_process, n + 1);
            }
            continue;
        }
        if (type == "Rewind") {
            // A rewound file is one the agent has not seen: it must be read again.
            for (const char* key : {"restored", "removed"}) {
                if (event.contains(key) && event[key].is_array()) {
                    for (const auto& path : event[key]) {
                        if (path.is_string()) {
                            stamps_.forget(sandbox_.workspace_inside() + "/" +
                                           path.get<std::string>());
                        }
                    }
                }
            }
            continue;
        }
        if (type != "FileRead" && type != "FileModified") {
            continue;
        }
        if (!event.contains("path") || !event["path"].is_string() || !event.contains("sha256") ||
            !event["sha256"].is_string()) {
            continue;
        }
        stamps_.restore(event["path"].get<std::string>(),
                        tools::FileStamp{.sha256 = event["sha256"].get<std::string>(),
                                         .size = event.value("size", uint64_t{0}),
                                         .mtime_ns = event.value("mtime_ns", int64_t{0})});
        ++restored;
    }
    return restored;
}

std::vector<mcp::ToolInfo> Session::list_tools() {
    std::vector<mcp::ToolInfo> out;
    for (const auto& tool : tools_.all()) {
        if (policy_->hidden(tool->name())) {
            continue;  // denied as a whole: the model is not shown what it cannot use
        }
        out.push_back(mcp::tool_info(tool->spec(), structured_content_));
    }
    return out;
}

mcp::ToolCallResult Session::call_tool(const std::string& name, const nlohmann::json& arguments,
                                       const mcp::CallInfo& info) {
    // A tool the policy hides is not in tools/list: to the client it does not exist. Whether
    // the name is a tool at all is the executor's stage 1, the one check of it.
    ExecutedCall done{.result = {}, .unknown_tool = true};
    if (!policy_->hidden(name)) {
        if (checkpoints_) {
            // The previous call's checkpoint first: every call sees (and the log records) the
            // workspace as its predecessor left it.
            checkpoints_->drain();
        }
        const std::string call_id =
            fmt::format("{}-{}", sanitize_call_id(info.request_id), ++g_call_counter);
        done = executor_->run(name, arguments, info, call_id);
    }
    if (done.unknown_tool) {
        return mcp::ToolCallResult{.text = "",
                                   .is_error = true,
                                   .meta = nullptr,
                                   .structured = nullptr,
                                   .unknown_tool = true};
    }
    tools::ToolResult& result = done.result;
    // An error result is its text alone: Gemini CLI hands the model the whole result of a
    // failed call, _meta included (the event log keeps the metadata).
    nlohmann::json meta;
    nlohmann::json structured;
    if (!result.is_error) {
        if (structured_content_) {
            structured = result.metadata;
        }
        meta = {{std::string(tools::kResultMetaKey), std::move(result.metadata)}};
    }
    return mcp::ToolCallResult{.text = std::move(result.content),
                               .is_error = result.is_error,
                               .meta = std::move(meta),
                               .structured = std::move(structured),
                               .unknown_tool = false};
}

Result<RewindReport> Session::rewind(const RewindRequest& request) {
    if (!checkpoints_) {
        return Error{Errc::kFailedPrecondition,
                     fmt::format("session {} keeps no checkpoints (it runs with --checkpoints "
                                 "off, or its state directory could not hold them): there is "
                                 "nothing to rewind to",
                                 paths_.id)};
    }
    const std::string inside = sandbox_.workspace_inside();
    return checkpoints_->rewind(*worker_, request, [this, &inside](const std::string& path) {
        stamps_.forget(inside + "/" + path);
    });
}

Result<nlohmann::json> Session::rewind(const nlohmann::json& request) {
    if (!request.contains("to") || !request["to"].is_string() ||
        (request.contains("dry_run") && !request["dry_run"].is_boolean()) ||
        (request.contains("force") && !request["force"].is_boolean())) {
        return Error{Errc::kInvalidArgument,
                     "the request must say {\"to\": \"CALL\"} (a call id of the session, or "
                     "@N for checkpoint N), with \"dry_run\" and \"force\" booleans if given"};
    }
    ASSIGN_OR_RETURN(RewindReport report,
                     rewind(RewindRequest{.to = request["to"].get<std::string>(),
                                          .dry_run = request.value("dry_run", false),
                                          .force = request.value("force", false)}));
    nlohmann::json out = report.to_json();
    out["text"] = rewind_report_text(report);
    return out;
}

std::vector<CheckpointSummary> Session::checkpoints() const {
    return checkpoints_ ? checkpoints_->list() : std::vector<CheckpointSummary>{};
}

mcp::ToolCallResult Session::call(const std::string& name, const nlohmann::json& arguments,
                                  const std::string& call_id) {
    mcp::CallInfo info;
    info.request_id = call_id;
    info.progress = [](double, std::optional<double>, std::string) {
    };
    return call_tool(name, arguments, info);
}

}  // namespace stockade::runner
