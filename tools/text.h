// Text helpers shared by the file tools: UTF-8-safe cutting, line splitting, line endings and
// BOM, the `LINE→CONTENT` numbering, human-readable counts and sizes, and middle-out truncation
// with the spill marker of TOOL_PROTOCOL §1.3. Pure: no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/parse.h"
#include "common/utf8.h"

namespace stockade::tools {

// ---- UTF-8 (common/utf8.h) ----------------------------------------------------------------

// Keeps the first `max_chars` code points; when more followed, appends `marker`.
std::string truncate_chars(std::string_view s, size_t max_chars, std::string_view marker,
                           bool* truncated = nullptr);

// ---- Inert text ----------------------------------------------------------------------------
//
// What the model sees may be printed by a client to a terminal, which would execute control
// sequences in it (OSC 52 writes the clipboard, OSC 0 the window title, CSI 2J clears the
// screen). So every result's content is made inert, in one place: apply_backstop runs
// escape_controls on it last (tools may run it earlier, to count bytes as shown; it is
// idempotent). Spills and process logs keep the raw bytes.
//
// The rule: newline and tab are kept; every other C0 control (U+0000-U+001F, so CR too) and
// DEL is shown as \xNN, two lower-case hex digits ("\x1b", "\x07", "\x0d", "\x7f"); every C1
// control (U+0080-U+009F, two bytes in UTF-8) as \u00NN ("\u009b"). Invalid UTF-8 is
// replaced with U+FFFD first (sanitize_utf8), so no lone 8-bit C1 byte survives either.
// Escaping adds and removes no '\n', so line numbers and counts stay valid.
//
// The escapes are not reversible text: a file that contains the four characters \x1b looks
// the same as one that contains an ESC byte (read says when a page shows escaped controls).
// To quote such a line back to edit, old_string must contain the control character itself
// (in the JSON arguments: "\u001b"), not its escape: the edit cascade's escape-normalized
// strategy unescapes only \n \t \" \' and \\ (tools/edit_cascade.h), so an old_string with a
// literal "\x1b" matches only text that really contains backslash, x, 1, b.

enum class LineBreaks : uint8_t {
    kKeep,    // newline and tab stay as they are (content)
    kEscape,  // they are escaped too, as \x0a and \x09 (one-line texts such as titles)
};

// True when `s` holds a character escape_controls would escape.
bool has_control_chars(std::string_view s, LineBreaks breaks = LineBreaks::kKeep);
// `s` as valid UTF-8 with its control characters escaped as above.
std::string escape_controls(std::string_view s, LineBreaks breaks = LineBreaks::kKeep);

// A file name or path as a listing shows it (glob's paths, grep's file headers, read's
// directory entries and headers, "Did you mean" suggestions). A plain name is shown as it is.
// Any other is shown as a JSON string literal, e.g. "escape\nPASS forged-line", so that it
// stays on one line, cannot be mistaken for other lines or names, and can be pasted into a
// tool call's arguments to name the same file. Not plain: a C0 control (tab and newline
// included), DEL, a C1 control, a leading '"' (it would read as a quoted name), or invalid
// UTF-8 (shown as U+FFFD: JSON cannot hold such a name exactly). JSON escapes: \" \\ \b \f \n
// \r \t, and \u00NN for the other controls, DEL and C1 included.
std::string listed_name(std::string_view name);
bool is_plain_name(std::string_view name);

// ---- Lines -------------------------------------------------------------------------------

// Splits on '\n'. A final '\n' ends the last line rather than starting an empty one, so
// "a\nb\n" and "a\nb" are both two lines and "" is none. The views exclude the '\n'.
std::vector<std::string_view> split_lines(std::string_view text);
// Lines with their '\n' (the last may lack it): they reassemble byte for byte, and "x" and
// "x\n" differ.
std::vector<std::string_view> lines_with_breaks(std::string_view text);
size_t count_lines(std::string_view text);
// Whitespace and its trimming: common/parse.h's, one for every module.
using ::stockade::is_space;
using ::stockade::trim;
using ::stockade::trim_left;
using ::stockade::trim_right;
// The leading whitespace of a line.
std::string_view indentation(std::string_view line);

// ---- Line endings and BOM ----------------------------------------------------------------

inline constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

struct TextShape {
    bool bom = false;    // starts with the UTF-8 byte order mark
    bool crlf = false;   // has line breaks, and every one of them is "\r\n"
    bool mixed = false;  // has both "\r\n" and bare "\n" breaks (left as they are)
};
TextShape detect_shape(std::string_view bytes);
// Strips the BOM and, for a CRLF text, turns every "\r\n" into "\n".
std::string normalize_text(std::string_view bytes, const TextShape& shape);
// The same without a copy when there is nothing to change (most files): `bytes` itself, or
// the normalised text kept in `storage`.
std::string_view normalize_text(std::string_view bytes, const TextShape& shape,
                                std::string& storage);
// The inverse: every "\n" becomes "\r\n" for a CRLF text; the BOM goes back in front.
std::string restore_shape(std::string_view text, const TextShape& shape);
// "\r\n" → "\n" everywhere.
std::string crlf_to_lf(std::string_view s);

// ---- Numbering and counts ----------------------------------------------------------------

// One line in the read/edit format: the number right-aligned in six columns, then "→".
//   "   141→  compress(state)"
std::string number_line(size_t number, std::string_view line);
// The same, appended to `out`.
void append_numbered_line(std::string& out, size_t number, std::string_view line);
// Lines numbered from `first_line`, joined with '\n' (no final newline).
std::string number_lines(const std::vector<std::string_view>& lines, size_t first_line);

std::string with_thousands(uint64_t n);   // 1842 → "1,842"
std::string format_size(uint64_t bytes);  // "512 bytes", "9.5 KB", "58 KB", "12.3 MB"
// "1 line", "2 lines", "1,842 lines".
std::string count_of(uint64_t n, std::string_view one, std::string_view many);

// Shows `s` between double quotes as a C-style literal (\t, \r, \", \\, \xNN), cut to
// `max_chars` code points with "…".
std::string quote(std::string_view s, size_t max_chars = 100);

// ---- Truncation --------------------------------------------------------------------------

// Reported in metadata.truncation (snake_case keys of TOOL_PROTOCOL §1.1).
struct TruncationInfo {
    uint64_t original_bytes = 0;
    uint64_t original_lines = 0;
    uint64_t shown_head_lines = 0;
    uint64_t shown_tail_lines = 0;
    uint64_t omitted_lines = 0;
    std::string spill_path{};  // empty when the full output could not be spilled

    [[nodiscard]] nlohmann::json to_json() const;
};

struct TruncateLimits {
    size_t max_lines = 0;
    size_t max_bytes = 0;
    size_t head_lines = 0;  // head_lines + tail_lines <= max_lines
    size_t tail_lines = 0;
};

bool exceeds(std::string_view text, const TruncateLimits& limits);

// The one marker line between head and tail:
//   [... 1,842 lines omitted (58 KB). Full output: PATH — read or grep that file for the rest.]
// Without a spill path: "[... 1,842 lines omitted (58 KB).]"
std::string omission_marker(uint64_t lines, uint64_t bytes, std::string_view spill_path);

struct Truncated {
    std::string text{};
    TruncationInfo info{};
};

// Middle-out: keeps up to head_lines from the start and tail_lines from the end within
// max_bytes (the marker included), and puts the marker between them. A line too long for its
// share is cut at a code point boundary. Text within the limits comes back unchanged.
Truncated truncate_middle_out(std::string_view text, const TruncateLimits& limits,
                              std::string_view spill_path);

}  // namespace stockade::tools
