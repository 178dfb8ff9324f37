#include "runner/cli/log_timeline.h"

#include <string.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "common/parse.h"
#include "common/utf8.h"

namespace stockade::runner {

namespace {

using nlohmann::json;
using std::chrono::system_clock;

std::string string_at(const json& object, const char* key) {
    if (!object.is_object()) {
        return {};
    }
    const auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<std::int64_t> int_at(const json& object, const char* key) {
    if (!object.is_object()) {
        return std::nullopt;
    }
    const auto it = object.find(key);
    if (it == object.end() || !it->is_number_integer()) {
        return std::nullopt;
    }
    return it->is_number_unsigned() ? static_cast<std::int64_t>(std::min<std::uint64_t>(
                                          it->get<std::uint64_t>(), INT64_MAX))
                                    : it->get<std::int64_t>();
}

bool bool_at(const json& object, const char* key) {
    if (!object.is_object()) {
        return false;
    }
    const auto it = object.find(key);
    return it != object.end() && it->is_boolean() && it->get<bool>();
}

// "28 ms", "1.2 s", "2m05s", "1h02m".
std::string duration_text(std::int64_t ms) {
    if (ms < 0) {
        ms = 0;
    }
    if (ms < 1000) {
        return fmt::format("{} ms", ms);
    }
    if (ms < 60'000) {
        return fmt::format("{:.1f} s", static_cast<double>(ms) / 1000.0);
    }
    const std::int64_t s = ms / 1000;
    if (s < 3600) {
        return fmt::format("{}m{:02}s", s / 60, s % 60);
    }
    return fmt::format("{}h{:02}m", s / 3600, s % 3600 / 60);
}

std::string plural(std::int64_t n, std::string_view one, std::string_view many) {
    return fmt::format("{} {}", n, n == 1 ? one : many);
}

std::string signal_name(std::int64_t signal) {
    const char* abbrev =
        signal > 0 && signal < 65 ? ::sigabbrev_np(static_cast<int>(signal)) : nullptr;
    return abbrev != nullptr ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", signal);
}

// The digits of `text` at [pos, pos + n) as a number, or -1.
int digits(std::string_view text, std::size_t pos, std::size_t n) {
    if (pos + n > text.size()) {
        return -1;
    }
    int value = 0;
    for (std::size_t i = pos; i < pos + n; ++i) {
        if (text[i] < '0' || text[i] > '9') {
            return -1;
        }
        value = value * 10 + (text[i] - '0');
    }
    return value;
}

std::optional<system_clock::time_point> civil_time(int y, int mo, int d, int h, int mi, int s) {
    using namespace std::chrono;  // NOLINT(google-build-using-namespace): local, for the units
    const year_month_day date{year{y}, month{static_cast<unsigned>(mo)},
                              day{static_cast<unsigned>(d)}};
    if (!date.ok() || h > 23 || mi > 59 || s > 60) {
        return std::nullopt;
    }
    return sys_days{date} + hours{h} + minutes{mi} + seconds{s};
}

std::string quoted(std::string_view text, std::size_t max) {
    return "\"" + terminal_text(text, max) + "\"";
}

}  // namespace

std::string terminal_text(std::string_view text, std::size_t max) {
    std::string out;
    bool cut = false;
    if (text.size() > max) {
        text = utf8_prefix(text, max);
        cut = true;
    }
    out.reserve(text.size() + 4);
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c < 0x20 || c == 0x7f) {
            out += '?';
            continue;
        }
        // C1 controls (U+0080-U+009F: 0xC2 0x80-0x9F) are a terminal's CSI, OSC... too.
        if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
            static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
            out += '?';
            ++i;
            continue;
        }
        // Bidirectional embeddings and overrides (U+202A-U+202E) and isolates (U+2066-U+2069).
        if (c == 0xE2 && i + 2 < text.size()) {
            const auto b1 = static_cast<unsigned char>(text[i + 1]);
            const auto b2 = static_cast<unsigned char>(text[i + 2]);
            if ((b1 == 0x80 && b2 >= 0xAA && b2 <= 0xAE) ||
                (b1 == 0x81 && b2 >= 0xA6 && b2 <= 0xA9)) {
                out += '?';
                i += 2;
                continue;
            }
        }
        out += static_cast<char>(c);
    }
    if (cut) {
        out += "…";
    }
    return out;
}

std::optional<system_clock::time_point> parse_rfc3339(std::string_view text) {
    // YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)
    if (text.size() < 20 || text[4] != '-' || text[7] != '-' ||
        (text[10] != 'T' && text[10] != 't' && text[10] != ' ') || text[13] != ':' ||
        text[16] != ':') {
        return std::nullopt;
    }
    const int y = digits(text, 0, 4);
    const int mo = digits(text, 5, 2);
    const int d = digits(text, 8, 2);
    const int h = digits(text, 11, 2);
    const int mi = digits(text, 14, 2);
    const int s = digits(text, 17, 2);
    if (y < 0 || mo < 0 || d < 0 || h < 0 || mi < 0 || s < 0) {
        return std::nullopt;
    }
    auto base = civil_time(y, mo, d, h, mi, s);
    if (!base) {
        return std::nullopt;
    }
    std::size_t pos = 19;
    std::chrono::nanoseconds fraction{0};
    if (pos < text.size() && text[pos] == '.') {
        ++pos;
        const std::size_t start = pos;
        std::int64_t scale = 100'000'000;
        while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
            fraction += std::chrono::nanoseconds((text[pos] - '0') * scale);
            scale /= 10;
            ++pos;
        }
        if (pos == start) {
            return std::nullopt;
        }
    }
    if (pos >= text.size()) {
        return std::nullopt;
    }
    std::chrono::minutes offset{0};
    if (text[pos] == 'Z' || text[pos] == 'z') {
        ++pos;
    } else if (text[pos] == '+' || text[pos] == '-') {
        const int oh = digits(text, pos + 1, 2);
        const int om = digits(text, pos + 4, 2);
        if (oh < 0 || om < 0 || pos + 3 >= text.size() || text[pos + 3] != ':' || oh > 23 ||
            om > 59) {
            return std::nullopt;
        }
        offset = std::chrono::minutes(oh * 60 + om) * (text[pos] == '-' ? -1 : 1);
        pos += 6;
    } else {
        return std::nullopt;
    }
    if (pos != text.size()) {
        return std::nullopt;
    }
    return *base + std::chrono::duration_cast<system_clock::duration>(fraction) - offset;
}

Result<system_clock::time_point> parse_since(std::string_view text, system_clock::time_point now) {
    text = trim(text);
    const auto invalid = [&] {
        return Error{Errc::kInvalidArgument,
                     fmt::format("--since \"{}\": give a duration back from now (90s, 10m, 2h, "
                                 "1d, 1h30m) or a time (2026-11-30T12:00:00Z, "
                                 "2026-11-30T13:00:00+01:00, or a date, 2026-11-30, in UTC)",
                                 terminal_text(text, 80))};
    };
    if (text.empty()) {
        return invalid();
    }
    if (text.size() == 10 && text[4] == '-' && text[7] == '-') {
        const int y = digits(text, 0, 4);
        const int mo = digits(text, 5, 2);
        const int d = digits(text, 8, 2);
        if (y < 0 || mo < 0 || d < 0) {
            return invalid();
        }
        auto midnight = civil_time(y, mo, d, 0, 0, 0);
        if (!midnight) {
            return invalid();
        }
        return *midnight;
    }
    if (text.size() >= 20 && text[4] == '-') {
        auto time = parse_rfc3339(text);
        if (!time) {
            return invalid();
        }
        return *time;
    }
    // A sum of NUMBER UNIT terms: 1h30m, 10m, 90s, 2d.
    std::chrono::seconds total{0};
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::uint64_t n = 0;
        const auto [end, ec] = std::from_chars(text.data() + pos, text.data() + text.size(), n);
        if (ec != std::errc{} || end == text.data() + pos || end == text.data() + text.size() ||
            n > 100'000'000) {
            return invalid();
        }
        pos = static_cast<std::size_t>(end - text.data());
        std::int64_t unit = 0;
        switch (text[pos]) {
            case 's':
                unit = 1;
                break;
            case 'm':
                unit = 60;
                break;
            case 'h':
                unit = 3600;
                break;
            case 'd':
                unit = 86400;
                break;
            default:
                return invalid();
        }
        ++pos;
        total += std::chrono::seconds(static_cast<std::int64_t>(n) * unit);
    }
    return now - total;
}

std::string argument_summary(std::string_view tool, const json& arguments,
                             std::string_view workspace) {
    auto path_of = [&](const char* key) {
        std::string path = string_at(arguments, key);
        if (!workspace.empty() && path.size() > workspace.size() + 1 &&
            path.starts_with(workspace) && path[workspace.size()] == '/') {
            path.erase(0, workspace.size() + 1);
        }
        return terminal_text(path, 120);
    };
    if (tool == "read") {
        std::string out = path_of("file_path");
        if (auto offset = int_at(arguments, "offset")) {
            out += fmt::format(" from line {}", *offset);
        }
        if (auto limit = int_at(arguments, "limit")) {
            out += fmt::format(" ({})", plural(*limit, "line", "lines"));
        }
        return out;
    }
    if (tool == "write") {
        const std::string content = string_at(arguments, "content");
        return fmt::format("{} ({})", path_of("file_path"),
                           plural(static_cast<std::int64_t>(content.size()), "byte", "bytes"));
    }
    if (tool == "edit") {
        return path_of("file_path") + (bool_at(arguments, "replace_all") ? " (every match)" : "");
    }
    if (tool == "grep" || tool == "glob") {
        std::string out = quoted(string_at(arguments, "pattern"), 80);
        if (const std::string where = path_of("path"); !where.empty()) {
            out += " in " + where;
        }
        if (const std::string include = string_at(arguments, "include"); !include.empty()) {
            out += " (" + terminal_text(include, 40) + ")";
        }
        return out;
    }
    if (tool == "bash") {
        std::string command = string_at(arguments, "command");
        const auto newline = command.find('\n');
        std::string out = terminal_text(command.substr(0, newline), 100);
        if (newline != std::string::npos) {
            out += " …";
        }
        if (const std::string workdir = path_of("workdir"); !workdir.empty()) {
            out += " (in " + workdir + ")";
        }
        return out;
    }
    if (tool == "process") {
        std::string out = terminal_text(string_at(arguments, "action"), 20);
        if (const std::string id = string_at(arguments, "id"); !id.empty()) {
            out += " " + terminal_text(id, 40);
        }
        if (const std::string command = string_at(arguments, "command"); !command.empty()) {
            out += " " + terminal_text(command.substr(0, command.find('\n')), 80);
        }
        return out;
    }
    if (!arguments.is_object() || arguments.empty()) {
        return "";
    }
    return terminal_text(arguments.dump(-1, ' ', false, json::error_handler_t::replace), 100);
}

// ---- Timeline -----------------------------------------------------------------------------------

std::string Timeline::line(const json& event, std::string_view text, int indent) {
    if (quiet_) {
        return "";
    }
    const std::string ts = string_at(event, "ts");
    std::string out;
    std::string time = "??:??:??.???";
    if (ts.size() >= 23 && ts[10] == 'T') {
        if (const std::string date = ts.substr(0, 10); date != date_) {
            date_ = date;
            out += terminal_text(date, 10) + " (UTC)\n";
        }
        time = terminal_text(ts.substr(11, 12), 12);
    }
    out +=
        fmt::format("{}  {}{}\n", time, std::string(static_cast<std::size_t>(indent), ' '), text);
    return out;
}

std::string Timeline::relative(std::string_view path) const {
    if (!workspace_.empty() && path.size() > workspace_.size() + 1 &&
        path.starts_with(workspace_) && path[workspace_.size()] == '/') {
        path.remove_prefix(workspace_.size() + 1);
    }
    return terminal_text(path, 120);
}

Timeline::Call* Timeline::find_call(const json& event) {
    const auto it = open_.find(string_at(event, "call"));
    return it == open_.end() ? nullptr : &it->second;
}

std::string Timeline::call_line(const Call& call, const std::string& decision_text,
                                const json& event) {
    std::string text = fmt::format("#{} {}", call.number, terminal_text(call.tool, 40));
    if (!call.summary.empty()) {
        text += " " + call.summary;
    }
    if (!decision_text.empty()) {
        text += " -> " + decision_text;
    }
    return line(event, text);
}

std::vector<std::string> Timeline::open_calls() const {
    std::vector<const Call*> calls;
    for (const auto& [id, call] : open_) {
        calls.push_back(&call);
    }
    std::sort(calls.begin(), calls.end(),
              [](const Call* a, const Call* b) { return a->number < b->number; });
    std::vector<std::string> out;
    for (const Call* call : calls) {
        out.push_back(fmt::format("#{} {}{}{}", call->number, terminal_text(call->tool, 40),
                                  call->shown ? "" : " ", call->shown ? "" : call->summary));
    }
    return out;
}

std::string Timeline::close_open_calls(const json& event, std::string_view why) {
    std::string out;
    for (const std::string& call : open_calls()) {
        out += line(event, fmt::format("{}: no result ({})", call, why));
    }
    open_.clear();
    processes_.clear();
    return out;
}

std::string Timeline::add(const json& event) {
    if (!event.is_object()) {
        return "";
    }
    if (since_) {
        const auto ts = parse_rfc3339(string_at(event, "ts"));
        quiet_ = !ts || *ts < *since_;
    }
    const std::string type = string_at(event, "type");
    if (type == "PolicyLoaded") {
        policy_ = event;
        return "";
    }
    if (type == "SessionStarted" || type == "SessionResumed") {
        // A run that ended without SessionEnded (a crash) leaves its calls open.
        std::string out = close_open_calls(event, "the session stopped before it answered");
        std::vector<std::string> parts;
        if (type == "SessionStarted") {
            workspace_ = string_at(event, "workspace");
            parts.emplace_back("session started");
            if (const std::string tenant = string_at(event, "tenant"); !tenant.empty()) {
                parts.push_back("tenant " + terminal_text(tenant, 64));
            }
            if (const std::string mcp = string_at(event, "mcp_session"); !mcp.empty()) {
                parts.push_back("MCP session " + terminal_text(mcp.substr(0, 12), 12));
            }
            parts.push_back("workspace " + terminal_text(workspace_, 200));
            if (const std::string image = string_at(event, "image"); !image.empty()) {
                parts.push_back("image " + terminal_text(image, 80));
            }
        } else {
            parts.emplace_back("session resumed");
            if (auto stamps = int_at(event, "stamps")) {
                parts.push_back(plural(*stamps, "file stamp", "file stamps") + " restored");
            }
        }
        if (policy_.is_object()) {
            const std::string preset = string_at(policy_, "preset");
            const std::string mode = string_at(policy_, "mode");
            const std::int64_t rules = int_at(policy_, "rules").value_or(0);
            parts.push_back(fmt::format("policy {}, {} mode, {}", terminal_text(preset, 40),
                                        terminal_text(mode, 20), plural(rules, "rule", "rules")));
            parts.push_back("network " + terminal_text(string_at(policy_, "network"), 20));
            policy_ = nullptr;
        }
        std::string text;
        for (const std::string& part : parts) {
            text += (text.empty() ? "" : " · ") + part;
        }
        return out + line(event, text);
    }
    if (type == "SessionEnded") {
        return close_open_calls(event, "the session ended first") + line(event, "session ended");
    }
    if (type == "ToolRequested") {
        Call call;
        call.number = next_call_++;
        call.tool = string_at(event, "tool");
        call.summary = argument_summary(call.tool, event.value("arguments", json()), workspace_);
        open_[string_at(event, "call")] = std::move(call);
        return "";
    }
    if (type == "ToolDecided") {
        Call* call = find_call(event);
        if (call == nullptr) {
            return "";
        }
        std::string decision = terminal_text(string_at(event, "decision"), 20);
        if (const std::string rule = string_at(event, "rule"); !rule.empty()) {
            decision += " by rule " + terminal_text(rule, 120);
            if (const std::string origin = string_at(event, "origin"); !origin.empty()) {
                decision += " (" + terminal_text(origin, 120) + ")";
            }
        } else if (const std::string reason = string_at(event, "reason"); !reason.empty()) {
            decision += " (" + terminal_text(reason, 200) + ")";
        }
        call->shown = true;
        return call_line(*call, decision, event);
    }
    if (type == "ToolAnswered") {
        Call* call = find_call(event);
        const std::string number = call != nullptr ? fmt::format("#{} ", call->number) : "";
        const std::string action = string_at(event, "action");
        const std::string decision = terminal_text(string_at(event, "decision"), 20);
        if (action == "fallback") {
            return line(
                event, fmt::format("{}nobody could be asked: --ask-fallback {}", number, decision));
        }
        if (action == "accept") {
            return line(event, fmt::format("{}the user answered {}", number,
                                           decision.empty() ? "(nothing)" : decision));
        }
        std::string text =
            fmt::format("{}the user did not allow it ({})", number, terminal_text(action, 20));
        if (const std::string error = string_at(event, "error"); !error.empty()) {
            text += ": " + terminal_text(error, 160);
        }
        return line(event, text);
    }
    if (type == "ToolCompleted" || type == "ToolFailed") {
        const std::string id = string_at(event, "call");
        Call call;
        if (auto it = open_.find(id); it != open_.end()) {
            call = std::move(it->second);
            open_.erase(it);
        } else {
            call.tool = string_at(event, "tool");  // requested before --since, or lost
            call.shown = true;
        }
        const json metadata = event.value("metadata", json());
        std::string outcome = "ok";
        if (type == "ToolFailed" || bool_at(event, "is_error")) {
            outcome = metadata.is_object() && metadata.contains("policy") ? "refused"
                      : bool_at(metadata, "timed_out")                    ? "timed out"
                                                                          : "failed";
        } else if (bool_at(metadata, "timed_out")) {
            outcome = "timed out";
        } else if (auto code = int_at(metadata, "exit_code"); code && *code != 0) {
            outcome = fmt::format("exit {}", *code);
        } else if (auto signal = int_at(metadata, "signal")) {
            outcome = "killed by " + signal_name(*signal);
        }
        std::string text = call.number > 0
                               ? fmt::format("#{} {}", call.number, terminal_text(call.tool, 40))
                               : terminal_text(call.tool, 40);
        if (!call.shown && !call.summary.empty()) {
            text += " " + call.summary;
        }
        text += fmt::format(": {} in {}", outcome,
                            duration_text(int_at(event, "duration_ms").value_or(0)));
        if (const std::string title = string_at(metadata, "title"); !title.empty()) {
            text += " · " + terminal_text(title, 160);
        }
        return line(event, text);
    }
    if (type == "FileModified") {
        const bool created = bool_at(event, "created");
        std::string text = fmt::format("{} {}", created ? "created" : "modified",
                                       relative(string_at(event, "path")));
        auto additions = int_at(event, "additions");
        auto deletions = int_at(event, "deletions");
        if (additions || deletions) {
            text += fmt::format(" +{} -{}", additions.value_or(0), deletions.value_or(0));
        }
        return line(event, text, 2);
    }
    if (type == "ProcessStarted") {
        const std::string id = string_at(event, "id");
        const std::string command = string_at(event, "command");
        processes_[id] = command;
        if (!bool_at(event, "background")) {
            return "";  // its call is the line that shows it
        }
        return line(event,
                    fmt::format("process {} started in the background: {}", terminal_text(id, 40),
                                terminal_text(command.substr(0, command.find('\n')), 100)),
                    2);
    }
    if (type == "ProcessAdopted") {
        return line(event,
                    fmt::format("process {} (was {}) moved to the background",
                                terminal_text(string_at(event, "id"), 40),
                                terminal_text(string_at(event, "was"), 40)),
                    2);
    }
    if (type == "ProcessExited") {
        const std::string id = string_at(event, "id");
        auto leftovers = int_at(event, "leftovers_stopped");
        if (!bool_at(event, "background") && !(leftovers && *leftovers > 0)) {
            processes_.erase(id);
            return "";  // its call's outcome says how it ended
        }
        const std::string state = string_at(event, "state");
        std::string how;
        if (auto signal = int_at(event, "signal")) {
            how = "killed by " + signal_name(*signal);
        } else if (auto code = int_at(event, "exit_code")) {
            how = fmt::format("exited {}", *code);
        } else if (state == "failed") {
            how = "failed to start";
        } else {
            how = terminal_text(state.empty() ? std::string("ended") : state, 20);
        }
        std::string text = fmt::format("process {} {} after {}", terminal_text(id, 40), how,
                                       duration_text(int_at(event, "runtime_ms").value_or(0)));
        if (bool_at(event, "background")) {
            if (auto it = processes_.find(id); it != processes_.end()) {
                text += ": " + terminal_text(it->second.substr(0, it->second.find('\n')), 80);
            }
        }
        if (leftovers && *leftovers > 0) {
            text +=
                fmt::format("; {} left behind stopped", plural(*leftovers, "process", "processes"));
        }
        processes_.erase(id);
        return line(event, text, 2);
    }
    if (type == "NetworkConnection") {
        const std::string outcome = string_at(event, "outcome");
        if (outcome != "refused" && outcome != "failed") {
            return "";
        }
        std::string text = fmt::format(
            "network {} {}:{}", outcome == "refused" ? "refused" : "could not reach",
            terminal_text(string_at(event, "host"), 120), int_at(event, "port").value_or(0));
        if (const std::string address = string_at(event, "address"); !address.empty()) {
            text += " (" + terminal_text(address, 60) + ")";
        }
        if (const std::string reason = string_at(event, "reason"); !reason.empty()) {
            text += ": " + terminal_text(reason, 160);
        }
        if (const std::string rule = string_at(event, "rule"); !rule.empty()) {
            text += " [" + terminal_text(rule, 120) + "]";
        }
        return line(event, text, 2);
    }
    if (type == "NetworkLookup") {
        std::string text = fmt::format("DNS query refused for {} ({})",
                                       terminal_text(string_at(event, "host"), 120),
                                       terminal_text(string_at(event, "query_type"), 12));
        if (const std::string reason = string_at(event, "reason"); !reason.empty()) {
            text += ": " + terminal_text(reason, 160);
        }
        return line(event, text, 2);
    }
    if (type == "NetworkAnswered") {
        const std::string decision = string_at(event, "decision");
        return line(event,
                    fmt::format("network {}: the user answered {}",
                                terminal_text(string_at(event, "target"), 120),
                                decision.empty() ? terminal_text(string_at(event, "action"), 20)
                                                 : terminal_text(decision, 20)),
                    2);
    }
    if (type == "Checkpoint") {
        const std::int64_t added = int_at(event, "added").value_or(0);
        const std::int64_t changed = int_at(event, "changed").value_or(0);
        const std::int64_t removed = int_at(event, "removed").value_or(0);
        const std::string kind = string_at(event, "kind");
        const std::string call = terminal_text(string_at(event, "call"), 80);
        const std::int64_t seq = int_at(event, "seq").value_or(0);
        const std::string what =
            kind == "baseline" ? fmt::format("checkpoint {} (baseline)", seq)
            : kind == "rewind" ? fmt::format("checkpoint {} after the rewind", seq)
                               : fmt::format("checkpoint {} (rewind --to {} undoes it)", seq, call);
        return line(
            event,
            fmt::format("{}: {} added, {} changed, {} removed", what, added, changed, removed), 2);
    }
    if (type == "CheckpointDropped") {
        return line(event,
                    fmt::format("checkpoint {} (call {}) dropped: the checkpoint quota is full",
                                int_at(event, "seq").value_or(0),
                                terminal_text(string_at(event, "call"), 80)),
                    2);
    }
    if (type == "Rewind") {
        auto count = [&](const char* key) {
            return event.contains(key) && event[key].is_array() ? event[key].size() : 0;
        };
        const std::string to = terminal_text(string_at(event, "to"), 80);
        std::string text =
            fmt::format("rewind to {}: {} restored, {} removed",
                        to.starts_with("@") ? "checkpoint " + to.substr(1) : "before call " + to,
                        count("restored"), count("removed"));
        if (count("conflicts") > 0) {
            text +=
                fmt::format(", {} left alone (changed outside the session)", count("conflicts"));
        }
        if (count("failed") > 0) {
            text += fmt::format(", {} failed", count("failed"));
        }
        return line(event, text);
    }
    if (type == "WorkerStarted") {
        const std::int64_t generation = int_at(event, "generation").value_or(1);
        std::string text = generation > 1
                               ? fmt::format("sandbox worker restarted (generation {})", generation)
                               : std::string("sandbox worker started");
        text += " · isolation " + terminal_text(string_at(event, "isolation"), 20);
        if (const std::string shortfall = string_at(event, "isolation_shortfall");
            !shortfall.empty()) {
            text += " (" + terminal_text(shortfall, 200) + ")";
        }
        return line(event, text, 2);
    }
    if (type == "WorkerFailed") {
        return line(
            event,
            "sandbox worker could not start: " + terminal_text(string_at(event, "error"), 400), 2);
    }
    if (type == "WorkerExited") {
        const bool oom = bool_at(event, "oom_killed");
        const std::int64_t signal = int_at(event, "signal").value_or(0);
        const std::int64_t status = int_at(event, "status").value_or(-1);
        if (bool_at(event, "died") && (oom || signal > 0 || status != 0)) {
            const std::string cause = oom          ? "killed by the out-of-memory killer"
                                      : signal > 0 ? "killed by " + signal_name(signal)
                                                   : fmt::format("exit code {}", status);
            return line(event, "sandbox worker died: " + cause, 2);
        }
        const std::string reason = string_at(event, "reason");
        if (reason.empty() || reason == "session ended") {
            return "";  // SessionEnded says it
        }
        return line(event, "sandbox worker stopped: " + terminal_text(reason, 160), 2);
    }
    return "";
}

std::string Timeline::finish() {
    std::string out;
    for (const std::string& call : open_calls()) {
        out += fmt::format("{:12}  {}: no result in the log yet\n", "", call);
    }
    return out;
}

}  // namespace stockade::runner
