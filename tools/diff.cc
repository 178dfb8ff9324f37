#include "tools/diff.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "common/word_scan.h"
#include "tools/text.h"

namespace stockade::tools {
namespace {

enum class OpKind : uint8_t { kEqual, kDelete, kInsert };

struct Op {
    OpKind kind = OpKind::kEqual;
    size_t old_index = 0;  // the line's index in `before` (kEqual, kDelete)
    size_t new_index = 0;  // the line's index in `after` (kEqual, kInsert)
};

// Myers' greedy forward search with the per-step frontier kept for the backtrack. Returns the
// edit script for a[0,n) → b[0,m), or nothing if it needs more than max_d edits.
bool myers(const std::vector<int>& a, const std::vector<int>& b, size_t a0, size_t n, size_t b0,
           size_t m, int max_d, std::vector<Op>& out) {
    const auto n_len = static_cast<long>(n);
    const auto m_len = static_cast<long>(m);
    const long limit = std::min<long>(n_len + m_len, max_d);
    const long offset = limit + 1;
    std::vector<long> v(static_cast<size_t>(2 * limit + 3), 0);
    std::vector<std::vector<long>> trace;
    auto at = [&](long k) -> long& {
        return v[static_cast<size_t>(k + offset)];
    };

    long found = -1;
    for (long d = 0; d <= limit && found < 0; ++d) {
        trace.emplace_back(v.begin() + (offset - d - 1), v.begin() + (offset + d + 2));
        for (long k = -d; k <= d; k += 2) {
            long x = (k == -d || (k != d && at(k - 1) < at(k + 1))) ? at(k + 1) : at(k - 1) + 1;
            long y = x - k;
            while (x < n_len && y < m_len &&
                   a[a0 + static_cast<size_t>(x)] == b[b0 + static_cast<size_t>(y)]) {
                ++x;
                ++y;
            }
            at(k) = x;
            if (x >= n_len && y >= m_len) {
                found = d;
                break;
            }
        }
    }
    if (found < 0) {
        return false;
    }

    std::vector<Op> rev;
    long x = n_len;
    long y = m_len;
    for (long d = found; d > 0; --d) {
        const std::vector<long>& s = trace[static_cast<size_t>(d)];
        auto prev = [&](long k) {
            return s[static_cast<size_t>(k + d + 1)];
        };
        const long k = x - y;
        const long prev_k = (k == -d || (k != d && prev(k - 1) < prev(k + 1))) ? k + 1 : k - 1;
        const long prev_x = prev(prev_k);
        const long prev_y = prev_x - prev_k;
        while (x > prev_x && y > prev_y) {
            --x;
            --y;
            rev.push_back(
                {OpKind::kEqual, a0 + static_cast<size_t>(x), b0 + static_cast<size_t>(y)});
        }
        if (x == prev_x) {
            --y;
            rev.push_back(
                {OpKind::kInsert, a0 + static_cast<size_t>(x), b0 + static_cast<size_t>(y)});
        } else {
            --x;
            rev.push_back(
                {OpKind::kDelete, a0 + static_cast<size_t>(x), b0 + static_cast<size_t>(y)});
        }
    }
    while (x > 0 && y > 0) {
        --x;
        --y;
        rev.push_back({OpKind::kEqual, a0 + static_cast<size_t>(x), b0 + static_cast<size_t>(y)});
    }
    out.insert(out.end(), rev.rbegin(), rev.rend());
    return true;
}

std::string range(size_t start, size_t length) {
    // GNU convention: an empty range names the line before it; a length of 1 is implied.
    const size_t first = length == 0 ? start : start + 1;
    if (length == 1) {
        return fmt::format("{}", first);
    }
    return fmt::format("{},{}", first, length);
}

void append_line(std::string& out, char prefix, std::string_view line) {
    out += prefix;
    if (line.ends_with('\n')) {
        out += line;
    } else {
        out += line;
        out += "\n\\ No newline at end of file\n";
    }
}

bool at_line_start(std::string_view text, size_t i) {
    return i == 0 || text[i - 1] == '\n';
}

// The part of `before` and `after` a diff has to look at: the lines between the longest common
// run of whole lines at the start and at the end, widened by `context` common lines on each
// side. Found on bytes, so a one-line change in a 10 MB file splits and hashes only a few lines.
struct Window {
    size_t start = 0;       // where it starts in both (the common prefix is the same text)
    size_t before_end = 0;  // where it ends in `before`
    size_t after_end = 0;   // and in `after`
    size_t first_line = 0;  // the 0-based number of its first line
};

// Compared a block at a time with memcmp, then byte by byte in the block that differs.
constexpr size_t kCompareBlock = 4096;

size_t common_prefix(std::string_view a, std::string_view b) {
    const size_t n = std::min(a.size(), b.size());
    size_t i = 0;
    while (i + kCompareBlock <= n && std::memcmp(a.data() + i, b.data() + i, kCompareBlock) == 0) {
        i += kCompareBlock;
    }
    while (i < n && a[i] == b[i]) {
        ++i;
    }
    return i;
}

// The bytes `a` and `b` share at their ends, at most `limit`.
size_t common_suffix(std::string_view a, std::string_view b, size_t limit) {
    size_t k = 0;
    while (k + kCompareBlock <= limit &&
           std::memcmp(a.data() + a.size() - k - kCompareBlock,
                       b.data() + b.size() - k - kCompareBlock, kCompareBlock) == 0) {
        k += kCompareBlock;
    }
    while (k < limit && a[a.size() - 1 - k] == b[b.size() - 1 - k]) {
        ++k;
    }
    return k;
}

Window changed_window(std::string_view before, std::string_view after, size_t context) {
    const size_t shorter = std::min(before.size(), after.size());
    size_t start = common_prefix(before, after);
    while (!at_line_start(before, start)) {
        --start;
    }
    // Bytes shared at the end, not reaching into the common prefix.
    const size_t common_end = common_suffix(before, after, shorter - start);
    size_t before_end = before.size() - common_end;
    size_t after_end = after.size() - common_end;
    while (before_end < before.size() &&
           !(at_line_start(before, before_end) && at_line_start(after, after_end))) {
        ++before_end;
        ++after_end;
    }
    for (size_t k = 0; k < context && start > 0; ++k) {
        --start;
        while (!at_line_start(before, start)) {
            --start;
        }
    }
    for (size_t k = 0; k < context && before_end < before.size(); ++k) {
        const size_t nl = before.find('\n', before_end);
        const size_t step = (nl == std::string_view::npos ? before.size() : nl + 1) - before_end;
        before_end += step;
        after_end += step;
    }
    return {start, before_end, after_end, word_scan::count_byte(before.substr(0, start), '\n')};
}

}  // namespace

DiffResult unified_diff(std::string_view before, std::string_view after, std::string_view path,
                        const DiffOptions& options) {
    DiffResult result;
    if (before == after) {
        return result;
    }
    const auto ctx = static_cast<size_t>(std::max(0, options.context));
    const Window w = changed_window(before, after, ctx);
    const std::vector<std::string_view> old_lines =
        lines_with_breaks(before.substr(w.start, w.before_end - w.start));
    const std::vector<std::string_view> new_lines =
        lines_with_breaks(after.substr(w.start, w.after_end - w.start));

    std::unordered_map<std::string_view, int> ids;
    auto intern = [&](const std::vector<std::string_view>& lines) {
        std::vector<int> out;
        out.reserve(lines.size());
        for (std::string_view line : lines) {
            out.push_back(ids.emplace(line, static_cast<int>(ids.size())).first->second);
        }
        return out;
    };
    const std::vector<int> a = intern(old_lines);
    const std::vector<int> b = intern(new_lines);

    size_t prefix = 0;
    while (prefix < a.size() && prefix < b.size() && a[prefix] == b[prefix]) {
        ++prefix;
    }
    size_t suffix = 0;
    while (suffix < a.size() - prefix && suffix < b.size() - prefix &&
           a[a.size() - 1 - suffix] == b[b.size() - 1 - suffix]) {
        ++suffix;
    }

    std::vector<Op> ops;
    for (size_t i = 0; i < prefix; ++i) {
        ops.push_back({OpKind::kEqual, i, i});
    }
    const size_t n = a.size() - prefix - suffix;
    const size_t m = b.size() - prefix - suffix;
    if (!myers(a, b, prefix, n, prefix, m, options.max_edit_distance, ops)) {
        for (size_t i = 0; i < n; ++i) {
            ops.push_back({OpKind::kDelete, prefix + i, prefix + m});
        }
        for (size_t j = 0; j < m; ++j) {
            ops.push_back({OpKind::kInsert, prefix + n, prefix + j});
        }
    }
    for (size_t i = 0; i < suffix; ++i) {
        ops.push_back({OpKind::kEqual, a.size() - suffix + i, b.size() - suffix + i});
    }

    // Old/new line counts before each op, for the hunk headers.
    std::vector<size_t> old_before(ops.size() + 1, 0);
    std::vector<size_t> new_before(ops.size() + 1, 0);
    std::vector<size_t> changes;
    for (size_t i = 0; i < ops.size(); ++i) {
        old_before[i + 1] = old_before[i] + (ops[i].kind != OpKind::kInsert ? 1 : 0);
        new_before[i + 1] = new_before[i] + (ops[i].kind != OpKind::kDelete ? 1 : 0);
        if (ops[i].kind != OpKind::kEqual) {
            changes.push_back(i);
        }
    }
    if (changes.empty()) {
        return result;
    }

    result.text = options.created ? "--- /dev/null\n" : fmt::format("--- a/{}\n", path);
    result.text += fmt::format("+++ b/{}\n", path);
    size_t g = 0;
    while (g < changes.size()) {
        size_t last = g;
        while (last + 1 < changes.size() && changes[last + 1] - changes[last] - 1 <= 2 * ctx) {
            ++last;
        }
        const size_t begin = changes[g] > ctx ? changes[g] - ctx : 0;
        const size_t end = std::min(ops.size(), changes[last] + ctx + 1);
        result.text += fmt::format(
            "@@ -{} +{} @@\n",
            range(w.first_line + old_before[begin], old_before[end] - old_before[begin]),
            range(w.first_line + new_before[begin], new_before[end] - new_before[begin]));
        for (size_t i = begin; i < end; ++i) {
            switch (ops[i].kind) {
                case OpKind::kEqual:
                    append_line(result.text, ' ', old_lines[ops[i].old_index]);
                    break;
                case OpKind::kDelete:
                    append_line(result.text, '-', old_lines[ops[i].old_index]);
                    ++result.deletions;
                    break;
                case OpKind::kInsert:
                    append_line(result.text, '+', new_lines[ops[i].new_index]);
                    ++result.additions;
                    break;
            }
        }
        g = last + 1;
    }
    return result;
}

}  // namespace stockade::tools
