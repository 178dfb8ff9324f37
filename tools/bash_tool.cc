// bash (TOOL_PROTOCOL §7, DESIGN.md §7): one command in the session sandbox, waited on in the
// foreground. Plain-word commands run directly, anything else through /bin/bash -c. The output
// is rendered for the model (escapes stripped, progress bars collapsed) and cut middle-out at
// 400 lines / 30 KB with the marker pointing at the process's log, which keeps every raw byte.
//
// Edges:
// - Time ceiling: the command is not killed; the ProcessManager adopts it as a background
//   process (pN) and the read cursor is set just past the output shown, so `process read`
//   continues exactly where this result stopped.
// - Cancellation: the process group is killed (a foreground command was meant to be short).
// - A program that does not exist: kNotFound from start (direct exec), or bash's own
//   "bash: line 1: npmm: command not found" as the whole output of an exit 127 → is_error
//   "Command failed to start: …" with the closest executable on PATH as a suggestion.
// - Background jobs the command left holding its output are stopped, and the result says so.
// - A non-zero exit is not an error result: the model reads the failing output as usual.
#include <algorithm>

#include <fmt/format.h>

#include "policy/bash_analysis.h"
#include "policy/requests.h"
#include "tools/process_manager.h"
#include "tools/process_output.h"
#include "tools/process_tools.h"
#include "tools/shell_command.h"
#include "tools/text.h"
#include "tools/tool_support.h"

namespace stockade::tools {
namespace {

using std::chrono::milliseconds;

constexpr int64_t kDefaultTimeoutMs = 120'000;
constexpr int64_t kMaxTimeoutMs = 300'000;
constexpr milliseconds kCancelGrace{2000};

constexpr std::string_view kDescription =
    "Run a shell command in the workspace and wait for it to finish. Use this for short-lived "
    "commands: builds, tests, git, package scripts, file operations. Do NOT use it for "
    "long-running processes such as dev servers, watchers or REPLs \u2014 start those with the "
    "process tool so they keep running in the background while you work. Commands run "
    "non-interactively (no stdin: anything that prompts fails instead of waiting) in the "
    "workspace root; use the workdir parameter instead of 'cd'. stdout and stderr are returned "
    "interleaved, followed by the exit code; long output keeps its first and last lines and "
    "names a log file with all of it. If the command is still running when timeout_ms is "
    "reached, it is not killed: it moves to the background process manager and you get its "
    "process id and the output so far. Quote paths that contain spaces.";

constexpr WindowLimits kLimits{
    .max_lines = 400, .max_bytes = size_t{30} * 1024, .head_lines = 250, .tail_lines = 150};

std::string invalid_input(std::string_view what) {
    return fmt::format(
        "Invalid input for tool \"bash\": {}. Please rewrite the input so it satisfies the "
        "expected schema.",
        what);
}

// What a command's log lacks when the disk budget ran out as it was written (the log says
// where): none of the output, its end, or the middle between its start and its tail.
std::string log_dropped_note(const ProcessInfo& info) {
    constexpr std::string_view kWhy =
        "the disk budget for this session's logs and spilled results ran out";
    if (info.log_end_dropped && info.log_dropped >= info.output_bytes) {
        return fmt::format(
            "Note: the full output's log holds none of it ({}): what is shown here is all that "
            "was kept.",
            kWhy);
    }
    return fmt::format("Note: the full output's log lacks {} from its {} ({}); it keeps the {}.",
                       format_size(info.log_dropped), info.log_end_dropped ? "end" : "middle", kWhy,
                       info.log_end_dropped ? "start only" : "start and the end");
}

std::string lower_first(std::string s) {
    if (!s.empty() && s[0] >= 'A' && s[0] <= 'Z') {
        s[0] = static_cast<char>(s[0] - 'A' + 'a');
    }
    return s;
}

struct BashArgs {
    std::string command{};
    std::optional<int64_t> timeout_ms{};
    std::optional<std::string> workdir{};
};

class BashTool final : public TypedTool<BashArgs> {
public:
    BashTool()
        : TypedTool(ToolSpec{.name = "bash",
                             .title = "Run command",
                             .description = std::string(kDescription),
                             .input_schema = input_schema_json(),
                             .output_schema = metadata_schema_json(),
                             .annotations = hints()}) {}

private:
    static nlohmann::json input_schema_json() {
        return {
            {"type", "object"},
            {"properties",
             {
                 {"command",
                  {{"type", "string"}, {"description", "The shell command to execute."}}},
                 {"timeout_ms",
                  {{"type", "integer"},
                   {"description",
                    "Time budget in milliseconds before the command is moved to the background. "
                    "Default 120000, maximum 300000."}}},
                 {"workdir",
                  {{"type", "string"},
                   {"description",
                    "Working directory for the command. Defaults to the workspace root. Use this "
                    "instead of 'cd'."}}},
             }},
            {"required", {"command"}},
            {"additionalProperties", false},
        };
    }
    static nlohmann::json metadata_schema_json() {
        return metadata_schema({{"command", of_type("string")},
                                {"shell_kind", of_type("string")},
                                {"cwd", of_type("string")},
                                {"timeout_ms", of_type("integer")},
                                {"exit_code", nullable("integer")},
                                {"signal", nullable("string")},
                                {"semantic_status", nullable("string")},
                                {"semantic_message", nullable("string")},
                                {"warning", nullable("string")},
                                {"runtime_ms", of_type("integer")},
                                {"timed_out", of_type("boolean")},
                                {"auto_backgrounded", of_type("boolean")},
                                {"process_id", nullable("string")},
                                {"pid", nullable("integer")},
                                {"output_lines", of_type("integer")},
                                {"output_bytes", of_type("integer")},
                                {"truncated", of_type("boolean")},
                                {"truncated_bytes", of_type("integer")},
                                {"spill_path", nullable("string")},
                                {"log_path", nullable("string")}});
    }
    static ToolAnnotations hints() {
        return {.read_only = false, .destructive = true, .idempotent = false, .open_world = true};
    }

    [[nodiscard]] BashArgs read_args(const nlohmann::json& json) const override {
        return BashArgs{.command = arg_string(json, "command"),
                        .timeout_ms = opt_int(json, "timeout_ms"),
                        .workdir = opt_string(json, "workdir")};
    }

    [[nodiscard]] std::vector<policy::CapabilityRequest> capabilities(
        const BashArgs& args, const policy::RequestContext& where) const override {
        policy::RequestContext at = where;
        if (args.workdir && !trim(*args.workdir).empty()) {
            at.cwd = policy::normalise_path(*args.workdir, policy::request_base(where));
        }
        return policy::bash_requests(args.command, at, "bash");
    }

    [[nodiscard]] std::vector<std::string> warnings(const BashArgs& args) const override {
        return policy::destructive_warnings(args.command);
    }
    // What every path through run() shares.
    struct Call {
        std::string command;
        std::string short_command;  // for titles and progress
        ShellPlan plan;
        workspace::ResolvedPath dir;
        milliseconds timeout{kDefaultTimeoutMs};
        std::vector<std::string> warnings;
        nlohmann::json meta;
    };

    ToolResult run(const BashArgs& args, ToolContext& ctx) const override {
        Call call;
        call.command = args.command;
        if (trim(call.command).empty()) {
            return error_result(
                "command is empty. Give the shell command to run, e.g. \"npm test\".");
        }
        call.short_command = one_line(call.command, 50);
        bool clamped = false;
        if (const std::optional<int64_t> t = args.timeout_ms) {
            if (*t <= 0) {
                return error_result(invalid_input(
                    fmt::format("parameter \"timeout_ms\" must be a positive number of "
                                "milliseconds (default {}, maximum {}), not {}",
                                kDefaultTimeoutMs, kMaxTimeoutMs, *t)));
            }
            clamped = *t > kMaxTimeoutMs;
            call.timeout = milliseconds(std::min(*t, kMaxTimeoutMs));
        }
        if (ctx.processes == nullptr) {
            return error_result("bash is not available in this session (no process manager).");
        }
        call.dir = workspace_root(ctx);
        if (const std::optional<std::string>& workdir = args.workdir;
            workdir && !trim(*workdir).empty()) {
            Result<workspace::ResolvedPath> dir = resolve_workdir(ctx, *workdir);
            if (!dir) {
                return error_result(dir.error().message);
            }
            call.dir = *dir;
        }
        call.plan = plan_command(call.command);
        call.warnings = policy::destructive_warnings(call.command);
        call.meta = {
            {"title", fmt::format("Run {}", call.short_command)},
            {"command", call.command},
            {"shell_kind", shell_kind_name(call.plan.kind)},
            {"cwd", call.dir.display},
            {"timeout_ms", call.timeout.count()},
            {"exit_code", nullptr},
            {"signal", nullptr},
            {"semantic_status", nullptr},
            {"semantic_message", nullptr},
            {"warning", call.warnings.empty()
                            ? nlohmann::json(nullptr)
                            : nlohmann::json(fmt::format("{}", fmt::join(call.warnings, "; ")))},
            {"runtime_ms", 0},
            {"timed_out", false},
            {"auto_backgrounded", false},
            {"process_id", nullptr},
            {"pid", nullptr},
            {"output_lines", 0},
            {"output_bytes", 0},
            {"truncated", false},
            {"truncated_bytes", 0},
            {"spill_path", nullptr},
            {"log_path", nullptr},
        };
        if (clamped) {
            call.meta["timeout_clamped"] = true;
        }

        ProcessManager& pm = *ctx.processes;
        StartRequest req;
        req.command = call.command;
        req.argv = call.plan.argv;
        req.cwd = call.dir.relative;
        req.cwd_display = call.dir.display;
        // Pipes, not a PTY: a PTY moves ~23 MB/s on Linux 6.x (n_tty hands out ~1 KB per read),
        // a pipe over 1 GB/s, and build logs are large. command_env() keeps tools from waiting
        // on a terminal; `process` is the tool that gives one.
        req.pty = false;
        req.interactive = false;
        req.background = false;
        req.env = command_env();
        req.call_id = ctx.call_id;
        Result<ProcessInfo> started = pm.start(req);
        if (!started) {
            return start_failed(ctx, call, started.error());
        }
        const std::string id = started->id;
        call.meta["pid"] = started->pid;
        call.meta["log_path"] = started->log_path;

        double last_progress = 0;
        const auto tick = [&](const ProcessInfo& now) {
            if (!ctx.progress) {
                return;
            }
            double secs = static_cast<double>(now.runtime.count()) / 1000.0;
            if (secs <= last_progress) {
                secs = last_progress + 0.001;
            }
            last_progress = secs;
            ctx.progress(secs, std::nullopt,
                         fmt::format("Running {} \u00b7 {}s", call.short_command,
                                     static_cast<int64_t>(secs)));
        };
        const auto deadline = std::chrono::steady_clock::now() + call.timeout;
        Result<ProcessInfo> waited = pm.wait_exit(id, deadline, ctx.cancel, tick);
        if (!waited) {
            (void)pm.kill(id);
            pm.forget(id);
            return error_result(
                fmt::format("Command failed while running: {}. Its output so far is in {}.",
                            waited.error().message, started->log_path),
                call.meta);
        }
        const ProcessInfo& info = *waited;
        if (info.state == ProcessState::kRunning) {
            if (ctx.cancel.stop_requested()) {
                return cancelled(pm, id, call);
            }
            return moved_to_background(pm, id, info, call);
        }
        return finished(ctx, id, info, call);
    }

    static Result<workspace::ResolvedPath> resolve_workdir(ToolContext& ctx,
                                                           const std::string& input) {
        ASSIGN_OR_RETURN(workspace::ResolvedPath dir, resolve_tool_path(ctx, input));
        if (dir.root != workspace::Root::kWorkspace) {
            return Error{Errc::kPermissionDenied,
                         fmt::format("workdir {} is in the read-only directory of saved tool "
                                     "outputs; commands run inside the workspace ({}). Choose a "
                                     "directory inside the workspace, or omit workdir.",
                                     dir.display, ctx.ws->root_path(workspace::Root::kWorkspace))};
        }
        Result<workspace::FileInfo> st = ctx.ws->stat(dir.root, dir.relative);
        if (!st) {
            if (st.error().code == Errc::kNotFound) {
                return Error{Errc::kNotFound,
                             not_found_message(ctx, dir, "Directory",
                                               "Omit workdir to run in the workspace root.")};
            }
            return Error{st.error().code, io_failure("use", dir.display, st.error())};
        }
        if (st->type != workspace::FileType::kDirectory) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("workdir {} is not a directory. Use the directory that "
                                     "contains it, or omit workdir to run in the workspace root.",
                                     dir.display)};
        }
        return dir;
    }

    // "Command failed to start: npmm: command not found. Did you mean "npm"?"
    static ToolResult spawn_failure(ToolContext& ctx, Call& call, const std::string& program,
                                    const std::string& reason) {
        std::string content =
            fmt::format("Command failed to start: {}: {}.", sanitize_utf8(program), reason);
        if (reason == "command not found") {
            std::optional<std::string> guess;
            if (Result<std::vector<std::string>> path = ctx.processes->path_commands()) {
                guess = suggest_command(program, *path);
            }
            if (guess) {
                content += fmt::format(" Did you mean \"{}\"?", *guess);
            } else {
                content += " Check the spelling; the program may not be installed in the sandbox.";
            }
        }
        call.meta["title"] = fmt::format("Run {} \u00b7 failed to start", call.short_command);
        call.meta["semantic_status"] = "error";
        call.meta["semantic_message"] = fmt::format("{}: {}", program, reason);
        return error_result(std::move(content), std::move(call.meta));
    }

    static ToolResult start_failed(ToolContext& ctx, Call& call, const Error& error) {
        if (error.code == Errc::kNotFound) {
            const std::string program = call.plan.kind == ShellKind::kDirect
                                            ? call.plan.argv.front()
                                            : first_program_word(call.command);
            std::string reason = "command not found";
            if (const std::string prefix = program + ": "; error.message.starts_with(prefix)) {
                reason = error.message.substr(prefix.size());
            }
            return spawn_failure(ctx, call, program, reason);
        }
        call.meta["title"] = fmt::format("Run {} \u00b7 failed to start", call.short_command);
        if (out_of_processes(error)) {
            return error_result(
                fmt::format("Command failed to start: no room for another process. {}",
                            process_limit_message(*ctx.processes)),
                std::move(call.meta));
        }
        if (error.code == Errc::kResourceExhausted) {
            return error_result(
                fmt::format("Command failed to start: {}. Stop background processes you no "
                            "longer need (process {{\"action\":\"list\"}} shows them) and try "
                            "again.",
                            error.message),
                std::move(call.meta));
        }
        return error_result(fmt::format("Command failed to start: {}.", error.message),
                            std::move(call.meta));
    }

    static ToolResult cancelled(ProcessManager& pm, const std::string& id, Call& call) {
        (void)pm.kill(id);
        Result<ProcessInfo> after = pm.wait_exit(
            id, std::chrono::steady_clock::now() + kCancelGrace, std::stop_token{}, {});
        const milliseconds ran = after ? after->runtime : milliseconds(0);
        pm.forget(id);
        call.meta["title"] = fmt::format("Run {} \u00b7 cancelled", call.short_command);
        call.meta["runtime_ms"] = ran.count();
        call.meta["semantic_status"] = "signal";
        call.meta["cancelled"] = true;
        if (after && after->signal) {
            call.meta["signal"] = signal_name(*after->signal);
        }
        return error_result(
            fmt::format("Command cancelled: {} was killed (with its whole process group) after "
                        "{}.",
                        call.short_command, format_duration(ran)),
            std::move(call.meta));
    }

    static void record_window(Call& call, const ProcessInfo& info, const OutputWindow& w) {
        call.meta["output_lines"] = info.output_lines;
        call.meta["output_bytes"] = info.output_bytes;
        call.meta["truncated"] = w.truncated;
        call.meta["truncated_bytes"] = w.omitted_bytes;
        if (w.truncated) {
            call.meta["spill_path"] = info.log_path;
            call.meta["truncation"] = w.info.to_json();
        }
    }

    static ToolResult moved_to_background(ProcessManager& pm, const std::string& fg_id,
                                          const ProcessInfo& waited, Call& call) {
        Result<std::string> adopted = pm.adopt(fg_id);
        if (!adopted) {
            (void)pm.kill(fg_id);
            pm.forget(fg_id);
            return error_result(
                fmt::format("Command still running after {} and it could not be moved to the "
                            "background ({}), so it was stopped. Output so far is in {}.",
                            format_timeout(call.timeout), adopted.error().message, waited.log_path),
                std::move(call.meta));
        }
        const std::string& id = *adopted;
        const ProcessInfo info = pm.info(id).value_or(waited);
        Result<OutputWindow> window =
            output_window(pm, id, info.output_bytes, info.output_lines, kLimits, info.log_path);
        std::string shown;
        if (window) {
            shown = window->text.empty() ? "(no output yet)" : window->text;
            record_window(call, info, *window);
        } else {
            shown = fmt::format("(the output could not be read: {}; it is in {})",
                                window.error().message, info.log_path);
        }
        // A later `process read` continues right after what this result showed.
        (void)pm.set_cursor(id, info.output_bytes);

        call.meta["title"] =
            fmt::format("Run {} \u00b7 moved to background as {}", call.short_command, id);
        call.meta["timed_out"] = true;
        call.meta["auto_backgrounded"] = true;
        call.meta["process_id"] = id;
        call.meta["runtime_ms"] = info.runtime.count();
        call.meta["log_path"] = info.log_path;
        ToolResult r;
        r.content = fmt::format(
            "Command still running after {} \u2014 moved to background as process {}.\n"
            "Output so far:\n{}\n"
            "Use process {{\"action\":\"read\",\"id\":\"{}\"}} to see new output, "
            "{{\"action\":\"wait\",\"id\":\"{}\"}} to wait for it to finish, or "
            "{{\"action\":\"stop\",\"id\":\"{}\"}} to stop it.",
            format_timeout(call.timeout), id, shown, id, id, id);
        r.metadata = std::move(call.meta);
        return r;
    }

    static ToolResult finished(ToolContext& ctx, const std::string& id, const ProcessInfo& info,
                               Call& call) {
        ProcessManager& pm = *ctx.processes;
        Result<OutputWindow> window =
            output_window(pm, id, info.output_bytes, info.output_lines, kLimits, info.log_path);
        pm.forget(id);

        call.meta["runtime_ms"] = info.runtime.count();
        call.meta["log_path"] = info.log_path;
        if (info.exit_code) {
            call.meta["exit_code"] = *info.exit_code;
        }
        if (info.signal) {
            call.meta["signal"] = signal_name(*info.signal);
        }
        if (info.state == ProcessState::kFailed) {
            call.meta["title"] = fmt::format("Run {} \u00b7 failed", call.short_command);
            call.meta["semantic_status"] = "error";
            return error_result(
                fmt::format("The command could not finish: {}. Its output so far is in {}.",
                            info.failure.empty() ? "the sandbox lost it" : info.failure,
                            info.log_path),
                std::move(call.meta));
        }

        std::string output;
        if (window) {
            output = window->text;
            record_window(call, info, *window);
        } else {
            output = fmt::format("(the output could not be read: {}; it is in {})",
                                 window.error().message, info.log_path);
        }

        // bash's own "command not found" for the program of a shell command.
        if (call.plan.kind == ShellKind::kBash && info.exit_code == 127 && window &&
            !window->truncated) {
            const std::string program = first_program_word(call.command);
            if (std::optional<std::string> reason = bash_spawn_failure(output, program)) {
                return spawn_failure(ctx, call, program, *reason);
            }
        }

        const SemanticStatus semantic = semantic_status(call.command, info.exit_code, info.signal);
        call.meta["semantic_status"] = semantic.status;
        if (!semantic.message.empty()) {
            call.meta["semantic_message"] = semantic.message;
        }

        const std::string duration = format_duration(info.runtime);
        std::string outcome;
        std::string title_outcome;
        if (info.signal) {
            outcome = fmt::format("killed by {}", signal_name(*info.signal));
            title_outcome = outcome;
        } else if (info.exit_code) {
            outcome = fmt::format("exit code {}", *info.exit_code);
            if (!semantic.message.empty()) {
                outcome += fmt::format(" ({})", lower_first(semantic.message));
            }
            title_outcome = fmt::format("exit {}", *info.exit_code);
        } else {
            outcome = std::string(process_state_name(info.state));
            title_outcome = outcome;
        }
        call.meta["title"] =
            fmt::format("Run {} \u00b7 {} \u00b7 {}", call.short_command, title_outcome, duration);

        ToolResult r;
        r.content = output.empty() ? "(no output)" : output;
        r.content +=
            fmt::format("\n[{} \u00b7 {} \u00b7 cwd {}]", outcome, duration, call.dir.display);
        if (info.log_dropped > 0) {
            call.meta["log_dropped_bytes"] = info.log_dropped;
            call.meta["log_end_dropped"] = info.log_end_dropped;
            r.content += "\n" + log_dropped_note(info);
        }
        if (info.leftovers > 0) {
            call.meta["leftovers_stopped"] = info.leftovers;
            call.meta["leftover_names"] = info.leftover_names;
            r.content += fmt::format(
                "\nStopped {} this command left running{}: nothing outlives its bash call. Start "
                "servers and watchers with the process tool.",
                count_of(info.leftovers, "process", "processes"), leftover_list(info));
        }
        if (!info.network_refused.empty()) {
            call.meta["network_refused"] = network_refusals_json(info.network_refused);
            r.content += "\n" + network_refusals_line(info.network_refused);
        }
        if (!call.warnings.empty()) {
            r.content +=
                fmt::format("\nWarning: this command {}. It has run; check that this was intended.",
                            fmt::join(call.warnings, " and "));
        }
        if (const std::string note = protected_paths_note(ctx, output); !note.empty()) {
            r.content += "\n" + note;
        }
        r.metadata = std::move(call.meta);
        return r;
    }
};

}  // namespace

std::unique_ptr<Tool> make_bash_tool() {
    return std::make_unique<BashTool>();
}

}  // namespace stockade::tools
