// What `bash` and `process` share to show a process's output to the model: terminal bytes made
// readable (ANSI escape sequences stripped, carriage-return progress bars collapsed, backspaces
// applied, invalid UTF-8 replaced), the middle-out window of a finished command and the pages of
// `process read`, both read from the ProcessManager piecewise (never the whole output: it can
// be gigabytes), and the small formats (durations, clocks, signal names, status phrases).
//
// Line numbers are the ProcessManager's: 1-based, split on '\n', a trailing partial line counts.
// Rendering keeps one rendered line per raw line, so numbers stay valid after rendering.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "tools/process_manager.h"
#include "tools/text.h"

namespace stockade::tools {

// ---- Rendering ---------------------------------------------------------------------------

// Removes escape sequences: CSI (ESC [ … final), OSC (ESC ] … BEL or ESC \), DCS/SOS/PM/APC
// strings, and the other ESC sequences (ESC ( B, ESC 7, …). An unfinished sequence at the end
// is dropped.
std::string strip_ansi(std::string_view bytes);
// One raw line (without its '\n') as the model sees it: escapes stripped, BEL and other control
// characters (not tab) dropped, backspace erasing the character before it, trailing '\r's
// dropped (PTY line ends are "\r\n"), then only the text after the last remaining '\r' kept
// (what a terminal shows after a progress bar redraws its line), UTF-8 made valid.
std::string render_line(std::string_view raw);
// render_line for every line of `raw` (split_lines semantics), joined with '\n'.
std::string render_text(std::string_view raw);
// Prefixes every non-empty line with `prefix`.
std::string indent_lines(std::string_view text, std::string_view prefix = "  ");

// ---- Formats -----------------------------------------------------------------------------

// 850 → "0.9s", 3200 → "3.2s", 42000 → "42.0s", 125000 → "2m 05s", 3723000 → "1h 02m 03s".
std::string format_duration(std::chrono::milliseconds ms);
// A whole number of seconds when it is one ("120s"), else format_duration.
std::string format_timeout(std::chrono::milliseconds ms);
// "04:32", "1:02:03" past an hour.
std::string format_clock(std::chrono::milliseconds ms);
// "SIGKILL"; "signal 99" for an unknown number.
std::string signal_name(int signal);
// How a process stands, for sentences: "still running", "exited with code 1", "killed by
// SIGKILL", "stopped (SIGTERM)", "stopped (exit code 143)", "failed: <why>".
std::string status_phrase(const ProcessInfo& info);
// " (node, python3)", " (node and 2 more)": the names of what it left running; "" without.
std::string leftover_list(const ProcessInfo& info);
// "; 2 processes it left running were stopped (node, python3)" once it ended; "" without.
std::string leftovers_clause(const ProcessInfo& info);

// ---- The network --------------------------------------------------------------------------

// One line for a result whose command was refused connections (network mode allowlist):
// "network: refused 2 connections to evil.example:443 (not in the allowlist; the user can add
// network.access(evil.example))"; several targets are listed after a colon, the first few by
// name. "" when nothing was refused.
std::string network_refusals_line(const std::vector<NetworkRefusal>& refused);
// The same for a result's metadata: [{"host", "port", "count", "reason", "hint"}, ...].
nlohmann::json network_refusals_json(const std::vector<NetworkRefusal>& refused);

// ---- The sandbox's processes -----------------------------------------------------------------

// Whether a start failed for lack of room for one more process (fork's EAGAIN: the pids limit).
bool out_of_processes(const Error& error);
// For such a failure: what holds the sandbox's processes and what to do, in one or two
// sentences ("" when the processes cannot be counted).
std::string process_limit_message(ProcessManager& pm);
// The last line of `process list`: "Processes in the sandbox: 37 of 4,096 allowed.", with a
// warning near the limit.
std::string load_line(const ProcessLoad& load);
// A command on one line for titles and lists: newlines shown as "⏎", cut to `max_chars`.
std::string one_line(std::string_view command, size_t max_chars = 60);

// ---- Reading output ----------------------------------------------------------------------

// Up to `length` bytes from `from`, asking the ProcessManager as many times as needed.
Result<std::string> fetch_output(ProcessManager& pm, const std::string& id, uint64_t from,
                                 uint64_t length);

struct WindowLimits {
    size_t max_lines = 400;
    size_t max_bytes = 30 * 1024;  // of rendered text, the marker included
    size_t head_lines = 250;
    size_t tail_lines = 150;
};

struct OutputWindow {
    std::string text{};  // rendered, no final newline; "" for no output
    bool truncated = false;
    uint64_t omitted_bytes = 0;  // raw bytes of the log not shown
    TruncationInfo info{};       // original_* are the raw totals
};

// The first `total_bytes` of a process's output (its `total_lines` lines) within `limits`:
// all of it when it fits once rendered, else head and tail lines with the standard marker of
// TOOL_PROTOCOL §1.3 between them, pointing at `spill_path` (the process's log). Reads at most
// a couple of hundred KB however large the output is.
Result<OutputWindow> output_window(ProcessManager& pm, const std::string& id, uint64_t total_bytes,
                                   uint64_t total_lines, const WindowLimits& limits,
                                   std::string_view spill_path);

struct OutputPage {
    std::string text{};       // rendered lines, no final newline
    uint64_t lines = 0;       // lines shown (a cut line counts)
    uint64_t first_line = 0;  // 1-based; 0 when nothing is shown
    uint64_t last_line = 0;
    uint64_t end = 0;              // byte offset just after what was shown (the next cursor)
    uint64_t remaining_bytes = 0;  // after `end`, up to total_bytes
    uint64_t remaining_lines = 0;  // lines (or rest of a line) after `end`
};

// From byte `from` onwards (up to `total_bytes`), whole lines while they fit in `max_lines`
// and `max_bytes` of rendered text; a single line longer than that is cut (and the rest comes
// next time). A final partial line is shown only when it is the end of the output.
Result<OutputPage> output_page(ProcessManager& pm, const std::string& id, uint64_t from,
                               uint64_t total_bytes, uint64_t total_lines, size_t max_lines,
                               size_t max_bytes);

}  // namespace stockade::tools
