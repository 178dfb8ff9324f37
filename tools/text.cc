#include "tools/text.h"

#include <algorithm>
#include <array>
#include <charconv>

#include <fmt/format.h>

#include "common/json_escape.h"
#include "common/word_scan.h"

namespace stockade::tools {
std::string truncate_chars(std::string_view s, size_t max_chars, std::string_view marker,
                           bool* truncated) {
    size_t chars = 0;
    for (size_t i = 0; i < s.size(); ++i) {
        if (utf8_continuation(s[i])) {
            continue;
        }
        if (chars == max_chars) {
            if (truncated != nullptr) {
                *truncated = true;
            }
            return std::string(s.substr(0, i)) + std::string(marker);
        }
        ++chars;
    }
    if (truncated != nullptr) {
        *truncated = false;
    }
    return std::string(s);
}

namespace {

bool is_c0_or_del(unsigned char u) {
    return u < 0x20U || u == 0x7FU;
}

// A C1 control (U+0080-U+009F) starts at s[i]: its UTF-8 encoding is C2 80 .. C2 9F.
bool is_c1_at(std::string_view s, size_t i) {
    return static_cast<unsigned char>(s[i]) == 0xC2U && i + 1 < s.size() &&
           static_cast<unsigned char>(s[i + 1]) >= 0x80U &&
           static_cast<unsigned char>(s[i + 1]) <= 0x9FU;
}

bool escaped_c0(char c, LineBreaks breaks) {
    if (!is_c0_or_del(static_cast<unsigned char>(c))) {
        return false;
    }
    return breaks == LineBreaks::kEscape || (c != '\n' && c != '\t');
}

// The bytes at which an escape may start, for each LineBreaks: the escaped C0 controls, DEL
// and 0xC2 (a C1 control's first byte). Looked up only in the words word_scan flags.
using ByteSet = std::array<bool, 256>;
constexpr ByteSet escape_starts(LineBreaks breaks) {
    ByteSet set{};
    for (unsigned u = 0; u < 0x20U; ++u) {
        set[u] = breaks == LineBreaks::kEscape || (u != '\n' && u != '\t');
    }
    set[0x7FU] = true;
    set[0xC2U] = true;
    return set;
}
constexpr ByteSet kEscapeStartsKeep = escape_starts(LineBreaks::kKeep);
constexpr ByteSet kEscapeStartsAll = escape_starts(LineBreaks::kEscape);

}  // namespace

bool has_control_chars(std::string_view s, LineBreaks breaks) {
    using namespace word_scan;
    const ByteSet& starts = breaks == LineBreaks::kKeep ? kEscapeStartsKeep : kEscapeStartsAll;
    const auto maybe = [](uint64_t word) {
        return any_below(word, 0x20U) | any_equal(word, 0x7FU) | any_equal(word, 0xC2U);
    };
    for (size_t i = 0; i < s.size();) {
        i = skip_clear_words(s, i, maybe);
        for (const size_t end = std::min(i + 8, s.size()); i < end; ++i) {
            if (starts[static_cast<unsigned char>(s[i])] &&
                (static_cast<unsigned char>(s[i]) != 0xC2U || is_c1_at(s, i))) {
                return true;
            }
        }
    }
    return false;
}

std::string escape_controls(std::string_view s, LineBreaks breaks) {
    if (!is_valid_utf8(s)) {
        return escape_controls(sanitize_utf8(s), breaks);
    }
    if (!has_control_chars(s, breaks)) {
        return std::string(s);
    }
    std::string out;
    out.reserve(s.size() + 32);
    for (size_t i = 0; i < s.size(); ++i) {
        const auto u = static_cast<unsigned char>(s[i]);
        if (escaped_c0(s[i], breaks)) {
            out += fmt::format("\\x{:02x}", u);
        } else if (is_c1_at(s, i)) {
            out += fmt::format("\\u{:04x}", static_cast<unsigned char>(s[i + 1]));
            ++i;
        } else {
            out += s[i];
        }
    }
    return out;
}

bool is_plain_name(std::string_view name) {
    if (name.starts_with('"') || !is_valid_utf8(name)) {
        return false;
    }
    for (size_t i = 0; i < name.size(); ++i) {
        if (is_c0_or_del(static_cast<unsigned char>(name[i])) || is_c1_at(name, i)) {
            return false;
        }
    }
    return true;
}

std::string listed_name(std::string_view name) {
    if (is_plain_name(name)) {
        return std::string(name);
    }
    const std::string text = sanitize_utf8(name);
    std::string out = "\"";
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (append_short_json_escape(out, c)) {
            continue;
        }
        if (is_c0_or_del(static_cast<unsigned char>(c))) {
            out += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
        } else if (is_c1_at(text, i)) {
            out += fmt::format("\\u{:04x}", static_cast<unsigned char>(text[i + 1]));
            ++i;
        } else {
            out += c;
        }
    }
    out += '"';
    return out;
}

std::vector<std::string_view> lines_with_breaks(std::string_view text) {
    std::vector<std::string_view> lines;
    for (size_t start = 0; start < text.size();) {
        const size_t nl = text.find('\n', start);
        const size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
        lines.push_back(text.substr(start, end - start));
        start = end;
    }
    return lines;
}

std::vector<std::string_view> split_lines(std::string_view text) {
    std::vector<std::string_view> lines;
    size_t start = 0;
    while (start < text.size()) {
        const size_t nl = text.find('\n', start);
        if (nl == std::string_view::npos) {
            lines.push_back(text.substr(start));
            break;
        }
        lines.push_back(text.substr(start, nl - start));
        start = nl + 1;
    }
    return lines;
}

size_t count_lines(std::string_view text) {
    if (text.empty()) {
        return 0;
    }
    const size_t breaks = word_scan::count_byte(text, '\n');
    return text.back() == '\n' ? breaks : breaks + 1;
}

std::string_view indentation(std::string_view line) {
    size_t i = 0;
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) {
        ++i;
    }
    return line.substr(0, i);
}

TextShape detect_shape(std::string_view bytes) {
    TextShape shape;
    shape.bom = bytes.starts_with(kUtf8Bom);
    if (bytes.find('\r') == std::string_view::npos) {
        return shape;  // no CR, so no CRLF (most files): one memchr instead of a byte loop
    }
    size_t crlf = 0;
    size_t bare = 0;
    for (size_t i = 0; i < bytes.size(); ++i) {
        if (bytes[i] == '\n') {
            if (i > 0 && bytes[i - 1] == '\r') {
                ++crlf;
            } else {
                ++bare;
            }
        }
    }
    shape.crlf = crlf > 0 && bare == 0;
    shape.mixed = crlf > 0 && bare > 0;
    return shape;
}

std::string crlf_to_lf(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') {
            continue;
        }
        out += s[i];
    }
    return out;
}

std::string normalize_text(std::string_view bytes, const TextShape& shape) {
    if (shape.bom && bytes.starts_with(kUtf8Bom)) {
        bytes.remove_prefix(kUtf8Bom.size());
    }
    return shape.crlf ? crlf_to_lf(bytes) : std::string(bytes);
}

std::string_view normalize_text(std::string_view bytes, const TextShape& shape,
                                std::string& storage) {
    if (!shape.crlf) {
        return shape.bom && bytes.starts_with(kUtf8Bom) ? bytes.substr(kUtf8Bom.size()) : bytes;
    }
    storage = normalize_text(bytes, shape);
    return storage;
}

std::string restore_shape(std::string_view text, const TextShape& shape) {
    std::string out;
    out.reserve(text.size() + text.size() / 32 + kUtf8Bom.size());
    if (shape.bom) {
        out += kUtf8Bom;
    }
    if (!shape.crlf) {
        out += text;
        return out;
    }
    for (char c : text) {
        if (c == '\n') {
            out += '\r';
        }
        out += c;
    }
    return out;
}

std::string number_line(size_t number, std::string_view line) {
    std::string out;
    append_numbered_line(out, number, line);
    return out;
}

void append_numbered_line(std::string& out, size_t number, std::string_view line) {
    // "{:>6}→{}" without a format string to parse: read numbers thousands of lines a call.
    std::array<char, 24> digits{};
    const auto written = std::to_chars(digits.data(), digits.data() + digits.size(), number);
    const auto width = static_cast<size_t>(written.ptr - digits.data());
    constexpr size_t kColumns = 6;
    if (width < kColumns) {
        out.append(kColumns - width, ' ');
    }
    out.append(digits.data(), width);
    out += "\u2192";
    out += line;
}

std::string number_lines(const std::vector<std::string_view>& lines, size_t first_line) {
    std::string out;
    for (size_t i = 0; i < lines.size(); ++i) {
        if (i > 0) {
            out += '\n';
        }
        out += number_line(first_line + i, lines[i]);
    }
    return out;
}

std::string with_thousands(uint64_t n) {
    std::string digits = std::to_string(n);
    std::string out;
    const size_t len = digits.size();
    for (size_t i = 0; i < len; ++i) {
        if (i > 0 && (len - i) % 3 == 0) {
            out += ',';
        }
        out += digits[i];
    }
    return out;
}

std::string format_size(uint64_t bytes) {
    constexpr double kKiB = 1024.0;
    if (bytes < 1024) {
        return bytes == 1 ? "1 byte" : fmt::format("{} bytes", bytes);
    }
    const auto value = static_cast<double>(bytes);
    std::string_view unit = "KB";
    double scaled = value / kKiB;
    if (scaled >= kKiB) {
        scaled /= kKiB;
        unit = "MB";
        if (scaled >= kKiB) {
            scaled /= kKiB;
            unit = "GB";
        }
    }
    if (scaled < 9.95) {
        return fmt::format("{:.1f} {}", scaled, unit);
    }
    return fmt::format("{:.0f} {}", scaled, unit);
}

std::string count_of(uint64_t n, std::string_view one, std::string_view many) {
    return fmt::format("{} {}", with_thousands(n), n == 1 ? one : many);
}

std::string quote(std::string_view s, size_t max_chars) {
    bool cut = false;
    const std::string text = truncate_chars(sanitize_utf8(s), max_chars, "", &cut);
    std::string out = "\"";
    for (char c : text) {
        const auto u = static_cast<unsigned char>(c);
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\n':
                out += "\\n";
                break;
            default:
                if (u < 0x20U || u == 0x7FU) {
                    out += fmt::format("\\x{:02x}", u);
                } else {
                    out += c;
                }
        }
    }
    if (cut) {
        out += "\u2026";
    }
    out += '"';
    return out;
}

nlohmann::json TruncationInfo::to_json() const {
    nlohmann::json j = {
        {"original_bytes", original_bytes},     {"original_lines", original_lines},
        {"shown_head_lines", shown_head_lines}, {"shown_tail_lines", shown_tail_lines},
        {"omitted_lines", omitted_lines},
    };
    if (!spill_path.empty()) {
        j["spill_path"] = spill_path;
    }
    return j;
}

bool exceeds(std::string_view text, const TruncateLimits& limits) {
    return text.size() > limits.max_bytes || count_lines(text) > limits.max_lines;
}

std::string omission_marker(uint64_t lines, uint64_t bytes, std::string_view spill_path) {
    const std::string what =
        fmt::format("[... {} omitted ({})", count_of(lines, "line", "lines"), format_size(bytes));
    if (spill_path.empty()) {
        return what + ".]";
    }
    return fmt::format("{}. Full output: {} \u2014 read or grep that file for the rest.]", what,
                       spill_path);
}

Truncated truncate_middle_out(std::string_view text, const TruncateLimits& limits,
                              std::string_view spill_path) {
    Truncated out;
    out.info.original_bytes = text.size();
    // Lines with their '\n', so that head + tail reassemble byte for byte.
    const std::vector<std::string_view> lines = lines_with_breaks(text);
    out.info.original_lines = lines.size();
    if (!exceeds(text, limits)) {
        out.text = std::string(text);
        out.info.shown_head_lines = lines.size();
        return out;
    }

    // Room for the marker line itself (a spill path is at most a few hundred bytes).
    const size_t reserve = std::min<size_t>(limits.max_bytes / 2, 256 + spill_path.size());
    const size_t budget = limits.max_bytes - reserve;
    const size_t ratio_total = std::max<size_t>(1, limits.head_lines + limits.tail_lines);
    const size_t head_budget = budget * limits.head_lines / ratio_total;
    const size_t tail_budget = budget - head_budget;

    size_t head = 0;
    size_t head_bytes = 0;
    while (head < limits.head_lines && head < lines.size() &&
           head_bytes + lines[head].size() <= head_budget) {
        head_bytes += lines[head].size();
        ++head;
    }
    size_t tail = 0;
    size_t tail_bytes = 0;
    while (tail < limits.tail_lines && head + tail < lines.size() &&
           tail_bytes + lines[lines.size() - 1 - tail].size() <= tail_budget) {
        tail_bytes += lines[lines.size() - 1 - tail].size();
        ++tail;
    }

    std::string head_text(text.substr(0, head_bytes));
    std::string tail_text(text.substr(text.size() - tail_bytes));
    // A line too long for its share: show a cut piece of it rather than nothing.
    if (head == 0 && !lines.empty() && head_budget > 0) {
        head_text = std::string(utf8_prefix(lines.front(), head_budget));
    }
    if (tail == 0 && lines.size() > head + 1 && tail_budget > 0) {
        tail_text = std::string(utf8_suffix(lines.back(), tail_budget));
    }

    out.info.shown_head_lines = head;
    out.info.shown_tail_lines = tail;
    out.info.omitted_lines = lines.size() - head - tail;
    out.info.spill_path = std::string(spill_path);
    const uint64_t shown = head_text.size() + tail_text.size();
    const uint64_t omitted_bytes = text.size() > shown ? text.size() - shown : 0;

    out.text = std::move(head_text);
    if (!out.text.empty() && out.text.back() != '\n') {
        out.text += '\n';
    }
    out.text += omission_marker(out.info.omitted_lines, omitted_bytes, spill_path);
    if (!tail_text.empty()) {
        out.text += '\n';
        out.text += tail_text;
    }
    return out;
}

}  // namespace stockade::tools
