// process (TOOL_PROTOCOL §8, DESIGN.md §7): background processes of the session — start, list,
// read, write, stop, and wait (block until exit or 30 s). Commands run through /bin/bash -c on
// a PTY that is also their stdin, in the workspace root. The output shown is rendered as bash
// renders it; the log (ProcessInfo::log_path) keeps every raw byte.
//
// Edges:
// - The read cursor moves only past what a result showed: read without offset, start, write
//   and wait advance it; read with an offset re-reads from that line and leaves it alone.
// - Pages are capped at 300 lines / 20 KB; when more remains the result says how to continue.
// - write shows the output since the earlier of the cursor and the moment of the write, so
//   nothing unread is skipped.
// - Foreground processes of a running bash call are not addressable: only listed ids are.
// - read, wait and stop still work after a process ended (its output stays); write does not.
#include <algorithm>
#include <csignal>
#include <map>

#include <fmt/format.h>

#include "policy/bash_analysis.h"
#include "policy/requests.h"
#include "tools/process_manager.h"
#include "tools/process_output.h"
#include "tools/process_tools.h"
#include "tools/text.h"
#include "tools/tool_support.h"

namespace stockade::tools {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr milliseconds kStartWait{2000};
constexpr milliseconds kStartSettle{200};
constexpr milliseconds kWriteWait{500};
constexpr milliseconds kWriteSettle{100};
constexpr milliseconds kStopGrace{3000};
constexpr milliseconds kWaitFor{30'000};
constexpr milliseconds kDrain{500};
constexpr size_t kPageLines = 300;
constexpr size_t kPageBytes = size_t{20} * 1024;

constexpr std::string_view kDescription =
    "Manage long-running background processes: dev servers, watchers, REPLs, anything that "
    "should keep running while you continue working. Actions: 'start' launches a command "
    "(through bash, in the workspace root, on a terminal) and returns its process id with up to "
    "2 s of its first output; 'list' shows all managed processes with their status; 'read' "
    "returns the output produced since your last read (at most 300 lines per call; read again "
    "for more), or from line 'offset' if given (re-reading with offset does not change what "
    "counts as read); 'write' sends text to the process's stdin (include \\n to submit a line) "
    "and shows the response; 'wait' blocks until the process exits or 30 s pass and returns "
    "its new output; 'stop' terminates the process and its children. Background processes keep "
    "running while you edit files and run other commands \u2014 start a server, keep working, "
    "then read its output to check on it. They survive user interruptions but end when the "
    "session ends. Do not use this for short commands; use bash.";

std::string invalid_input(std::string_view what) {
    return fmt::format(
        "Invalid input for tool \"process\": {}. Please rewrite the input so it satisfies the "
        "expected schema.",
        what);
}

std::string json_action(std::string_view action, std::string_view id) {
    return fmt::format(R"({{"action":"{}","id":"{}"}})", action, id);
}

// Code points, for aligning columns.
size_t display_width(std::string_view s) {
    return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) {
        return (static_cast<unsigned char>(c) & 0xC0U) != 0x80U;
    }));
}

std::string pad(std::string_view s, size_t width) {
    std::string out(s);
    const size_t w = display_width(s);
    if (w < width) {
        out.append(width - w, ' ');
    }
    return out;
}

bool ended(const ProcessInfo& info) {
    return info.state != ProcessState::kRunning;
}

// "exit 0", "SIGKILL", "failed": the short outcome for titles.
std::string short_outcome(const ProcessInfo& info) {
    if (info.state == ProcessState::kRunning) {
        return "running";
    }
    if (info.state == ProcessState::kFailed) {
        return "failed";
    }
    if (info.signal) {
        return fmt::format("{} {}", process_state_name(info.state), signal_name(*info.signal));
    }
    if (info.exit_code) {
        return fmt::format("{} {}", process_state_name(info.state), *info.exit_code);
    }
    return std::string(process_state_name(info.state));
}

nlohmann::json base_meta(std::string_view action) {
    return {
        {"action", action},  {"process_id", nullptr}, {"status", nullptr},   {"exit_code", nullptr},
        {"signal", nullptr}, {"new_lines", 0},        {"log_path", nullptr}, {"pid", nullptr},
    };
}

// The connections the proxy refused the process so far, after a result's text (and in its
// metadata, through describe).
void append_network_refusals(ToolResult& r, const ProcessInfo& info) {
    if (const std::string line = network_refusals_line(info.network_refused); !line.empty()) {
        r.content += "\n" + line;
    }
}

void describe(nlohmann::json& meta, const ProcessInfo& info) {
    if (!info.network_refused.empty()) {
        meta["network_refused"] = network_refusals_json(info.network_refused);
    }
    meta["process_id"] = info.id;
    meta["status"] = process_state_name(info.state);
    meta["exit_code"] = info.exit_code ? nlohmann::json(*info.exit_code) : nlohmann::json(nullptr);
    meta["signal"] =
        info.signal ? nlohmann::json(signal_name(*info.signal)) : nlohmann::json(nullptr);
    meta["log_path"] = info.log_path;
    meta["pid"] = info.pid;
    meta["runtime_ms"] = info.runtime.count();
}

// "[12 more lines (3.1 KB) not shown yet: …]" after a capped page.
std::string more_note(const OutputPage& page, bool by_offset, const ProcessInfo& info) {
    if (page.remaining_bytes == 0) {
        return {};
    }
    const std::string what =
        fmt::format("{} ({})", count_of(page.remaining_lines, "more line", "more lines"),
                    format_size(page.remaining_bytes));
    if (by_offset) {
        return fmt::format(
            "\n[{} not shown: use offset={} to continue, or read or grep the full log {}.]", what,
            page.last_line + 1, info.log_path);
    }
    return fmt::format(
        "\n[{} not shown yet: read again to continue, or read or grep the full log {}.]", what,
        info.log_path);
}

struct ProcessArgs {
    std::string action{};
    std::optional<std::string> command{};
    std::optional<std::string> id{};
    std::optional<std::string> input{};
    std::optional<int64_t> offset{};
};

class ProcessTool final : public TypedTool<ProcessArgs> {
public:
    ProcessTool()
        : TypedTool(ToolSpec{.name = "process",
                             .title = "Manage background processes",
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
                 {"action",
                  {{"type", "string"},
                   {"enum", {"start", "list", "read", "write", "stop", "wait"}},
                   {"description", "The operation to perform."}}},
                 {"command",
                  {{"type", "string"},
                   {"description", "Shell command to launch. Required for 'start'."}}},
                 {"id",
                  {{"type", "string"},
                   {"description",
                    "Process id, e.g. \"p3\". Required for 'read', 'write', 'stop', 'wait'."}}},
                 {"input",
                  {{"type", "string"},
                   {"description",
                    "Text to send to stdin. Required for 'write'. End with \\n to submit a "
                    "line."}}},
                 {"offset",
                  {{"type", "integer"},
                   {"description",
                    "For 'read': 1-based output line to read from, instead of 'new output since "
                    "last read'."}}},
             }},
            {"required", {"action"}},
            {"additionalProperties", false},
        };
    }
    static nlohmann::json metadata_schema_json() {
        return metadata_schema({{"action", of_type("string")},
                                {"process_id", nullable("string")},
                                {"status", nullable("string")},
                                {"command", of_type("string")},
                                {"exit_code", nullable("integer")},
                                {"signal", nullable("string")},
                                {"pid", nullable("integer")},
                                {"log_path", nullable("string")},
                                {"runtime_ms", of_type("integer")},
                                {"new_lines", of_type("integer")},
                                {"first_line", of_type("integer")},
                                {"last_line", of_type("integer")},
                                {"total_lines", of_type("integer")},
                                {"bytes_sent", of_type("integer")},
                                {"processes", of_type("array")}});
    }
    static ToolAnnotations hints() {
        return {.read_only = false, .destructive = true, .idempotent = false, .open_world = true};
    }

    [[nodiscard]] ProcessArgs read_args(const nlohmann::json& json) const override {
        return ProcessArgs{.action = arg_string(json, "action"),
                           .command = opt_string(json, "command"),
                           .id = opt_string(json, "id"),
                           .input = opt_string(json, "input"),
                           .offset = opt_int(json, "offset")};
    }

    [[nodiscard]] std::vector<policy::CapabilityRequest> capabilities(
        const ProcessArgs& args, const policy::RequestContext& where) const override {
        if (args.action == "start") {
            return policy::bash_requests(args.command.value_or(""), where, "process");
        }
        // Every other action needs nothing but the tool: only whole-tool Process rules match.
        return {policy::CapabilityRequest{
            .kind = policy::CapabilityKind::kTool, .tool = "process", .command = args.action}};
    }

    [[nodiscard]] std::vector<std::string> warnings(const ProcessArgs& args) const override {
        return args.action == "start" && args.command ? policy::destructive_warnings(*args.command)
                                                      : std::vector<std::string>{};
    }
    ToolResult run(const ProcessArgs& args, ToolContext& ctx) const override {
        const std::string& action = args.action;
        if (ctx.processes == nullptr) {
            return error_result("process is not available in this session (no process manager).");
        }
        if (action == "start") {
            return start(ctx, args);
        }
        if (action == "list") {
            return list(ctx);
        }
        const std::optional<std::string>& id = args.id;
        if (!id || trim(*id).empty()) {
            return error_result(invalid_input(
                fmt::format(R"(parameter "id" is required for action "{}")", action)));
        }
        nlohmann::json meta = base_meta(action);
        Result<ProcessInfo> info = lookup(ctx, std::string(trim(*id)), meta);
        if (!info) {
            return error_result(info.error().message, std::move(meta));
        }
        if (action == "read") {
            return read(ctx, args, *info, std::move(meta));
        }
        if (action == "write") {
            return write(ctx, args, *info, std::move(meta));
        }
        if (action == "stop") {
            return stop(ctx, *info, std::move(meta));
        }
        if (action == "wait") {
            return wait(ctx, *info, std::move(meta));
        }
        return error_result(invalid_input(fmt::format(
            "parameter \"action\" must be one of \"start\", \"list\", \"read\", \"write\", "
            "\"stop\", \"wait\", not \"{}\"",
            action)));
    }

    // A listed (background) process, or the model-facing "No process" message.
    static Result<ProcessInfo> lookup(ToolContext& ctx, const std::string& id,
                                      nlohmann::json& meta) {
        meta["process_id"] = id;
        Result<ProcessInfo> info = ctx.processes->info(id);
        if (info && info->background) {
            return info;
        }
        if (!info && info.error().code != Errc::kNotFound) {
            return Error{info.error().code, fmt::format("Cannot look up process \"{}\": {}.", id,
                                                        info.error().message)};
        }
        const std::vector<ProcessInfo> all = ctx.processes->list();
        std::string msg = fmt::format("No process \"{}\".", sanitize_utf8(id));
        std::string lowered = id;
        std::transform(lowered.begin(), lowered.end(), lowered.begin(), [](char c) {
            return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        });
        for (const ProcessInfo& p : all) {
            if (p.id != id && (p.id == lowered || p.id == "p" + lowered)) {
                msg += fmt::format(" Did you mean \"{}\"?", p.id);
                break;
            }
        }
        std::vector<std::string> active;
        for (const ProcessInfo& p : all) {
            if (p.state == ProcessState::kRunning) {
                active.push_back(fmt::format("{} ({}, running)", p.id, one_line(p.command, 40)));
            }
        }
        if (!active.empty()) {
            msg += fmt::format(" Active: {}.", fmt::join(active, ", "));
        } else if (!all.empty()) {
            msg += " No background process is running now.";
        }
        if (all.empty()) {
            msg +=
                " No background process has been started in this session. Start one with "
                "{\"action\":\"start\",\"command\":\"…\"}.";
        } else {
            msg += R"( Use {"action":"list"} to see all.)";
        }
        meta["title"] = fmt::format("Process {} \u00b7 unknown id", sanitize_utf8(id));
        return Error{Errc::kNotFound, std::move(msg)};
    }

    static ToolResult start(ToolContext& ctx, const ProcessArgs& args) {
        nlohmann::json meta = base_meta("start");
        const std::optional<std::string>& command = args.command;
        if (!command) {
            return error_result(invalid_input("parameter \"command\" is required for action "
                                              "\"start\""),
                                std::move(meta));
        }
        if (trim(*command).empty()) {
            return error_result(
                invalid_input(R"(parameter "command" must not be empty for action "start")"),
                std::move(meta));
        }
        ProcessManager& pm = *ctx.processes;
        const workspace::ResolvedPath root = workspace_root(ctx);
        const std::string shown_command = one_line(*command, 60);
        meta["command"] = *command;
        meta["title"] = fmt::format("Process start {}", shown_command);

        StartRequest req;
        req.command = *command;
        req.argv = {"/bin/bash", "-c", *command};
        req.cwd = root.relative;
        req.cwd_display = root.display;
        req.pty = true;
        req.interactive = true;
        req.background = true;
        req.env = command_env();
        req.call_id = ctx.call_id;
        Result<ProcessInfo> started = pm.start(req);
        if (!started) {
            const Error& e = started.error();
            if (out_of_processes(e)) {
                return error_result(fmt::format("Cannot start {}: no room for another process. {}",
                                                shown_command, process_limit_message(pm)),
                                    std::move(meta));
            }
            if (e.code == Errc::kResourceExhausted) {
                return error_result(
                    fmt::format("Cannot start {}: {}. Stop processes you no longer need first "
                                "({{\"action\":\"list\"}} shows them).",
                                shown_command, e.message),
                    std::move(meta));
            }
            return error_result(fmt::format("Command failed to start: {}.", e.message),
                                std::move(meta));
        }
        const std::string id = started->id;
        ProcessInfo info = *started;
        if (Result<ProcessInfo> w =
                pm.wait_output(id, 0, steady_clock::now() + kStartWait, kStartSettle, ctx.cancel)) {
            info = *w;
        }
        if (ended(info)) {
            // Let the last of its output arrive.
            if (Result<ProcessInfo> w =
                    pm.wait_exit(id, steady_clock::now() + kDrain, ctx.cancel, {})) {
                info = *w;
            }
        }
        Result<OutputPage> page =
            output_page(pm, id, 0, info.output_bytes, info.output_lines, kPageLines, kPageBytes);
        if (page) {
            (void)pm.set_cursor(id, page->end);
        }
        describe(meta, info);
        meta["new_lines"] = page ? page->lines : 0;
        const std::string where = fmt::format(
            "cwd {} \u00b7 log {}", info.cwd.empty() ? root.display : info.cwd, info.log_path);
        std::string body;
        if (!page) {
            body = fmt::format("(its output could not be read: {})", page.error().message);
        } else if (page->lines > 0) {
            body = indent_lines(page->text) + more_note(*page, false, info);
        }

        ToolResult r;
        if (ended(info)) {
            std::string how;
            if (info.state == ProcessState::kExited && info.exit_code) {
                how = fmt::format("exited immediately with code {}", *info.exit_code);
            } else if (info.signal) {
                how =
                    fmt::format("was killed by {} right after starting", signal_name(*info.signal));
            } else {
                how = fmt::format("{} right after starting", status_phrase(info));
            }
            r.content = fmt::format("Process {} {}: {}\n{}\n{}", id, how, shown_command, where,
                                    body.empty() ? "(no output)" : "Output:\n" + body);
            meta["title"] = fmt::format("Process start {} \u00b7 {} {}", shown_command, id,
                                        short_outcome(info));
        } else {
            r.content =
                fmt::format("Started {} (pid {}): {}\n{}\n", id, info.pid, shown_command, where);
            if (body.empty()) {
                r.content +=
                    fmt::format("No output yet (waited {}).\n", format_timeout(kStartWait));
            } else {
                r.content += fmt::format("First output (waited up to {}):\n{}\n",
                                         format_timeout(kStartWait), body);
            }
            r.content += fmt::format("Use process {} for new output.", json_action("read", id));
            meta["title"] = fmt::format("Process start {} \u00b7 {} running", shown_command, id);
        }
        r.metadata = std::move(meta);
        return r;
    }

    static ToolResult list(ToolContext& ctx) {
        nlohmann::json meta = base_meta("list");
        std::vector<ProcessInfo> all = ctx.processes->list();
        std::stable_partition(all.begin(), all.end(), [](const ProcessInfo& p) {
            return p.state == ProcessState::kRunning;
        });
        ToolResult r;
        if (all.empty()) {
            r.content =
                "No background processes in this session. Start one with process "
                "{\"action\":\"start\",\"command\":\"npm run dev\"}.";
            meta["title"] = "Process list \u00b7 none";
            meta["processes"] = nlohmann::json::array();
            r.metadata = std::move(meta);
            return r;
        }
        struct Row {
            std::string id, command, state, detail;
            int pid = 0;  // running rows: the detail is the clock, then the pid
        };
        std::vector<Row> rows;
        size_t w_id = 0;
        size_t w_cmd = 0;
        size_t w_state = 0;
        size_t w_clock = 0;
        size_t running = 0;
        nlohmann::json procs = nlohmann::json::array();
        for (const ProcessInfo& p : all) {
            Row row{.id = p.id,
                    .command = one_line(p.command, 40),
                    .state = std::string(process_state_name(p.state)),
                    .detail = "",
                    .pid = 0};
            switch (p.state) {
                case ProcessState::kRunning:
                    ++running;
                    row.detail = format_clock(p.runtime);
                    row.pid = p.pid;
                    break;
                case ProcessState::kExited:
                case ProcessState::kStopped:
                    if (p.signal) {
                        row.detail = fmt::format("by {}", signal_name(*p.signal));
                    } else if (p.exit_code) {
                        row.detail = fmt::format("code {}", *p.exit_code);
                    }
                    break;
                case ProcessState::kFailed:
                    row.detail = one_line(p.failure, 60);
                    break;
            }
            w_id = std::max(w_id, display_width(row.id));
            w_cmd = std::max(w_cmd, display_width(row.command));
            w_state = std::max(w_state, display_width(row.state));
            if (p.state == ProcessState::kRunning) {
                w_clock = std::max(w_clock, display_width(row.detail));
            }
            rows.push_back(std::move(row));
            procs.push_back({{"id", p.id},
                             {"command", p.command},
                             {"status", process_state_name(p.state)},
                             {"exit_code",
                              p.exit_code ? nlohmann::json(*p.exit_code) : nlohmann::json(nullptr)},
                             {"pid", p.pid},
                             {"runtime_ms", p.runtime.count()}});
        }
        r.content = "PROCESSES";
        std::map<std::string, uint32_t> held;  // by id: the processes beneath it
        Result<ProcessLoad> load = ctx.processes->load();
        if (load) {
            for (const ProcessLoad::Holder& h : load->holders) {
                held[h.id] = h.processes;
            }
            meta["sandbox_processes"] = load->total;
            meta["process_limit"] =
                load->limit ? nlohmann::json(*load->limit) : nlohmann::json(nullptr);
        }
        for (const Row& row : rows) {
            const std::string detail =
                row.pid != 0 ? fmt::format("{}  pid {}", pad(row.detail, w_clock), row.pid)
                             : row.detail;
            std::string line =
                fmt::format("{}  {}  {}  {}", pad(row.id, w_id), pad(row.command, w_cmd),
                            pad(row.state, w_state), detail);
            if (auto it = held.find(row.id); it != held.end() && it->second > 1) {
                line += fmt::format("  ({} processes)", with_thousands(it->second));
            }
            r.content += '\n';
            r.content += trim_right(line);
        }
        if (load) {
            r.content += "\n" + load_line(*load);
        }
        meta["title"] =
            fmt::format("Process list \u00b7 {} running, {} ended", running, all.size() - running);
        meta["processes"] = std::move(procs);
        r.metadata = std::move(meta);
        return r;
    }

    static ToolResult read(ToolContext& ctx, const ProcessArgs& args, const ProcessInfo& info,
                           nlohmann::json meta) {
        ProcessManager& pm = *ctx.processes;
        const std::string& id = info.id;
        describe(meta, info);
        const std::optional<int64_t> offset = args.offset;
        uint64_t from = 0;
        if (offset) {
            if (*offset < 1) {
                return error_result(
                    fmt::format("offset is {}, but it is a 1-based line number of {}'s output. "
                                "Use offset=1 to read from the start, or omit it for new output.",
                                *offset, id),
                    std::move(meta));
            }
            const auto line = static_cast<uint64_t>(*offset);
            if (line > info.output_lines) {
                if (info.output_lines == 0) {
                    return error_result(fmt::format("{} has no output yet ({}). Omit offset to "
                                                    "read new output as it arrives.",
                                                    id, status_phrase(info)),
                                        std::move(meta));
                }
                return error_result(
                    fmt::format("Offset {} is beyond the end of {}'s output ({}). Use offset "
                                "\u2264 {}.",
                                line, id, count_of(info.output_lines, "line", "lines"),
                                info.output_lines),
                    std::move(meta));
            }
            Result<uint64_t> begin = pm.line_start(id, line);
            if (!begin) {
                return error_result(
                    fmt::format("Cannot read {}'s output: {}.", id, begin.error().message),
                    std::move(meta));
            }
            from = *begin;
        } else {
            from = pm.cursor(id).value_or(0);
        }
        Result<OutputPage> page =
            output_page(pm, id, from, info.output_bytes, info.output_lines, kPageLines, kPageBytes);
        if (!page) {
            return error_result(fmt::format("Cannot read {}'s output: {}. The full log is {}.", id,
                                            page.error().message, info.log_path),
                                std::move(meta));
        }
        if (!offset && page->end > from) {
            (void)pm.set_cursor(id, page->end);
        }
        meta["new_lines"] = page->lines;
        meta["first_line"] = page->first_line;
        meta["last_line"] = page->last_line;
        meta["total_lines"] = info.output_lines;

        ToolResult r;
        if (page->lines == 0) {
            const std::string state =
                ended(info)
                    ? fmt::format("{}, {} total; full log {}", status_phrase(info),
                                  count_of(info.output_lines, "line", "lines"), info.log_path)
                    : fmt::format("still running, {} total",
                                  count_of(info.output_lines, "line", "lines"));
            r.content = fmt::format(
                "No new output from {} since last read ({}). Use offset to re-read earlier "
                "output.",
                id, state);
            meta["title"] = fmt::format("Process read {} \u00b7 no new output", id);
            append_network_refusals(r, info);
            r.metadata = std::move(meta);
            return r;
        }
        const std::string range =
            fmt::format("lines {}\u2013{} of {}", with_thousands(page->first_line),
                        with_thousands(page->last_line), with_thousands(info.output_lines));
        const std::string state = ended(info) ? fmt::format("; {} {}, full log {}", id,
                                                            status_phrase(info), info.log_path)
                                              : std::string();
        const std::string what =
            offset ? fmt::format("from line {}", *offset) : std::string("since last read");
        r.content = fmt::format("Output of {} {} ({}{}):\n{}{}", id, what, range, state, page->text,
                                more_note(*page, offset.has_value(), info));
        meta["title"] =
            fmt::format("Process read {} \u00b7 {}", id, count_of(page->lines, "line", "lines"));
        append_network_refusals(r, info);
        r.metadata = std::move(meta);
        return r;
    }

    static ToolResult write(ToolContext& ctx, const ProcessArgs& args, const ProcessInfo& info,
                            nlohmann::json meta) {
        ProcessManager& pm = *ctx.processes;
        const std::string& id = info.id;
        describe(meta, info);
        const std::optional<std::string>& input = args.input;
        if (!input) {
            return error_result(
                invalid_input(R"(parameter "input" is required for action "write")"),
                std::move(meta));
        }
        if (input->empty()) {
            return error_result(
                "input is empty: there is nothing to send. End the text with \\n to submit a "
                "line, e.g. \"yes\\n\".",
                std::move(meta));
        }
        if (ended(info)) {
            return error_result(
                fmt::format("Cannot write to {}: it {}, so nothing reads its input any more. Its "
                            "output is in {} (or use {}).",
                            id, status_phrase(info), info.log_path, json_action("read", id)),
                std::move(meta));
        }
        const uint64_t before = info.output_bytes;
        const uint64_t cursor = pm.cursor(id).value_or(before);
        Result<size_t> sent = pm.write(id, *input);
        if (!sent) {
            const ProcessInfo now = pm.info(id).value_or(info);
            const std::string why =
                ended(now) ? fmt::format("it {}", status_phrase(now)) : sent.error().message;
            return error_result(
                fmt::format("Cannot write to {}: {}. Its output is in {}.", id, why, now.log_path),
                std::move(meta));
        }
        ProcessInfo after = info;
        if (Result<ProcessInfo> w = pm.wait_output(id, before, steady_clock::now() + kWriteWait,
                                                   kWriteSettle, ctx.cancel)) {
            after = *w;
        }
        const uint64_t from = std::min(cursor, before);
        Result<OutputPage> page = output_page(pm, id, from, after.output_bytes, after.output_lines,
                                              kPageLines, kPageBytes);
        if (page && page->end > cursor) {
            (void)pm.set_cursor(id, page->end);
        }
        describe(meta, after);
        meta["bytes_sent"] = *sent;
        meta["new_lines"] = page ? page->lines : 0;
        meta["title"] =
            fmt::format("Process write {} \u00b7 {}", id, count_of(*sent, "byte", "bytes"));

        ToolResult r;
        r.content = fmt::format("Sent {} to {} stdin.", count_of(*sent, "byte", "bytes"), id);
        if (!page) {
            r.content += fmt::format("\n(Its output could not be read: {}.)", page.error().message);
        } else if (page->lines > 0) {
            r.content += fmt::format("\n{}\n{}{}",
                                     from < before ? "Output (since your last read):" : "Output:",
                                     indent_lines(page->text), more_note(*page, false, after));
        } else {
            r.content += fmt::format("\nNo output within {}. Use process {} to check again later.",
                                     format_duration(kWriteWait), json_action("read", id));
        }
        if (ended(after)) {
            r.content +=
                fmt::format("\n{} then {}. Full log: {}", id, status_phrase(after), after.log_path);
        }
        r.metadata = std::move(meta);
        return r;
    }

    static ToolResult stop(ToolContext& ctx, const ProcessInfo& info, nlohmann::json meta) {
        ProcessManager& pm = *ctx.processes;
        const std::string& id = info.id;
        const std::string command = one_line(info.command, 60);
        ToolResult r;
        if (ended(info)) {
            describe(meta, info);
            r.content =
                fmt::format("{} ({}) had already {} \u00b7 ran {}. Full log: {}", id, command,
                            status_phrase(info), format_clock(info.runtime), info.log_path);
            meta["title"] =
                fmt::format("Process stop {} \u00b7 already {}", id, short_outcome(info));
            r.metadata = std::move(meta);
            return r;
        }
        Result<ProcessInfo> stopped = pm.stop(id, kStopGrace);
        if (!stopped) {
            describe(meta, info);
            return error_result(fmt::format("Could not stop {}: {}. Its output is in {}.", id,
                                            stopped.error().message, info.log_path),
                                std::move(meta));
        }
        const ProcessInfo& now = *stopped;
        describe(meta, now);
        meta["title"] = fmt::format("Process stop {} \u00b7 {}", id, short_outcome(now));
        if (now.state == ProcessState::kStopped) {
            std::string code;
            if (now.signal && *now.signal == SIGKILL) {
                code =
                    fmt::format("killed with SIGKILL \u2014 it did not exit within {} of SIGTERM",
                                format_timeout(kStopGrace));
            } else if (now.signal) {
                code = fmt::format("ended by {}", signal_name(*now.signal));
            } else if (now.exit_code) {
                code = fmt::format("exited with code {} on SIGTERM", *now.exit_code);
            } else {
                code = "stopped";
            }
            r.content =
                fmt::format("Stopped {} ({}) \u00b7 {}{} \u00b7 ran {}. Full log: {}", id, command,
                            code, leftovers_clause(now), format_clock(now.runtime), now.log_path);
        } else {
            r.content =
                fmt::format("{} ({}) {} before it could be stopped \u00b7 ran {}. Full log: {}", id,
                            command, status_phrase(now), format_clock(now.runtime), now.log_path);
        }
        append_network_refusals(r, now);
        r.metadata = std::move(meta);
        return r;
    }

    static ToolResult wait(ToolContext& ctx, const ProcessInfo& info, nlohmann::json meta) {
        ProcessManager& pm = *ctx.processes;
        const std::string& id = info.id;
        ProcessInfo now = info;
        if (!ended(info)) {
            double last = 0;
            const auto tick = [&](const ProcessInfo& p) {
                if (!ctx.progress) {
                    return;
                }
                double secs = static_cast<double>(p.runtime.count()) / 1000.0;
                if (secs <= last) {
                    secs = last + 0.001;
                }
                last = secs;
                ctx.progress(secs, std::nullopt,
                             fmt::format("Waiting for {} \u00b7 {}", id, format_clock(p.runtime)));
            };
            Result<ProcessInfo> waited =
                pm.wait_exit(id, steady_clock::now() + kWaitFor, ctx.cancel, tick);
            if (!waited) {
                describe(meta, info);
                return error_result(
                    fmt::format("Cannot wait for {}: {}.", id, waited.error().message),
                    std::move(meta));
            }
            now = *waited;
            if (!ended(now) && ctx.cancel.stop_requested()) {
                describe(meta, now);
                return error_result(
                    fmt::format("Waiting for {} was cancelled; it is still running.", id),
                    std::move(meta));
            }
        }
        describe(meta, now);
        const uint64_t from = pm.cursor(id).value_or(0);
        Result<OutputPage> page =
            output_page(pm, id, from, now.output_bytes, now.output_lines, kPageLines, kPageBytes);
        if (page && page->end > from) {
            (void)pm.set_cursor(id, page->end);
        }
        meta["new_lines"] = page ? page->lines : 0;
        meta["title"] = fmt::format("Process wait {} \u00b7 {}", id, short_outcome(now));

        ToolResult r;
        if (!page) {
            r.content =
                fmt::format("(The output of {} could not be read: {}.)", id, page.error().message);
        } else if (page->lines == 0) {
            r.content = fmt::format("No new output from {} since last read.", id);
        } else {
            r.content = fmt::format(
                "Output of {} since last read (lines {}\u2013{} of {}):\n{}{}", id,
                with_thousands(page->first_line), with_thousands(page->last_line),
                with_thousands(now.output_lines), page->text, more_note(*page, false, now));
        }
        if (ended(now)) {
            r.content += fmt::format("\n{} {} \u00b7 ran {}. Full log: {}", id, status_phrase(now),
                                     format_clock(now.runtime), now.log_path);
        } else {
            r.content += fmt::format(
                "\n{} is still running after waiting {} (running for {}). Wait again, read its "
                "output, or stop it.",
                id, format_timeout(kWaitFor), format_clock(now.runtime));
        }
        append_network_refusals(r, now);
        r.metadata = std::move(meta);
        return r;
    }
};

}  // namespace

std::unique_ptr<Tool> make_process_tool() {
    return std::make_unique<ProcessTool>();
}

}  // namespace stockade::tools
