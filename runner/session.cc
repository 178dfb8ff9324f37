#include "runner/session.h"

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
#include "policy/tool_requests.h"
#include "runner/git_index.h"
#include "runner/host_environment.h"
#include "runner/host_ids.h"
#include "runner/policy_enforcement.h"
#include "runner/policy_gate.h"
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

// What the worker's view keeps read-only or hides, with the reason the model is told.
std::vector<tools::ProtectedPath> protected_paths(const RunOptions& sandbox,
                                                  const std::string& workspace) {
    std::vector<tools::ProtectedPath> out;
    for (const std::string& path : sandbox.read_only_paths) {
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
        out.push_back({.path = path,
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
        if (budget_.take(content.size()) < content.size()) {
            return Error{Errc::kResourceExhausted,
                         fmt::format("spill \"{}\": the session's output budget ({}) is full", path,
                                     tools::format_size(budget_.cap()))};
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

class Session::Events final : public tools::ToolEvents {
public:
    explicit Events(EventLog& log) : log_(log) {}
    void file_read(const std::string& path, const std::string& sha256, uint64_t size,
                   int64_t mtime_ns) override {
        // Not fsync'd on its own: a read lost in a crash only means the agent reads again.
        log_.append("FileRead",
                    {{"path", path}, {"sha256", sha256}, {"size", size}, {"mtime_ns", mtime_ns}},
                    false);
    }
    void file_modified(const std::string& path, const std::string& sha256, uint64_t size,
                       int64_t mtime_ns, int additions, int deletions, bool created) override {
        log_.append("FileModified",
                    {{"path", path},
                     {"sha256", sha256},
                     {"size", size},
                     {"mtime_ns", mtime_ns},
                     {"additions", additions},
                     {"deletions", deletions},
                     {"created", created}},
                    true);
    }

private:
    EventLog& log_;
};

Result<std::unique_ptr<Session>> Session::open(SessionConfig config) {
    char resolved[PATH_MAX];
    std::string ws = config.workspace.empty() ? "." : config.workspace;
    if (::realpath(ws.c_str(), resolved) == nullptr) {
        return Error{
            Errc::kNotFound,
            fmt::format("workspace \"{}\" does not exist: create it or pass --workspace", ws)};
    }
    std::unique_ptr<Session> session(new Session());
    session->workspace_ = resolved;
    std::vector<std::string> policy_warnings;
    auto loaded = load_policy(config.policy, session->workspace_, policy_warnings);
    if (!loaded) {
        return std::move(loaded).error();
    }
    session->policy_ = std::make_unique<policy::Policy>(std::move(loaded).value());
    // A Read-denied file that git tracks stays readable through git: say so at the start.
    for (auto& warning : git_tracked_denials(*session->policy_, session->workspace_)) {
        policy_warnings.push_back(std::move(warning));
    }
    session->ask_fallback_allow_ = config.policy.ask_fallback == "allow";
    session->structured_content_ = config.structured_content;
    for (const auto& warning : policy_warnings) {
        SPDLOG_LOGGER_WARN(log::get("runner"), "policy: {}", warning);
    }
    // Deny rules on paths become masks and read-only mounts in the worker's view, so that
    // they hold for whatever a command does; network.access decides the network namespace.
    RunOptions sandbox = config.sandbox;
    if (session->policy_->quotas()) {
        apply_hosted_quotas(sandbox);  // --mode hosted: what the flags leave unset is tighter
    }
    for (const auto& note :
         apply_sandbox_settings(session->policy_->sandbox(), session->workspace_, sandbox)) {
        SPDLOG_LOGGER_WARN(log::get("runner"), "sandbox settings: {}", note);
    }
    // Commits made inside need an identity; HOME there is /tmp, so no config file gives one.
    GitIdentity identity = fallback_git_identity();
    if (!sandbox.git_identity.empty()) {
        ASSIGN_OR_RETURN(identity, parse_git_identity(sandbox.git_identity));
    } else if (auto own = operator_git_identity(current_caller().environ)) {
        identity = *own;
    }
    session->git_identity_ = identity;
    std::vector<std::string> env = git_identity_env(identity);
    env.insert(env.end(), sandbox.env.begin(), sandbox.env.end());  // --env wins over them
    sandbox.env = std::move(env);
    sandbox.network = session_network(*session->policy_, sandbox.network);
    session->network_ = sandbox.network;

    // A root supervisor gives the session a host uid of its own: the kernel's per-user counts
    // that its sandbox draws on are then never another session's.
    if (::geteuid() == 0 && !sandbox.host_uid) {
        ASSIGN_OR_RETURN(HostIdRange range, parse_host_id_range(sandbox.host_uid_range));
        ASSIGN_OR_RETURN(session->host_id_,
                         lease_host_id(range.first, range.count, kHostIdLockDir));
        sandbox.host_uid = session->host_id_.id();
        if (!sandbox.host_gid) {
            sandbox.host_gid = session->host_id_.id();
        }
    } else if (sandbox.host_uid && !sandbox.host_gid) {
        sandbox.host_gid = *sandbox.host_uid;
    }
    const RunOptions before_rules = sandbox;
    Enforcement enforcement = enforcement_for(*session->policy_, session->workspace_);
    for (const auto& note : enforcement.notes) {
        SPDLOG_LOGGER_WARN(log::get("runner"), "policy enforcement: {}", note);
    }
    apply_enforcement(enforcement, sandbox);
    session->protected_ = protected_paths(sandbox, session->workspace_);
    session->sandbox_ = sandbox;

    // The supervisor's own records stay out of the sandbox's reach: a state directory the
    // workspace or a bind overlaps is refused, and every file in it is opened by descriptor.
    ASSIGN_OR_RETURN(
        std::string state,
        resolve_state_dir(config.state_dir.empty() ? default_state_dir() : config.state_dir));
    std::vector<std::string> binds;
    for (const auto* list : {&sandbox.ro, &sandbox.rw}) {
        for (const std::string& bind : *list) {
            char real[PATH_MAX];
            binds.emplace_back(::realpath(bind.c_str(), real) != nullptr ? real : bind);
        }
    }
    RETURN_IF_ERROR(check_state_dir_apart(state, session->workspace_, binds));
    std::string id = config.resume.empty() ? new_session_id() : config.resume;
    if (!config.resume.empty() &&
        !path_exists(fmt::format("{}/sessions/{}/events.jsonl", state, config.resume))) {
        return Error{Errc::kNotFound,
                     fmt::format("no session \"{}\" in \"{}\": check the id (stockade log lists "
                                 "them) or the --state-dir",
                                 config.resume, state)};
    }
    ASSIGN_OR_RETURN(session->paths_, open_session_dir(state, id));
    prune_tool_outputs(state, id, config.spill_cap_bytes);
    ASSIGN_OR_RETURN(EventLog log, EventLog::open_at(session->paths_.dir_fd.get(), "events.jsonl",
                                                     session->paths_.events, id));
    session->log_ = std::make_unique<EventLog>(std::move(log));
    session->budget_ = std::make_unique<OutputBudget>(config.spill_cap_bytes,
                                                      session->paths_.tool_output_fd.get());
    session->spill_ = std::make_unique<Spill>(
        session->paths_.tool_output, session->paths_.tool_output_fd.get(), *session->budget_);
    session->events_ = std::make_unique<Events>(*session->log_);
    session->tools_ = tools::make_file_tools();
    for (auto& tool : tools::make_process_tools()) {
        session->tools_.push_back(std::move(tool));
    }
    EventLog* raw_log = session->log_.get();
    // A later worker (a restart, after a crash or a kill) masks what the rules match then, not
    // the paths they matched at the start: a file that moved is protected under its new name.
    auto rederive = [policy = session->policy_.get(), workspace = session->workspace_,
                     before_rules]() {
        RunOptions options = before_rules;
        const Enforcement now = enforcement_for(*policy, workspace);
        apply_enforcement(now, options);
        return options;
    };
    session->worker_ =
        std::make_unique<SessionWorker>(WorkerConfig{.workspace = session->workspace_,
                                                     .spill_dir = session->paths_.tool_output,
                                                     .sandbox = sandbox,
                                                     .rederive = rederive},
                                        [raw_log](std::string_view type, nlohmann::json fields) {
                                            raw_log->append(type, std::move(fields), true);
                                        });
    int next_process = 1;
    session->log_->append("PolicyLoaded",
                          {{"preset", policy::preset_name(session->policy_->preset())},
                           {"mode", policy::mode_name(session->policy_->mode())},
                           {"rules", session->policy_->rules().size()},
                           {"warnings", policy_warnings},
                           {"masked", enforcement.masked_paths},
                           {"read_only", enforcement.read_only_paths},
                           {"network", sandbox.network}},
                          false);
    if (!config.resume.empty()) {
        size_t restored = session->replay_stamps(next_process);
        session->log_->append("SessionResumed", {{"stamps", restored}}, true);
    } else {
        session->log_->append("SessionStarted", {{"workspace", session->workspace_}}, true);
    }
    session->processes_ = std::make_unique<ProcessManagerImpl>(
        *session->worker_,
        ProcessManagerConfig{
            .log_dir = session->paths_.tool_output + "/process-logs",
            .log_parent_fd = session->paths_.tool_output_fd.get(),
            .log_cap_bytes = config.process_log_cap_bytes,
            .first_id = next_process,
            .pids_limit =
                parse_uint(sandbox.pids.empty() ? std::to_string(kDefaultPids) : sandbox.pids, 1,
                           UINT64_MAX)
                    .value_or(kDefaultPids),
            .budget = session->budget_.get()},
        [raw_log](std::string_view type, nlohmann::json fields) {
            // A foreground command's start and end need no fsync of their own: its
            // ToolCompleted is durable and follows within the call. (An adopted command's
            // ProcessAdopted is durable, and so is its end.)
            bool durable = fields.value("background", true);
            raw_log->append(type, std::move(fields), durable);
        });
    return session;
}

Session::~Session() {
    // Processes first: SIGTERM and a grace period, then the worker and its pid namespace.
    processes_.reset();
    if (worker_) {
        worker_->stop();
    }
    if (log_) {
        log_->append("SessionEnded", nlohmann::json::object(), true);
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
    for (const auto& tool : tools_) {
        if (policy_->hidden(tool->name())) {
            continue;  // denied as a whole: the model is not shown what it cannot use
        }
        tools::ToolAnnotations a = tool->annotations();
        out.push_back(mcp::ToolInfo{
            .name = std::string(tool->name()),
            .title = std::string(tool->title()),
            .description = std::string(tool->description()),
            .input_schema = tool->input_schema(),
            .output_schema = structured_content_ ? tool->output_schema() : nlohmann::json(nullptr),
            .annotations = {.read_only_hint = a.read_only,
                            .destructive_hint = a.destructive,
                            .idempotent_hint = a.idempotent,
                            .open_world_hint = a.open_world}});
    }
    return out;
}

mcp::ToolCallResult Session::call_tool(const std::string& name, const nlohmann::json& arguments,
                                       const mcp::CallInfo& info) {
    tools::Tool* tool = nullptr;
    for (const auto& candidate : tools_) {
        if (candidate->name() == name) {
            tool = candidate.get();
        }
    }
    if (tool == nullptr) {
        return mcp::ToolCallResult{.text = "",
                                   .is_error = true,
                                   .meta = nullptr,
                                   .structured = nullptr,
                                   .unknown_tool = true};
    }
    auto log = log::get("exec");
    std::string call_id = fmt::format("{}-{}", sanitize_call_id(info.request_id), ++g_call_counter);
    auto started = std::chrono::steady_clock::now();
    // Durable (fsync'd) events are those that record a change: FileModified inside write and
    // edit, and the completion of a tool that may change files. A read-only call's events reach
    // the disk with the next fsync, which keeps an fsync off the path of every read.
    const bool changes_files = !tool->annotations().read_only;
    log_->append("ToolRequested", {{"call", call_id}, {"tool", name}, {"arguments", arguments}},
                 false);

    tools::ToolResult result;
    std::string note;     // from the gate, for the model, after the tool's output
    PathAliases aliases;  // from the gate: the paths of the call that are symlinks
    tools::ToolContext ctx{.session_id = paths_.id,
                           .call_id = call_id,
                           .ws = worker_.get(),
                           .stamps = &stamps_,
                           .locks = &locks_,
                           .spill = spill_.get(),
                           .events = events_.get(),
                           .processes = processes_.get(),
                           .protected_paths = &protected_,
                           .cancel = info.stop,
                           .progress = info.progress};
    if (auto valid = tools::validate_arguments(*tool, arguments); !valid) {
        result.content = valid.error().message;
        result.is_error = true;
    } else if (auto refused = gate(name, arguments, info, call_id, note, aliases)) {
        result = std::move(*refused);
    } else {
        if (policy_->has_file_rules()) {
            ctx.may_read = [this, &name, &aliases](const std::string& path) {
                return may_read(name, path, aliases);
            };
        }
        log_->append("ToolStarted", {{"call", call_id}, {"tool", name}}, false);
        try {
            result = tool->execute(arguments, ctx);
        } catch (const std::exception& e) {
            SPDLOG_LOGGER_ERROR(log, "tool threw session={} call={} tool={} what={}", paths_.id,
                                call_id, name, e.what());
            result.content = fmt::format(
                "The {} tool failed inside Stockade ({}). This is a bug in "
                "Stockade, not in your input; try a different approach.",
                name, e.what());
            result.is_error = true;
        }
    }
    // Every result, refusals and repair prose included (they quote the model's arguments):
    // bounded, and inert (no control character reaches the model).
    tools::apply_backstop(result, ctx, name);
    if (!note.empty()) {
        result.content += "\n\n" + note;  // ours, short: after the backstop, never cut
    }
    if (const std::string lost = worker_->take_loss_note(); !lost.empty()) {
        result.content += "\n\n" + lost;
    }
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::steady_clock::now() - started)
                  .count();
    if (result.metadata.is_object() && !result.metadata.contains("duration_ms")) {
        result.metadata["duration_ms"] = ms;  // a call refused before the tool ran
    }
    log_->append(result.is_error ? "ToolFailed" : "ToolCompleted",
                 {{"call", call_id},
                  {"tool", name},
                  {"duration_ms", ms},
                  {"is_error", result.is_error},
                  {"content_bytes", result.content.size()},
                  {"metadata", result.metadata}},
                 changes_files);
    // After a large file went through, hand the memory back: sessions idle most of the time.
    if (result.content.size() > (size_t{1} << 20) || ms > 50) {
        (void)::malloc_trim(0);
    }
    SPDLOG_LOGGER_INFO(log, "call done session={} call={} tool={} error={} dur_ms={}", paths_.id,
                       call_id, name, result.is_error, ms);
    // An error result is its text alone: Gemini CLI hands the model the whole result of a
    // failed call, _meta included (the event log above keeps the metadata).
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

std::optional<tools::ToolResult> Session::gate(const std::string& name,
                                               const nlohmann::json& arguments,
                                               const mcp::CallInfo& info,
                                               const std::string& call_id, std::string& note,
                                               PathAliases& aliases) {
    const bool sandbox_network = network_ == "host";
    auto requests =
        policy::tool_requests(name, arguments, session_request_context(workspace_, network_));
    auto refusal = [&](std::string text, const policy::CallDecision* decision) {
        tools::ToolResult r;
        r.content = std::move(text);
        r.is_error = true;
        nlohmann::json meta = {{"decision", "deny"}};
        if (decision != nullptr) {
            meta["decision"] = policy::decision_name(decision->decision);
            if (const auto* o = decision->deciding_outcome(); o != nullptr && o->rule) {
                meta["rule"] = o->rule->text;
                meta["origin"] = o->rule->origin;
            }
        }
        r.metadata = {{"title", fmt::format("{} refused by policy", name)}, {"policy", meta}};
        return r;
    };
    if (!requests) {
        return refusal(requests.error().message, nullptr);
    }
    aliases = add_real_paths(name, *requests);
    {
        std::lock_guard lock(grants_mu_);
        std::erase_if(*requests, [&](const policy::CapabilityRequest& r) {
            return grants_.contains(grant_key(r));
        });
    }
    policy::CallDecision decision = policy_->evaluate(*requests);
    nlohmann::json decided = {
        {"call", call_id}, {"tool", name}, {"decision", policy::decision_name(decision.decision)}};
    if (const auto* o = decision.deciding_outcome()) {
        decided["kind"] = policy::capability_kind_name(o->request.kind);
        decided["reason"] = o->reason;
        if (o->rule) {
            decided["rule"] = o->rule->text;
            decided["origin"] = o->rule->origin;
            decided["layer"] = policy::layer_name(o->rule->layer);
        }
    }
    log_->append("ToolDecided", std::move(decided), decision.decision == policy::Decision::kDeny);

    note = network_note(decision, sandbox_network);
    switch (decision.decision) {
        case policy::Decision::kAllow:
            return std::nullopt;
        case policy::Decision::kDeny:
            return refusal(
                denial_text(decision, policy_->preset(), policy_->mode(), sandbox_network),
                &decision);
        case policy::Decision::kAsk:
            break;
    }
    if (!info.elicit) {
        // Nobody can be asked: the operator's --ask-fallback decides (deny unless told).
        log_->append("ToolAnswered",
                     {{"call", call_id},
                      {"tool", name},
                      {"action", "fallback"},
                      {"decision", ask_fallback_allow_ ? "allow" : "deny"}},
                     true);
        if (ask_fallback_allow_) {
            return std::nullopt;
        }
        return refusal(ask_unavailable_text(decision, policy_->preset(), sandbox_network),
                       &decision);
    }
    AskPrompt prompt = ask_prompt(name, arguments, decision, policy_->preset());
    log_->append("ToolAsked", {{"call", call_id}, {"tool", name}, {"message", prompt.message}},
                 false);
    auto answer = info.elicit(mcp::ElicitRequest{.message = prompt.message,
                                                 .requested_schema = prompt.schema,
                                                 .timeout = std::chrono::minutes(10)});
    if (!answer && info.stop.stop_requested()) {
        // Cancelled, or (2026-07-28) the question went back to the client, which will retry
        // the call with the answer: nothing was answered yet.
        return refusal(declined_text(decision, "cancel"), &decision);
    }
    std::string action = answer ? answer->action : std::string("error");
    std::string choice;
    if (answer && answer->action == "accept" && answer->content.is_object()) {
        choice = answer->content.value("decision", "");
    }
    log_->append("ToolAnswered",
                 {{"call", call_id},
                  {"tool", name},
                  {"action", action},
                  {"decision", choice},
                  {"error", answer ? std::string() : answer.error().message}},
                 true);
    if (choice == "once" || choice == "session") {
        if (choice == "session") {
            std::lock_guard lock(grants_mu_);
            for (const auto& outcome : decision.outcomes) {
                if (outcome.decision == policy::Decision::kAsk) {
                    grants_.insert(grant_key(outcome.request));
                }
            }
        }
        return std::nullopt;
    }
    return refusal(declined_text(decision, choice == "deny" ? "deny" : action), &decision);
}

Session::PathAliases Session::add_real_paths(const std::string& tool,
                                             std::vector<policy::CapabilityRequest>& requests) {
    static constexpr std::array<std::string_view, 5> kFileTools = {"read", "write", "edit", "grep",
                                                                   "glob"};
    PathAliases aliases;
    if (std::find(kFileTools.begin(), kFileTools.end(), tool) == kFileTools.end() ||
        !policy_->has_file_rules()) {
        return aliases;
    }
    const size_t given = requests.size();
    for (size_t i = 0; i < given; ++i) {
        const policy::CapabilityRequest& request = requests[i];
        if (request.kind != policy::CapabilityKind::kFileRead &&
            request.kind != policy::CapabilityKind::kFileWrite) {
            continue;
        }
        std::string relative;
        if (request.path.starts_with(workspace_ + "/")) {
            relative = request.path.substr(workspace_.size() + 1);
        } else if (request.path != workspace_) {
            continue;  // a symlink cannot lead out of the workspace: no other root to resolve
        }
        // Where the name leads in the worker's view; if the worker cannot say, the tool's own
        // access meets the same resolution and fails the same way.
        auto real = worker_->real_path(workspace::Root::kWorkspace, relative);
        if (!real || real->path == relative) {
            continue;
        }
        policy::CapabilityRequest through = request;
        through.path = real->path.empty() ? workspace_ : workspace_ + "/" + real->path;
        through.reason = fmt::format("{} leads there through a symlink", request.path);
        aliases.emplace_back(request.path, through.path);
        requests.push_back(std::move(through));
    }
    return aliases;
}

bool Session::may_read(const std::string& tool, const std::string& path,
                       const PathAliases& aliases) {
    auto allowed = [&](const std::string& p) {
        const policy::CapabilityRequest request{
            .kind = policy::CapabilityKind::kFileRead, .tool = tool, .path = p};
        const policy::RequestOutcome outcome = policy_->evaluate_one(request);
        if (outcome.decision == policy::Decision::kAllow) {
            return true;
        }
        std::lock_guard lock(grants_mu_);
        return outcome.decision == policy::Decision::kAsk && grants_.contains(grant_key(request));
    };
    if (!allowed(path)) {
        return false;
    }
    // Found beneath a search root that is a symlink: the file's own path is beneath its target.
    for (const auto& [given, real] : aliases) {
        if (path.starts_with(given + "/") && !allowed(real + path.substr(given.size()))) {
            return false;
        }
    }
    return true;
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
