#include "tools/process_output.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace stockade::tools {
namespace {

constexpr char kEsc = '\x1b';
constexpr char kBel = '\x07';

bool is_continuation(char c) {
    return (static_cast<unsigned char>(c) & 0xC0U) == 0x80U;
}

// A raw line with its '\n' (if any), at byte `begin` of the output.
struct RawLine {
    uint64_t begin = 0;
    std::string_view bytes{};  // '\n' included when present

    [[nodiscard]] bool complete() const { return bytes.ends_with('\n'); }
    [[nodiscard]] std::string_view body() const {
        return complete() ? bytes.substr(0, bytes.size() - 1) : bytes;
    }
    [[nodiscard]] uint64_t end() const { return begin + bytes.size(); }
};

std::vector<RawLine> split_raw(std::string_view text, uint64_t base) {
    std::vector<RawLine> lines;
    for (size_t start = 0; start < text.size();) {
        const size_t nl = text.find('\n', start);
        const size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
        lines.push_back({base + start, text.substr(start, end - start)});
        start = end;
    }
    return lines;
}

// How much a head/tail fetch reads: rendered text is rarely larger than the raw bytes, and
// escape-heavy output is much smaller once rendered.
constexpr uint64_t kWindowFetch = uint64_t{64} * 1024;
// Outputs up to this size are read whole (and may turn out to fit once rendered).
constexpr uint64_t kFetchWhole = uint64_t{256} * 1024;

// "exited with code 0", "stopped (SIGTERM)": how the leader ended, or that it runs.
std::string state_phrase(const ProcessInfo& info) {
    switch (info.state) {
        case ProcessState::kRunning:
            return "still running";
        case ProcessState::kExited:
            if (info.exit_code) {
                return fmt::format("exited with code {}", *info.exit_code);
            }
            if (info.signal) {
                return fmt::format("killed by {}", signal_name(*info.signal));
            }
            return "exited";
        case ProcessState::kStopped:
            if (info.signal) {
                return fmt::format("stopped ({})", signal_name(*info.signal));
            }
            if (info.exit_code) {
                return fmt::format("stopped (exit code {})", *info.exit_code);
            }
            return "stopped";
        case ProcessState::kFailed:
            return info.failure.empty() ? std::string("failed")
                                        : fmt::format("failed: {}", info.failure);
    }
    return "unknown";
}

}  // namespace

std::string strip_ansi(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    const size_t n = s.size();
    size_t i = 0;
    // The end of a string sequence (OSC, DCS, …): just past BEL or ESC '\', or n.
    const auto string_end = [&](size_t from) {
        for (size_t k = from; k < n; ++k) {
            if (s[k] == kBel) {
                return k + 1;
            }
            if (s[k] == kEsc && k + 1 < n && s[k + 1] == '\\') {
                return k + 2;
            }
        }
        return n;
    };
    while (i < n) {
        if (s[i] != kEsc) {
            out += s[i];
            ++i;
            continue;
        }
        if (i + 1 >= n) {
            break;
        }
        const auto next = static_cast<unsigned char>(s[i + 1]);
        if (next == '[') {
            size_t k = i + 2;
            while (k < n && static_cast<unsigned char>(s[k]) >= 0x20U &&
                   static_cast<unsigned char>(s[k]) <= 0x3FU) {
                ++k;
            }
            if (k < n && static_cast<unsigned char>(s[k]) >= 0x40U &&
                static_cast<unsigned char>(s[k]) <= 0x7EU) {
                ++k;
            } else if (k < n) {
                // Not a valid CSI: drop the introducer only.
                i += 2;
                continue;
            }
            i = k;
        } else if (next == ']' || next == 'P' || next == 'X' || next == '^' || next == '_') {
            i = string_end(i + 2);
        } else if (next >= 0x20U && next <= 0x2FU) {
            size_t k = i + 1;
            while (k < n && static_cast<unsigned char>(s[k]) >= 0x20U &&
                   static_cast<unsigned char>(s[k]) <= 0x2FU) {
                ++k;
            }
            i = k < n ? k + 1 : n;
        } else if (next >= 0x30U && next <= 0x7EU) {
            i += 2;
        } else {
            ++i;  // a lone ESC
        }
    }
    return out;
}

std::string render_line(std::string_view raw) {
    const std::string stripped = strip_ansi(raw);
    std::string out;
    out.reserve(stripped.size());
    for (char c : stripped) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '\b') {
            // Erase the code point before, within the current redraw of the line.
            if (!out.empty() && out.back() != '\r') {
                while (!out.empty() && is_continuation(out.back())) {
                    out.pop_back();
                }
                if (!out.empty()) {
                    out.pop_back();
                }
            }
            continue;
        }
        if (c == '\t' || c == '\r' || (u >= 0x20U && u != 0x7FU)) {
            out += c;
        }
    }
    while (!out.empty() && out.back() == '\r') {
        out.pop_back();
    }
    if (const size_t cr = out.rfind('\r'); cr != std::string::npos) {
        out.erase(0, cr + 1);
    }
    return sanitize_utf8(out);
}

std::string render_text(std::string_view raw) {
    std::string out;
    bool first = true;
    for (std::string_view line : split_lines(raw)) {
        if (!first) {
            out += '\n';
        }
        first = false;
        out += render_line(line);
    }
    return out;
}

std::string indent_lines(std::string_view text, std::string_view prefix) {
    std::string out;
    bool first = true;
    for (std::string_view line : split_lines(text)) {
        if (!first) {
            out += '\n';
        }
        first = false;
        if (!line.empty()) {
            out += prefix;
            out += line;
        }
    }
    return out;
}

std::string format_duration(std::chrono::milliseconds ms) {
    const int64_t total = std::max<int64_t>(0, ms.count());
    if (total < 60'000) {
        // Tenths, rounded half up, without floating point.
        const int64_t tenths = (total + 50) / 100;
        if (tenths < 600) {
            return fmt::format("{}.{}s", tenths / 10, tenths % 10);
        }
    }
    const int64_t secs = (total + 500) / 1000;
    if (secs < 3600) {
        return fmt::format("{}m {:02}s", secs / 60, secs % 60);
    }
    return fmt::format("{}h {:02}m {:02}s", secs / 3600, (secs / 60) % 60, secs % 60);
}

std::string format_timeout(std::chrono::milliseconds ms) {
    if (ms.count() > 0 && ms.count() % 1000 == 0) {
        return fmt::format("{}s", ms.count() / 1000);
    }
    return format_duration(ms);
}

std::string format_clock(std::chrono::milliseconds ms) {
    const int64_t secs = std::max<int64_t>(0, ms.count()) / 1000;
    if (secs < 3600) {
        return fmt::format("{:02}:{:02}", secs / 60, secs % 60);
    }
    return fmt::format("{}:{:02}:{:02}", secs / 3600, (secs / 60) % 60, secs % 60);
}

std::string signal_name(int signal) {
    const char* abbrev = signal > 0 && signal < 65 ? sigabbrev_np(signal) : nullptr;
    if (abbrev == nullptr) {
        return fmt::format("signal {}", signal);
    }
    return fmt::format("SIG{}", abbrev);
}

std::string leftover_list(const ProcessInfo& info) {
    if (info.leftover_names.empty()) {
        return "";
    }
    const uint64_t unnamed = info.leftovers > info.leftover_names.size()
                                 ? info.leftovers - info.leftover_names.size()
                                 : 0;
    if (unnamed == 0) {
        return fmt::format(" ({})", fmt::join(info.leftover_names, ", "));
    }
    return fmt::format(" ({} and {} more)", fmt::join(info.leftover_names, ", "), unnamed);
}

bool out_of_processes(const Error& error) {
    return error.code == Errc::kResourceExhausted && error.sys_errno == EAGAIN;
}

std::string process_limit_message(ProcessManager& pm) {
    Result<ProcessLoad> load = pm.load();
    if (!load) {
        return {};
    }
    std::string out =
        load->limit ? fmt::format("The sandbox holds {} processes, its limit is {}.",
                                  with_thousands(load->total), with_thousands(*load->limit))
                    : fmt::format("The sandbox holds {} processes.", with_thousands(load->total));
    if (!load->holders.empty() && load->holders.front().processes >= load->elsewhere) {
        const ProcessLoad::Holder& top = load->holders.front();
        out += fmt::format(
            " {} ({}) holds {} of them: stop it with process {{\"action\":\"stop\",\"id\":\"{}\"}} "
            "if you no longer need it, then try again.",
            top.id, one_line(top.command, 40), with_thousands(top.processes), top.id);
    } else if (load->elsewhere > 0) {
        out += fmt::format(
            " {} of them belong to no background process (what finished commands left running, "
            "being stopped, or a command still running): try again in a moment.",
            with_thousands(load->elsewhere));
    }
    return out;
}

std::string load_line(const ProcessLoad& load) {
    std::string line =
        load.limit ? fmt::format("Processes in the sandbox: {} of {} allowed.",
                                 with_thousands(load.total), with_thousands(*load.limit))
                   : fmt::format("Processes in the sandbox: {}.", with_thousands(load.total));
    if (load.limit && *load.limit > 0 && load.total * 4 >= *load.limit * 3) {
        line += " Near the limit: stop what you no longer need, or new commands will fail.";
    }
    return line;
}

std::string network_refusals_line(const std::vector<NetworkRefusal>& refused) {
    // Refused connections, connections that could not be made and refused DNS queries, each
    // in a clause of its own, in the order first seen.
    enum Kind { kRefused, kUnreached, kDns };
    auto kind_of = [](const NetworkRefusal& r) {
        return r.dns ? kDns : r.unreached ? kUnreached : kRefused;
    };
    auto clause = [&](Kind kind) -> std::string {
        std::vector<const NetworkRefusal*> of_kind;
        uint64_t total = 0;
        for (const auto& r : refused) {
            if (kind_of(r) == kind) {
                of_kind.push_back(&r);
                total += r.count;
            }
        }
        if (of_kind.empty()) {
            return {};
        }
        const bool dns = kind == kDns;
        auto target = [dns](const NetworkRefusal& r) {
            if (r.host.empty()) {
                return std::string(dns ? "for other names" : "to other targets");
            }
            std::string where;
            if (dns) {
                where = "for " + r.host;
            } else if (r.host.find(':') != std::string::npos) {
                where = fmt::format("to [{}]:{}", r.host, r.port);
            } else {
                where = fmt::format("to {}:{}", r.host, r.port);
            }
            if (r.reason.empty()) {
                return where;
            }
            return r.hint.empty() ? fmt::format("{} ({})", where, r.reason)
                                  : fmt::format("{} ({}; {})", where, r.reason, r.hint);
        };
        const std::string what = dns ? count_of(total, "DNS query", "DNS queries")
                                     : count_of(total, "connection", "connections");
        const char* verb = kind == kUnreached ? "could not make" : "refused";
        if (of_kind.size() == 1) {
            return fmt::format("{} {} {}", verb, what, target(*of_kind.front()));
        }
        constexpr size_t kShown = 3;
        std::vector<std::string> parts;
        for (size_t i = 0; i < of_kind.size() && i < kShown; ++i) {
            parts.push_back(fmt::format("{} {}", of_kind[i]->count, target(*of_kind[i])));
        }
        if (of_kind.size() > kShown) {
            uint64_t rest = 0;
            for (size_t i = kShown; i < of_kind.size(); ++i) {
                rest += of_kind[i]->count;
            }
            parts.push_back(
                fmt::format("{} {} {}", rest, dns ? "for" : "to",
                            count_of(of_kind.size() - kShown, "other target", "other targets")));
        }
        return fmt::format("{} {}: {}", verb, what, fmt::join(parts, ", "));
    };
    std::vector<std::string> clauses;
    for (Kind kind : {kRefused, kUnreached, kDns}) {
        if (std::string c = clause(kind); !c.empty()) {
            clauses.push_back(std::move(c));
        }
    }
    if (clauses.empty()) {
        return {};
    }
    return fmt::format("network: {}", fmt::join(clauses, "; "));
}

nlohmann::json network_refusals_json(const std::vector<NetworkRefusal>& refused) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : refused) {
        out.push_back({{"kind", r.dns         ? "dns"
                                : r.unreached ? "unreached"
                                              : "connection"},
                       {"host", r.host},
                       {"port", r.port},
                       {"count", r.count},
                       {"reason", r.reason},
                       {"hint", r.hint}});
    }
    return out;
}

std::string leftovers_clause(const ProcessInfo& info) {
    if (info.leftovers == 0 || info.state == ProcessState::kRunning) {
        return "";
    }
    return fmt::format("; {} it left running {} stopped{}",
                       count_of(info.leftovers, "process", "processes"),
                       info.leftovers == 1 ? "was" : "were", leftover_list(info));
}

std::string status_phrase(const ProcessInfo& info) {
    return state_phrase(info) + leftovers_clause(info);
}

std::string one_line(std::string_view command, size_t max_chars) {
    std::string flat;
    std::string_view rest = trim(command);
    for (char c : rest) {
        if (c == '\n') {
            flat += " \u23ce ";
        } else if (c == '\r' || c == '\t') {
            flat += ' ';
        } else {
            flat += c;
        }
    }
    return truncate_chars(sanitize_utf8(flat), max_chars, "\u2026");
}

Result<std::string> fetch_output(ProcessManager& pm, const std::string& id, uint64_t from,
                                 uint64_t length) {
    std::string out;
    while (out.size() < length) {
        ASSIGN_OR_RETURN(OutputSlice slice, pm.output(id, from + out.size(), length - out.size()));
        if (slice.bytes.empty()) {
            break;
        }
        if (slice.bytes.size() > length - out.size()) {
            slice.bytes.resize(length - out.size());
        }
        out += slice.bytes;
    }
    return out;
}

Result<OutputWindow> output_window(ProcessManager& pm, const std::string& id, uint64_t total_bytes,
                                   uint64_t total_lines, const WindowLimits& limits,
                                   std::string_view spill_path) {
    OutputWindow w;
    w.info.original_bytes = total_bytes;
    w.info.original_lines = total_lines;
    if (total_bytes == 0) {
        return w;
    }

    // The head (and, for a small output, everything).
    const bool whole = total_bytes <= kFetchWhole;
    ASSIGN_OR_RETURN(std::string head_raw,
                     fetch_output(pm, id, 0, whole ? total_bytes : kWindowFetch));
    const bool head_is_all = head_raw.size() >= total_bytes;
    std::vector<RawLine> head_lines = split_raw(head_raw, 0);

    if (head_is_all) {
        std::vector<std::string> rendered;
        rendered.reserve(head_lines.size());
        size_t bytes = 0;
        for (const RawLine& l : head_lines) {
            rendered.push_back(render_line(l.body()));
            bytes += rendered.back().size() + 1;
        }
        if (rendered.size() <= limits.max_lines && bytes <= limits.max_bytes + 1) {
            w.text = fmt::format("{}", fmt::join(rendered, "\n"));
            w.info.shown_head_lines = rendered.size();
            return w;
        }
    }

    // The tail: from the start of its first line, but no more than one fetch's worth.
    std::string tail_storage;
    std::vector<RawLine> tail_lines;
    if (head_is_all) {
        tail_lines = head_lines;
    } else {
        uint64_t tail_from = total_bytes - std::min(total_bytes, kWindowFetch);
        bool starts_line = false;
        if (total_lines > limits.tail_lines) {
            ASSIGN_OR_RETURN(uint64_t line_begin,
                             pm.line_start(id, total_lines - limits.tail_lines + 1));
            if (line_begin >= tail_from) {
                tail_from = line_begin;
                starts_line = true;
            }
        }
        ASSIGN_OR_RETURN(tail_storage, fetch_output(pm, id, tail_from, total_bytes - tail_from));
        tail_lines = split_raw(tail_storage, tail_from);
        if (tail_from > 0 && !tail_lines.empty() && !starts_line) {
            // Starts mid-line unless the byte before is a '\n'.
            ASSIGN_OR_RETURN(std::string before, fetch_output(pm, id, tail_from - 1, 1));
            if (before != "\n") {
                tail_lines.erase(tail_lines.begin());
            }
        }
        // The head's last piece is incomplete when the fetch cut it.
        if (!head_lines.empty() && !head_lines.back().complete()) {
            if (head_lines.size() > 1) {
                head_lines.pop_back();
            }
        }
    }

    const size_t reserve = std::min<size_t>(limits.max_bytes / 2, 256 + spill_path.size());
    const size_t budget = limits.max_bytes - reserve;
    const size_t ratio_total = std::max<size_t>(1, limits.head_lines + limits.tail_lines);
    const size_t head_budget = budget * limits.head_lines / ratio_total;

    std::vector<std::string> head;
    size_t head_used = 0;
    uint64_t head_end = 0;
    for (const RawLine& l : head_lines) {
        if (head.size() == limits.head_lines || !l.complete()) {
            break;
        }
        std::string r = render_line(l.body());
        if (head_used + r.size() + 1 > head_budget) {
            break;
        }
        head_used += r.size() + 1;
        head_end = l.end();
        head.push_back(std::move(r));
    }
    bool head_cut = false;
    if (head.empty() && !head_lines.empty() && head_budget > 0) {
        const std::string_view piece = utf8_prefix(head_lines.front().body(), head_budget);
        std::string r = render_line(piece);
        if (r.size() > head_budget) {
            r = std::string(utf8_prefix(r, head_budget));
        }
        head_used = r.size() + 1;
        head_end = piece.size();
        head.push_back(std::move(r));
        head_cut = true;
    }

    const size_t tail_budget = budget > head_used ? budget - head_used : 0;
    std::vector<std::string> tail;  // last line first
    size_t tail_used = 0;
    uint64_t tail_begin = total_bytes;
    for (size_t k = tail_lines.size(); k-- > 0;) {
        const RawLine& l = tail_lines[k];
        if (tail.size() == limits.tail_lines || l.begin < head_end) {
            break;
        }
        std::string r = render_line(l.body());
        if (tail_used + r.size() + 1 > tail_budget) {
            break;
        }
        tail_used += r.size() + 1;
        tail_begin = l.begin;
        tail.push_back(std::move(r));
    }
    const uint64_t head_shown = head_cut ? 0 : head.size();
    bool tail_cut = false;
    if (tail.empty() && !tail_lines.empty() && tail_budget > 0 &&
        tail_lines.back().begin >= head_end) {
        const std::string_view body = tail_lines.back().body();
        const std::string_view piece = utf8_suffix(body, tail_budget);
        std::string r = render_line(piece);
        if (r.size() > tail_budget) {
            r = std::string(utf8_suffix(r, tail_budget));
        }
        tail_begin = tail_lines.back().begin + (body.size() - piece.size());
        tail.push_back(std::move(r));
        tail_cut = true;
    }
    std::reverse(tail.begin(), tail.end());
    const uint64_t tail_shown = tail_cut ? 0 : tail.size();

    w.truncated = true;
    w.omitted_bytes = tail_begin > head_end ? tail_begin - head_end : 0;
    w.info.shown_head_lines = head_shown;
    w.info.shown_tail_lines = tail_shown;
    w.info.omitted_lines =
        total_lines > head_shown + tail_shown ? total_lines - head_shown - tail_shown : 0;
    w.info.spill_path = std::string(spill_path);

    std::string text = fmt::format("{}", fmt::join(head, "\n"));
    if (!text.empty() || !head.empty()) {
        text += '\n';
    }
    text += omission_marker(w.info.omitted_lines, w.omitted_bytes, spill_path);
    if (!tail.empty()) {
        text += '\n';
        text += fmt::format("{}", fmt::join(tail, "\n"));
    }
    w.text = std::move(text);
    return w;
}

Result<OutputPage> output_page(ProcessManager& pm, const std::string& id, uint64_t from,
                               uint64_t total_bytes, uint64_t total_lines, size_t max_lines,
                               size_t max_bytes) {
    OutputPage page;
    page.end = from;
    if (from >= total_bytes) {
        return page;
    }
    const uint64_t want = std::min<uint64_t>(total_bytes - from, 2 * max_bytes + 4096);
    ASSIGN_OR_RETURN(OutputSlice first, pm.output(id, from, want));
    std::string raw = std::move(first.bytes);
    if (raw.size() < want) {
        ASSIGN_OR_RETURN(std::string more,
                         fetch_output(pm, id, from + raw.size(), want - raw.size()));
        raw += more;
    }
    raw.resize(std::min<size_t>(raw.size(), want));
    const std::vector<RawLine> lines = split_raw(raw, from);

    std::vector<std::string> shown;
    size_t used = 0;
    bool cut = false;
    for (const RawLine& l : lines) {
        if (shown.size() == max_lines) {
            break;
        }
        const bool final_partial = !l.complete() && l.end() >= total_bytes;
        if (!l.complete() && !final_partial) {
            if (!shown.empty()) {
                break;
            }
            // One line longer than the whole fetch: show a piece of it.
            const std::string_view piece = utf8_prefix(l.body(), max_bytes);
            std::string r = render_line(piece);
            shown.emplace_back(utf8_prefix(r, max_bytes));
            page.end = l.begin + std::max<size_t>(1, piece.size());
            cut = true;
            break;
        }
        std::string r = render_line(l.body());
        if (used + r.size() + 1 > max_bytes + 1) {
            if (shown.empty()) {
                const std::string_view piece = utf8_prefix(l.body(), max_bytes);
                shown.emplace_back(utf8_prefix(render_line(piece), max_bytes));
                page.end = l.begin + std::max<size_t>(1, piece.size());
                cut = true;
            }
            break;
        }
        used += r.size() + 1;
        page.end = l.end();
        shown.push_back(std::move(r));
    }
    page.lines = shown.size();
    if (!shown.empty()) {
        page.first_line = first.first_line;
        page.last_line = first.first_line + shown.size() - 1;
    }
    page.text = fmt::format("{}", fmt::join(shown, "\n"));
    page.remaining_bytes = total_bytes - page.end;
    if (page.remaining_bytes > 0) {
        const uint64_t after = total_lines > page.last_line ? total_lines - page.last_line : 0;
        page.remaining_lines = cut ? after + 1 : std::max<uint64_t>(after, 1);
    }
    return page;
}

}  // namespace stockade::tools
