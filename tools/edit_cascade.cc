#include "tools/edit_cascade.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tools/similar.h"
#include "tools/text.h"

namespace stockade::tools {
namespace {

// The normalised file content with a line index.
class Text {
public:
    explicit Text(std::string content) : s_(std::move(content)) {
        // trimmed_ holds views into s_: a Text is never copied or moved.
        if (!s_.empty()) {
            starts_.push_back(0);
        }
        for (size_t i = 0; i < s_.size(); ++i) {
            if (s_[i] == '\n' && i + 1 < s_.size()) {
                starts_.push_back(i + 1);
            }
        }
        trimmed_.reserve(starts_.size());
        for (size_t i = 0; i < starts_.size(); ++i) {
            trimmed_.push_back(trim(line(i)));
        }
    }

    Text(const Text&) = delete;
    Text& operator=(const Text&) = delete;
    Text(Text&&) = delete;
    Text& operator=(Text&&) = delete;
    ~Text() = default;

    [[nodiscard]] const std::string& str() const { return s_; }
    [[nodiscard]] size_t lines() const { return starts_.size(); }
    [[nodiscard]] size_t start(size_t i) const { return starts_[i]; }
    // End of line i's content, excluding its '\n'.
    [[nodiscard]] size_t content_end(size_t i) const {
        const size_t next = i + 1 < starts_.size() ? starts_[i + 1] : s_.size();
        return next > starts_[i] && s_[next - 1] == '\n' ? next - 1 : next;
    }
    [[nodiscard]] bool has_newline(size_t i) const { return content_end(i) < s_.size(); }
    [[nodiscard]] std::string_view line(size_t i) const {
        const std::string_view all = s_;
        return all.substr(starts_[i], content_end(i) - starts_[i]);
    }
    [[nodiscard]] std::string_view trimmed(size_t i) const { return trimmed_[i]; }
    // 0-based line holding byte `offset`.
    [[nodiscard]] size_t line_of(size_t offset) const {
        const auto it = std::upper_bound(starts_.begin(), starts_.end(), offset);
        return it == starts_.begin() ? 0 : static_cast<size_t>(it - starts_.begin()) - 1;
    }

private:
    std::string s_;
    std::vector<size_t> starts_;
    std::vector<std::string_view> trimmed_;
};

// old_string as lines; a final "\n" ends the last line (it is remembered, not a line).
struct OldLines {
    std::vector<std::string_view> lines;
    bool trailing_newline = false;
    bool has_content = false;  // at least one non-blank line
};

OldLines split_old(std::string_view old) {
    OldLines out;
    out.trailing_newline = old.ends_with('\n');
    size_t start = 0;
    while (true) {
        const size_t nl = old.find('\n', start);
        if (nl == std::string_view::npos) {
            if (start < old.size() || !out.trailing_newline) {
                out.lines.push_back(old.substr(start));
            }
            break;
        }
        out.lines.push_back(old.substr(start, nl - start));
        start = nl + 1;
        if (start == old.size()) {
            break;
        }
    }
    for (std::string_view line : out.lines) {
        if (!trim(line).empty()) {
            out.has_content = true;
        }
    }
    return out;
}

struct Candidate {
    size_t start = 0;  // byte span in the normalised content
    size_t end = 0;
    std::string replacement;
    bool reindented = false;
    bool indentation_only = false;  // the block differs from old_string only by indentation
    double score = 0;
    size_t size_penalty = 0;  // block-anchor: |block lines - old_string lines|
};

struct Found {
    std::vector<Candidate> matches;
    std::optional<EditFailure> failure;  // a guard that fired
};

// Occurrences of needle; `overlapping` also counts those that overlap an earlier one (for the
// uniqueness check: "aa" occurs twice in "aaa").
std::vector<size_t> exact_positions(std::string_view haystack, std::string_view needle,
                                    bool overlapping = false) {
    std::vector<size_t> out;
    if (needle.empty()) {
        return out;
    }
    const size_t step = overlapping ? 1 : needle.size();
    for (size_t pos = haystack.find(needle); pos != std::string_view::npos;
         pos = haystack.find(needle, pos + step)) {
        out.push_back(pos);
    }
    return out;
}

// ---- The indentation rule ----------------------------------------------------------------

struct Shift {
    bool add = true;     // true: the file is deeper than old_string by `prefix`
    std::string prefix;  // empty: no shift
};

// The one indentation change that turns every non-blank old line into its file line, if any.
std::optional<Shift> uniform_shift(
    const std::vector<std::pair<std::string_view, std::string_view>>& pairs) {
    std::optional<Shift> shift;
    for (const auto& [old_line, file_line] : pairs) {
        if (trim(old_line).empty() || trim(file_line).empty()) {
            continue;
        }
        const std::string_view oi = indentation(old_line);
        const std::string_view fi = indentation(file_line);
        Shift here;
        if (fi.size() >= oi.size() && fi.ends_with(oi)) {
            here = {true, std::string(fi.substr(0, fi.size() - oi.size()))};
        } else if (oi.ends_with(fi)) {
            here = {false, std::string(oi.substr(0, oi.size() - fi.size()))};
        } else {
            return std::nullopt;
        }
        if (here.prefix.empty()) {
            here.add = true;
        }
        if (!shift) {
            shift = here;
        } else if (shift->add != here.add || shift->prefix != here.prefix) {
            return std::nullopt;
        }
    }
    return shift;
}

// The indentation of the least indented non-blank line.
std::string_view depth(const std::vector<std::string_view>& lines) {
    std::optional<std::string_view> best;
    for (std::string_view line : lines) {
        if (trim(line).empty()) {
            continue;
        }
        const std::string_view ind = indentation(line);
        if (!best || ind.size() < best->size()) {
            best = ind;
        }
    }
    return best.value_or(std::string_view{});
}

// Applies the indentation rule to new_string for a block match.
std::string adapt_new_string(
    std::string_view new_string, const std::vector<std::string_view>& old_lines,
    const std::vector<std::string_view>& file_lines,
    const std::vector<std::pair<std::string_view, std::string_view>>& pairs, bool* reindented) {
    *reindented = false;
    const std::optional<Shift> shift = uniform_shift(pairs);
    if (!shift || shift->prefix.empty()) {
        return std::string(new_string);
    }
    std::vector<std::string_view> segments;
    for (size_t start = 0;;) {
        const size_t nl = new_string.find('\n', start);
        if (nl == std::string_view::npos) {
            segments.push_back(new_string.substr(start));
            break;
        }
        segments.push_back(new_string.substr(start, nl - start));
        start = nl + 1;
    }
    const std::string_view new_depth = depth(segments);
    if (new_depth == depth(file_lines) || new_depth != depth(old_lines)) {
        return std::string(new_string);  // already at the file's depth, or at a depth of its own
    }
    std::string out;
    for (size_t i = 0; i < segments.size(); ++i) {
        if (i > 0) {
            out += '\n';
        }
        const std::string_view seg = segments[i];
        if (trim(seg).empty()) {
            out += seg;
        } else if (shift->add) {
            out += shift->prefix;
            out += seg;
        } else if (seg.starts_with(shift->prefix)) {
            out += seg.substr(shift->prefix.size());
        } else {
            return std::string(new_string);
        }
    }
    *reindented = true;
    return out;
}

// A whole-line block [first, last] of the file replaced by new_string.
Candidate block_candidate(const Text& t, size_t first, size_t last, const OldLines& old,
                          std::string_view new_string, bool anchors_only) {
    Candidate c;
    c.start = t.start(first);
    c.end = t.content_end(last);
    if (old.trailing_newline && t.has_newline(last)) {
        ++c.end;
    }
    std::vector<std::string_view> file_lines;
    for (size_t i = first; i <= last; ++i) {
        file_lines.push_back(t.line(i));
    }
    std::vector<std::pair<std::string_view, std::string_view>> pairs;
    if (anchors_only || file_lines.size() != old.lines.size()) {
        pairs.emplace_back(old.lines.front(), file_lines.front());
        pairs.emplace_back(old.lines.back(), file_lines.back());
    } else {
        for (size_t i = 0; i < file_lines.size(); ++i) {
            pairs.emplace_back(old.lines[i], file_lines[i]);
        }
    }
    c.replacement = adapt_new_string(new_string, old.lines, file_lines, pairs, &c.reindented);
    if (!anchors_only && file_lines.size() == old.lines.size()) {
        const std::optional<Shift> shift = uniform_shift(pairs);
        bool same_body = shift.has_value() && !shift->prefix.empty();
        for (size_t i = 0; same_body && i < file_lines.size(); ++i) {
            same_body = trim_right(trim_left(old.lines[i])) == trim_right(trim_left(file_lines[i]));
        }
        c.indentation_only = same_body;
    }
    return c;
}

// Drops from new_string the whitespace that old_string had around its text, for matches that
// cover only the trimmed text.
std::string boundary_adjusted(std::string_view new_string, std::string_view old) {
    const std::string_view core = trim(old);
    const size_t lead_len =
        core.empty() ? old.size() : static_cast<size_t>(core.data() - old.data());
    const std::string_view lead = old.substr(0, lead_len);
    const std::string_view trail = old.substr(lead_len + core.size());
    std::string_view r = new_string;
    if (!lead.empty() && r.starts_with(lead)) {
        r.remove_prefix(lead.size());
    }
    if (!trail.empty() && r.ends_with(trail)) {
        r.remove_suffix(trail.size());
    }
    return std::string(r);
}

std::string unescape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '\\' || i + 1 == s.size()) {
            out += s[i];
            continue;
        }
        const char c = s[i + 1];
        switch (c) {
            case 'n':
                out += '\n';
                break;
            case 't':
                out += '\t';
                break;
            case 'r':
                out += '\r';
                break;
            case '\'':
            case '"':
            case '`':
            case '$':
            case '\\':
                out += c;
                break;
            case '\n':
                out += '\n';
                break;
            default:
                out += s[i];
                out += c;
                break;
        }
        ++i;
    }
    return out;
}

// Collapses whitespace runs to one space and trims; `map` gets each output byte's source offset.
std::string collapse_whitespace(std::string_view s, std::vector<size_t>* map) {
    std::string out;
    bool pending = false;
    size_t pending_at = 0;
    for (size_t i = 0; i < s.size(); ++i) {
        if (is_space(s[i])) {
            if (!out.empty() && !pending) {
                pending = true;
                pending_at = i;
            }
            continue;
        }
        if (pending) {
            out += ' ';
            if (map != nullptr) {
                map->push_back(pending_at);
            }
            pending = false;
        }
        out += s[i];
        if (map != nullptr) {
            map->push_back(i);
        }
    }
    return out;
}

// ---- Strategies --------------------------------------------------------------------------

Found find_exact(const Text& t, std::string_view old, std::string_view new_string,
                 bool overlapping) {
    Found f;
    for (size_t pos : exact_positions(t.str(), old, overlapping)) {
        f.matches.push_back({pos, pos + old.size(), std::string(new_string)});
    }
    return f;
}

Found find_line_trimmed(const Text& t, const OldLines& old, std::string_view new_string) {
    Found f;
    const size_t k = old.lines.size();
    if (!old.has_content || k > t.lines()) {
        return f;
    }
    std::vector<std::string_view> want;
    for (std::string_view line : old.lines) {
        want.push_back(trim(line));
    }
    for (size_t i = 0; i + k <= t.lines(); ++i) {
        bool all = true;
        for (size_t j = 0; j < k && all; ++j) {
            all = t.trimmed(i + j) == want[j];
        }
        if (all) {
            f.matches.push_back(block_candidate(t, i, i + k - 1, old, new_string, false));
        }
    }
    return f;
}

Found find_whitespace_normalized(const Text& t, std::string_view old, const OldLines& old_lines,
                                 std::string_view new_string) {
    Found f;
    const std::string want = collapse_whitespace(old, nullptr);
    if (want.empty()) {
        return f;
    }
    const size_t k = old_lines.lines.size();
    if (k == 1) {
        for (size_t i = 0; i < t.lines(); ++i) {
            std::vector<size_t> map;
            const std::string norm = collapse_whitespace(t.line(i), &map);
            for (size_t pos : exact_positions(norm, want, true)) {
                const size_t start = t.start(i) + map[pos];
                const size_t end = t.start(i) + map[pos + want.size() - 1] + 1;
                f.matches.push_back({start, end, boundary_adjusted(new_string, old)});
            }
        }
        return f;
    }
    if (k > t.lines()) {
        return f;
    }
    std::vector<std::string> want_lines;
    for (std::string_view line : old_lines.lines) {
        want_lines.push_back(collapse_whitespace(line, nullptr));
    }
    std::vector<std::string> file_norm;
    file_norm.reserve(t.lines());
    for (size_t i = 0; i < t.lines(); ++i) {
        file_norm.push_back(collapse_whitespace(t.line(i), nullptr));
    }
    for (size_t i = 0; i + k <= t.lines(); ++i) {
        bool all = true;
        for (size_t j = 0; j < k && all; ++j) {
            all = file_norm[i + j] == want_lines[j];
        }
        if (all) {
            f.matches.push_back(block_candidate(t, i, i + k - 1, old_lines, new_string, false));
        }
    }
    return f;
}

Found find_escape_normalized(const Text& t, std::string_view old, std::string_view new_string) {
    const std::string plain = unescape(old);
    if (plain == old || plain.empty()) {
        return {};
    }
    return find_exact(t, plain, unescape(new_string), true);
}

Found find_trimmed_boundary(const Text& t, std::string_view old, std::string_view new_string) {
    const std::string_view core = trim(old);
    if (core.empty() || core.size() == old.size()) {
        return {};
    }
    Found f;
    for (size_t pos : exact_positions(t.str(), core, true)) {
        f.matches.push_back({pos, pos + core.size(), boundary_adjusted(new_string, old)});
    }
    return f;
}

// Average similarity of the middle lines of old_string and of the file block [first, last],
// aligned by index; a line missing on one side counts as 0.
double middle_similarity(const Text& t, size_t first, size_t last, const OldLines& old) {
    const size_t old_mid = old.lines.size() - 2;
    const size_t file_mid = last - first - 1;
    const size_t n = std::max(old_mid, file_mid);
    if (n == 0) {
        return 1.0;
    }
    double total = 0;
    for (size_t j = 0; j < std::min(old_mid, file_mid); ++j) {
        total += similarity(trim(old.lines[j + 1]), t.trimmed(first + 1 + j));
    }
    return total / static_cast<double>(n);
}

struct AnchorBlock {
    size_t first = 0;
    size_t last = 0;
};

// Blocks whose first and last lines equal old_string's (trimmed), sized within `slack` lines.
std::vector<AnchorBlock> anchor_blocks(const Text& t, const OldLines& old, size_t slack) {
    std::vector<AnchorBlock> out;
    const size_t k = old.lines.size();
    if (k < 3) {
        return out;
    }
    const std::string_view first = trim(old.lines.front());
    const std::string_view last = trim(old.lines.back());
    if (first.empty() || last.empty()) {
        return out;
    }
    const size_t min_size = std::max<size_t>(3, k - slack);
    const size_t max_size = k + slack;
    for (size_t i = 0; i < t.lines(); ++i) {
        if (t.trimmed(i) != first) {
            continue;
        }
        for (size_t size = min_size; size <= max_size && i + size <= t.lines(); ++size) {
            if (t.trimmed(i + size - 1) == last) {
                out.push_back({i, i + size - 1});
            }
        }
    }
    return out;
}

size_t size_slack(size_t k) {
    return k / 4;  // ±25% of old_string's line count
}

// Keeps the best-scoring candidates (then those closest to old_string's size); several still
// tied stay, and make the match ambiguous.
void keep_best(Found& f) {
    if (f.matches.size() < 2) {
        return;
    }
    double best = 0;
    for (const Candidate& c : f.matches) {
        best = std::max(best, c.score);
    }
    std::erase_if(f.matches, [&](const Candidate& c) { return c.score < best; });
    size_t penalty = SIZE_MAX;
    for (const Candidate& c : f.matches) {
        penalty = std::min(penalty, c.size_penalty);
    }
    std::erase_if(f.matches, [&](const Candidate& c) { return c.size_penalty > penalty; });
}

bool disproportionate(size_t candidate_chars, size_t old_chars) {
    return candidate_chars > std::max(3 * old_chars, old_chars + 1000);
}

void guard_proportion(const Text& t, Found& f, Strategy strategy, size_t old_chars) {
    if (f.matches.size() != 1) {
        return;
    }
    const Candidate& c = f.matches.front();
    if (!disproportionate(c.end - c.start, old_chars)) {
        return;
    }
    EditFailure failure;
    failure.kind = EditFailureKind::kDisproportionate;
    failure.strategy = strategy;
    failure.first_line = t.line_of(c.start) + 1;
    failure.last_line = t.line_of(c.end > c.start ? c.end - 1 : c.start) + 1;
    failure.candidate_chars = c.end - c.start;
    failure.old_chars = old_chars;
    f.failure = failure;
}

Found find_block_anchor(const Text& t, const OldLines& old, std::string_view new_string) {
    Found f;
    for (const AnchorBlock& b : anchor_blocks(t, old, size_slack(old.lines.size()))) {
        const double score = middle_similarity(t, b.first, b.last, old);
        if (score >= kBlockAnchorThreshold) {
            Candidate c = block_candidate(t, b.first, b.last, old, new_string, true);
            c.score = score;
            const size_t size = b.last - b.first + 1;
            c.size_penalty =
                size > old.lines.size() ? size - old.lines.size() : old.lines.size() - size;
            f.matches.push_back(std::move(c));
        }
    }
    keep_best(f);
    return f;
}

Found find_context_aware(const Text& t, const OldLines& old, std::string_view new_string) {
    Found f;
    const size_t k = old.lines.size();
    for (const AnchorBlock& b : anchor_blocks(t, old, 0)) {
        size_t same = 0;
        for (size_t j = 1; j + 1 < k; ++j) {
            if (t.trimmed(b.first + j) == trim(old.lines[j])) {
                ++same;
            }
        }
        const double ratio = static_cast<double>(same) / static_cast<double>(k - 2);
        if (ratio >= kContextAwareThreshold) {
            Candidate c = block_candidate(t, b.first, b.last, old, new_string, false);
            c.score = ratio;
            f.matches.push_back(std::move(c));
        }
    }
    keep_best(f);
    return f;
}

// ---- Near-miss ---------------------------------------------------------------------------

std::string strip_all_space(std::string_view s) {
    std::string out;
    for (char c : s) {
        if (!is_space(c)) {
            out += c;
        }
    }
    return out;
}

std::optional<NearMiss> describe_near_miss(const Text& t, const OldLines& old, size_t first,
                                           size_t last, double score) {
    const size_t n = std::min(old.lines.size(), last - first + 1);
    for (size_t j = 0; j < n; ++j) {
        const std::string_view want = old.lines[j];
        const std::string_view have = t.line(first + j);
        if (want == have) {
            continue;
        }
        NearMiss m;
        m.first_line = first + 1;
        m.last_line = last + 1;
        m.line = first + j + 1;
        m.whitespace_only = strip_all_space(want) == strip_all_space(have);
        m.expected = std::string(want);
        m.actual = std::string(have);
        m.score = score;
        return m;
    }
    return std::nullopt;
}

std::optional<NearMiss> find_near_miss(const Text& t, const OldLines& old) {
    const size_t k = old.lines.size();
    if (!old.has_content || t.lines() == 0) {
        return std::nullopt;
    }
    // The best block-anchor candidate, below the threshold since it did not match.
    std::optional<AnchorBlock> best;
    double best_score = -1;
    for (const AnchorBlock& b : anchor_blocks(t, old, size_slack(k))) {
        const double score = middle_similarity(t, b.first, b.last, old);
        if (score > best_score) {
            best_score = score;
            best = b;
        }
    }
    if (best) {
        if (auto m = describe_near_miss(t, old, best->first, best->last, best_score)) {
            return m;
        }
    }
    // Otherwise the most similar window of old_string's size, if it is close enough to help.
    constexpr double kWindowThreshold = 0.5;
    constexpr size_t kBudget = 20'000'000;  // Levenshtein cells, to bound the time on big files
    size_t spent = 0;
    best_score = -1;
    best.reset();
    std::vector<std::string_view> want;
    for (std::string_view line : old.lines) {
        want.push_back(trim(line));
    }
    const size_t windows = t.lines() >= k ? t.lines() - k + 1 : 1;
    const size_t size = std::min(k, t.lines());
    for (size_t i = 0; i < windows && spent < kBudget; ++i) {
        double total = 0;
        for (size_t j = 0; j < size; ++j) {
            const std::string_view have = t.trimmed(i + j);
            spent += (want[j].size() + 1) * (have.size() + 1);
            total += similarity(want[j], have);
        }
        const double score = total / static_cast<double>(k);
        if (score > best_score) {
            best_score = score;
            best = AnchorBlock{i, i + size - 1};
        }
    }
    if (best && best_score >= kWindowThreshold) {
        return describe_near_miss(t, old, best->first, best->last, best_score);
    }
    return std::nullopt;
}

// ---- Assembly ----------------------------------------------------------------------------

EditFailure failure_of(EditFailureKind kind) {
    EditFailure f;
    f.kind = kind;
    return f;
}

std::vector<size_t> distinct_start_lines(const Text& t, const std::vector<Candidate>& matches) {
    std::vector<size_t> lines;
    lines.reserve(matches.size());
    for (const Candidate& c : matches) {
        lines.push_back(t.line_of(c.start) + 1);
    }
    std::sort(lines.begin(), lines.end());
    lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
    return lines;
}

size_t newlines_in(std::string_view s) {
    return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
}

EditOutcome build(const Text& t, const TextShape& shape, std::vector<Candidate> matches,
                  Strategy strategy) {
    std::sort(matches.begin(), matches.end(),
              [](const Candidate& a, const Candidate& b) { return a.start < b.start; });
    const std::string& c = t.str();
    std::string out;
    out.reserve(c.size() + matches.front().replacement.size());
    size_t cursor = 0;
    for (const Candidate& m : matches) {
        out.append(c, cursor, m.start - cursor);
        out += m.replacement;
        cursor = m.end;
    }
    out.append(c, cursor, std::string::npos);

    const Candidate& first = matches.front();
    if (out == c) {
        EditFailure f = failure_of(EditFailureKind::kNoChange);
        f.strategy = strategy;
        f.first_line = t.line_of(first.start) + 1;
        f.last_line = t.line_of(first.end > first.start ? first.end - 1 : first.start) + 1;
        return f;
    }
    EditApplied applied;
    applied.strategy = strategy;
    applied.replacements = matches.size();
    applied.reindented = first.reindented;
    applied.old_first_line = t.line_of(first.start) + 1;
    applied.old_last_line = t.line_of(first.end > first.start ? first.end - 1 : first.start) + 1;
    // The first region starts at the same offset in the new content.
    const std::string_view before = c;
    applied.new_first_line = newlines_in(before.substr(0, first.start)) + 1;
    std::string_view rep = first.replacement;
    if (rep.ends_with('\n')) {
        rep.remove_suffix(1);
    }
    applied.new_last_line = applied.new_first_line + newlines_in(rep);
    applied.content = restore_shape(out, shape);
    return applied;
}

// Resolves one strategy's findings: nothing (try the next), a guard failure, ambiguity, or the
// edit.
std::optional<EditOutcome> settle(const Text& t, const TextShape& shape, Found found,
                                  Strategy strategy) {
    if (found.failure) {
        return EditOutcome(*found.failure);
    }
    if (found.matches.empty()) {
        return std::nullopt;
    }
    if (found.matches.size() > 1) {
        EditFailure f = failure_of(EditFailureKind::kAmbiguous);
        f.strategy = strategy;
        f.lines = distinct_start_lines(t, found.matches);
        f.locations = found.matches.size();
        return EditOutcome(f);
    }
    if (strategy == Strategy::kLineTrimmed && found.matches.front().indentation_only) {
        strategy = Strategy::kIndentationFlexible;
    }
    return build(t, shape, std::move(found.matches), strategy);
}

}  // namespace

std::string_view strategy_name(Strategy strategy) {
    switch (strategy) {
        case Strategy::kExact:
            return "exact";
        case Strategy::kLineTrimmed:
            return "line-trimmed";
        case Strategy::kWhitespaceNormalized:
            return "whitespace-normalized";
        case Strategy::kIndentationFlexible:
            return "indentation-flexible";
        case Strategy::kEscapeNormalized:
            return "escape-normalized";
        case Strategy::kTrimmedBoundary:
            return "trimmed-boundary";
        case Strategy::kBlockAnchor:
            return "block-anchor";
        case Strategy::kContextAware:
            return "context-aware";
        case Strategy::kMultiOccurrence:
            return "multi-occurrence";
    }
    return "unknown";
}

std::string_view strategy_phrase(Strategy strategy) {
    switch (strategy) {
        case Strategy::kExact:
            return "matched exactly";
        case Strategy::kLineTrimmed:
            return "matched with trimmed line comparison";
        case Strategy::kWhitespaceNormalized:
            return "matched with whitespace normalization";
        case Strategy::kIndentationFlexible:
            return "matched at a different indentation";
        case Strategy::kEscapeNormalized:
            return "matched after unescaping old_string";
        case Strategy::kTrimmedBoundary:
            return "matched with surrounding whitespace trimmed";
        case Strategy::kBlockAnchor:
            return "matched by its first and last lines (fuzzy middle)";
        case Strategy::kContextAware:
            return "matched by context lines (fuzzy)";
        case Strategy::kMultiOccurrence:
            return "every exact occurrence";
    }
    return "unknown";
}

EditOutcome apply_edit(const EditSpec& spec) {
    if (spec.old_string.empty()) {
        return failure_of(EditFailureKind::kEmptyOldString);
    }
    if (spec.old_string == spec.new_string) {
        return failure_of(EditFailureKind::kIdentical);
    }
    const TextShape shape = detect_shape(spec.file);
    const Text t(normalize_text(spec.file, shape));
    // The model's strings follow the file's convention, except in a mixed file, where the
    // model's line breaks are taken as written.
    auto conform = [&](std::string_view s) {
        std::string out = shape.mixed ? std::string(s) : crlf_to_lf(s);
        if (shape.bom && out.starts_with(kUtf8Bom)) {
            out.erase(0, kUtf8Bom.size());
        }
        return out;
    };
    const std::string old = conform(spec.old_string);
    const std::string new_string = conform(spec.new_string);
    if (old.empty()) {
        return failure_of(EditFailureKind::kEmptyOldString);
    }
    if (old == new_string) {
        return failure_of(EditFailureKind::kIdentical);
    }
    const OldLines old_lines = split_old(old);

    if (spec.replace_all) {
        Found f = find_exact(t, old, new_string, false);
        if (f.matches.empty()) {
            EditFailure nf = failure_of(EditFailureKind::kNotFound);
            nf.strategy = Strategy::kMultiOccurrence;
            nf.near_miss = find_near_miss(t, old_lines);
            return nf;
        }
        return build(t, shape, std::move(f.matches), Strategy::kMultiOccurrence);
    }

    if (auto r = settle(t, shape, find_exact(t, old, new_string, true), Strategy::kExact)) {
        return *r;
    }
    if (auto r =
            settle(t, shape, find_line_trimmed(t, old_lines, new_string), Strategy::kLineTrimmed)) {
        return *r;
    }
    if (auto r = settle(t, shape, find_whitespace_normalized(t, old, old_lines, new_string),
                        Strategy::kWhitespaceNormalized)) {
        return *r;
    }
    if (auto r = settle(t, shape, find_escape_normalized(t, old, new_string),
                        Strategy::kEscapeNormalized)) {
        return *r;
    }
    if (auto r = settle(t, shape, find_trimmed_boundary(t, old, new_string),
                        Strategy::kTrimmedBoundary)) {
        return *r;
    }
    Found anchored = find_block_anchor(t, old_lines, new_string);
    guard_proportion(t, anchored, Strategy::kBlockAnchor, old.size());
    if (auto r = settle(t, shape, std::move(anchored), Strategy::kBlockAnchor)) {
        return *r;
    }
    Found context = find_context_aware(t, old_lines, new_string);
    guard_proportion(t, context, Strategy::kContextAware, old.size());
    if (auto r = settle(t, shape, std::move(context), Strategy::kContextAware)) {
        return *r;
    }
    EditFailure nf = failure_of(EditFailureKind::kNotFound);
    nf.near_miss = find_near_miss(t, old_lines);
    return nf;
}

}  // namespace stockade::tools
