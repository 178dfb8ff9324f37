#include "tools/edit_cascade.h"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/word_scan.h"
#include "tools/similar.h"
#include "tools/text.h"

namespace stockade::tools {
namespace {

// The normalised file content with a line index. It borrows the content, which outlives it.
class Text {
public:
    explicit Text(std::string_view content) : s_(content) {
        // trimmed_ holds views into s_: a Text is never copied or moved.
        if (!s_.empty()) {
            starts_.push_back(0);
        }
        for (size_t nl = s_.find('\n'); nl != std::string_view::npos && nl + 1 < s_.size();
             nl = s_.find('\n', nl + 1)) {
            starts_.push_back(nl + 1);
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

    [[nodiscard]] std::string_view str() const { return s_; }
    [[nodiscard]] size_t lines() const { return starts_.size(); }
    [[nodiscard]] size_t start(size_t i) const { return starts_[i]; }
    // End of line i's content, excluding its '\n'.
    [[nodiscard]] size_t content_end(size_t i) const {
        const size_t next = i + 1 < starts_.size() ? starts_[i + 1] : s_.size();
        return next > starts_[i] && s_[next - 1] == '\n' ? next - 1 : next;
    }
    [[nodiscard]] bool has_newline(size_t i) const { return content_end(i) < s_.size(); }
    [[nodiscard]] std::string_view line(size_t i) const {
        return s_.substr(starts_[i], content_end(i) - starts_[i]);
    }
    [[nodiscard]] std::string_view trimmed(size_t i) const { return trimmed_[i]; }
    // 0-based line holding byte `offset`.
    [[nodiscard]] size_t line_of(size_t offset) const {
        const auto it = std::upper_bound(starts_.begin(), starts_.end(), offset);
        return it == starts_.begin() ? 0 : static_cast<size_t>(it - starts_.begin()) - 1;
    }

private:
    std::string_view s_;
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

// How a tolerant match's lines sit in the file, for the indentation rule; settle() turns it
// into the replacement once the match is known to be unique.
struct IndentFrame {
    enum class First : uint8_t {
        kWhole,             // the match covers whole lines
        kAfterIndentation,  // the match starts right after its first line's indentation
        kMidLine,           // the match starts after other text on its first line
    };
    First first = First::kWhole;
    // old_string's lines. For kAfterIndentation the first carries old_string's indentation of
    // that line in front of its text, and new_string's first line carries the same.
    std::vector<std::string> old_lines;
    size_t first_line = 0;  // the file block, 0-based, inclusive
    size_t last_line = 0;
    std::vector<std::pair<size_t, size_t>> pairs;  // (old_lines index, block index) that match
    std::string new_string;                        // as the indentation rule sees it
    std::string plain;                             // what is written when the rule changes nothing
};

struct Candidate {
    size_t start = 0;  // byte span in the normalised content
    size_t end = 0;
    std::string replacement;  // set by settle() when there is a frame
    std::optional<IndentFrame> frame{};
    bool reindented = false;
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

bool is_blank(std::string_view line) {
    return trim(line).empty();
}

// Split on '\n'; a final '\n' leaves an empty last segment, so joining with '\n' restores s.
std::vector<std::string_view> segments_of(std::string_view s) {
    std::vector<std::string_view> out;
    for (size_t start = 0;;) {
        const size_t nl = s.find('\n', start);
        if (nl == std::string_view::npos) {
            out.push_back(s.substr(start));
            return out;
        }
        out.push_back(s.substr(start, nl - start));
        start = nl + 1;
    }
}

std::string join_lines(const std::vector<std::string>& lines) {
    std::string out;
    for (size_t i = 0; i < lines.size(); ++i) {
        if (i > 0) {
            out += '\n';
        }
        out += lines[i];
    }
    return out;
}

struct Shift {
    bool add = true;     // true: the file is deeper than old_string by `prefix`
    std::string prefix;  // empty: no shift
};

// The one indentation change that turns every non-blank old line into its file line, if any.
std::optional<Shift> uniform_shift(
    const std::vector<std::pair<std::string_view, std::string_view>>& pairs) {
    std::optional<Shift> shift;
    for (const auto& [old_line, file_line] : pairs) {
        if (is_blank(old_line) || is_blank(file_line)) {
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
std::string_view depth(std::span<const std::string_view> lines) {
    std::optional<std::string_view> best;
    for (std::string_view line : lines) {
        if (is_blank(line)) {
            continue;
        }
        const std::string_view ind = indentation(line);
        if (!best || ind.size() < best->size()) {
            best = ind;
        }
    }
    return best.value_or(std::string_view{});
}

constexpr unsigned kSpaces = 1;
constexpr unsigned kTabs = 2;

unsigned indent_chars(std::string_view ind) {
    unsigned chars = 0;
    for (char c : ind) {
        chars |= c == '\t' ? kTabs : kSpaces;
    }
    return chars;
}

// The characters the non-blank lines are indented with.
unsigned indent_chars_of(std::span<const std::string_view> lines) {
    unsigned chars = 0;
    for (std::string_view line : lines) {
        if (!is_blank(line)) {
            chars |= indent_chars(indentation(line));
        }
    }
    return chars;
}

// The indentation step the lines use most: what a line's indentation adds to the previous
// non-blank line's when it extends it (ties: the shorter step, then the smaller bytes). Without
// a step, unless `steps_only`: a tab when the indented lines use tabs only, else the shortest
// indentation.
std::optional<std::string> indent_unit(std::span<const std::span<const std::string_view>> runs,
                                       bool steps_only) {
    std::map<std::string_view, size_t> steps;
    std::optional<std::string_view> shortest;
    unsigned chars = 0;
    for (std::span<const std::string_view> run : runs) {
        std::optional<std::string_view> prev;
        for (std::string_view line : run) {
            if (is_blank(line)) {
                continue;
            }
            const std::string_view ind = indentation(line);
            if (prev && ind.size() > prev->size() && ind.starts_with(*prev)) {
                ++steps[ind.substr(prev->size())];
            }
            if (!ind.empty() && (!shortest || ind.size() < shortest->size())) {
                shortest = ind;
            }
            chars |= indent_chars(ind);
            prev = ind;
        }
    }
    std::optional<std::string_view> best;
    size_t best_count = 0;
    for (const auto& [step, count] : steps) {
        if (count > best_count || (count == best_count && step.size() < best->size())) {
            best = step;
            best_count = count;
        }
    }
    if (best) {
        return std::string(*best);
    }
    if (steps_only) {
        return std::nullopt;
    }
    if (chars == kTabs) {
        return "\t";
    }
    if (shortest) {
        return std::string(*shortest);
    }
    return std::nullopt;
}

// How many copies of `unit` make `extra` (0 when it is not made of whole units).
size_t units_in(std::string_view extra, std::string_view unit) {
    if (unit.empty() || extra.empty() || extra.size() % unit.size() != 0) {
        return 0;
    }
    for (size_t i = 0; i < extra.size(); i += unit.size()) {
        if (extra.substr(i, unit.size()) != unit) {
            return 0;
        }
    }
    return extra.size() / unit.size();
}

constexpr size_t kMaxAlignCells = size_t{1} << 20;

// For each of `news`' lines from `from` on, the line of `olds` with the same trimmed, non-blank
// text that a longest common subsequence pairs it with; nothing when the strings are too long
// to align cheaply.
std::vector<std::optional<size_t>> align_lines(std::span<const std::string_view> news,
                                               std::span<const std::string_view> olds,
                                               size_t from) {
    std::vector<std::optional<size_t>> out(news.size());
    const size_t n = news.size() > from ? news.size() - from : 0;
    const size_t m = olds.size() > from ? olds.size() - from : 0;
    if (n == 0 || m == 0 || n > kMaxAlignCells / m) {
        return out;
    }
    const size_t width = m + 1;
    std::vector<uint32_t> lcs((n + 1) * width, 0);  // lcs[i][j]: of news[from+i..], olds[from+j..]
    auto same = [&](size_t i, size_t j) {
        const std::string_view a = trim(news[from + i]);
        return !a.empty() && a == trim(olds[from + j]);
    };
    for (size_t i = n; i-- > 0;) {
        for (size_t j = m; j-- > 0;) {
            lcs[i * width + j] = same(i, j)
                                     ? lcs[(i + 1) * width + j + 1] + 1
                                     : std::max(lcs[(i + 1) * width + j], lcs[i * width + j + 1]);
        }
    }
    for (size_t i = 0, j = 0; i < n && j < m;) {
        if (same(i, j) && lcs[i * width + j] == lcs[(i + 1) * width + j + 1] + 1) {
            out[from + i] = from + j;
            ++i;
            ++j;
        } else if (lcs[(i + 1) * width + j] >= lcs[i * width + j + 1]) {
            ++i;
        } else {
            ++j;
        }
    }
    return out;
}

struct Adapted {
    std::string replacement;
    bool reindented = false;
    bool indentation_differs = false;  // some matched line's indentation differs from old_string's
    std::optional<IndentationHint> refusal;
};

// Applies the indentation rule (header comment) to one tolerant match.
class Reindenter {
public:
    Reindenter(const Text& t, const IndentFrame& frame) : t_(t), fr_(frame) {
        from_ = fr_.first == IndentFrame::First::kMidLine ? 1 : 0;
        first_checked_ = fr_.first == IndentFrame::First::kWhole ? 0 : 1;
        for (const std::string& line : fr_.old_lines) {
            old_.emplace_back(line);
        }
        new_ = segments_of(fr_.new_string);
        for (size_t i = fr_.first_line; i <= fr_.last_line; ++i) {
            block_.push_back(t_.line(i));
        }
        block_of_.resize(old_.size());
        for (const auto& [o, b] : fr_.pairs) {
            if (o >= from_ && o < old_.size() && b < block_.size() && !is_blank(old_[o]) &&
                !is_blank(block_[b])) {
                pairs_.emplace_back(o, b);
                block_of_[o] = b;
            }
        }
        for (std::string_view line : block_) {
            if (!is_blank(line)) {
                block_inds_.push_back(indentation(line));
            }
        }
        allowed_ = indent_chars_of(block_);
        // The file's unit: the block's step, else the whole file's, else a guess from the
        // block's or the file's indentation.
        const std::array<std::span<const std::string_view>, 1> block_run{block_};
        file_unit_ = indent_unit(block_run, true);
        if (allowed_ == 0 || !file_unit_) {
            std::vector<std::string_view> all;
            all.reserve(t_.lines());
            for (size_t i = 0; i < t_.lines(); ++i) {
                all.push_back(t_.line(i));
            }
            if (allowed_ == 0) {
                allowed_ = indent_chars_of(all);
            }
            const std::array<std::span<const std::string_view>, 1> file_run{all};
            for (const auto& [run, steps_only] :
                 {std::pair{file_run, true}, std::pair{block_run, false},
                  std::pair{file_run, false}}) {
                if (!file_unit_) {
                    file_unit_ = indent_unit(run, steps_only);
                }
            }
        }
        if (allowed_ == 0) {
            allowed_ = kSpaces | kTabs;  // nothing in the file is indented: no constraint
        }
    }

    Adapted run() {
        Adapted a;
        std::vector<std::pair<std::string_view, std::string_view>> views;
        for (const auto& [o, b] : pairs_) {
            views.emplace_back(old_[o], block_[b]);
            a.indentation_differs =
                a.indentation_differs || indentation(old_[o]) != indentation(block_[b]);
        }
        std::optional<std::vector<std::string>> out;
        std::optional<size_t> unplaced;
        bool line_by_line = false;
        const std::optional<Shift> shift = uniform_shift(views);
        if (a.indentation_differs && shift && !shift->prefix.empty()) {
            out = shifted(*shift);
        } else if (!a.indentation_differs || prefers_as_written()) {
            out = as_written();
        } else {
            out = mapped(&unplaced);
            line_by_line = true;
        }
        // Whatever was chosen must be indented with the file's characters; re-indenting line
        // by line is the one way left to get there.
        if (out) {
            unplaced = first_inconsistent(*out);
            if (unplaced && !line_by_line) {
                out = mapped(&unplaced);
                if (out) {
                    unplaced = first_inconsistent(*out);
                }
            }
        }
        if (out && !unplaced) {
            return finish(std::move(a), std::move(*out));
        }
        a.refusal = hint(unplaced.value_or(first_checked_));
        return a;
    }

private:
    Adapted finish(Adapted a, std::vector<std::string> lines) const {
        if (fr_.first == IndentFrame::First::kAfterIndentation && !lines.empty()) {
            // The file's own indentation stays in front of the match.
            lines[0].erase(0, indentation(lines[0]).size());
        }
        a.replacement = join_lines(lines);
        a.reindented = a.replacement != fr_.plain;
        return a;
    }

    [[nodiscard]] std::vector<std::string> as_written() const {
        std::vector<std::string> out;
        out.reserve(new_.size());
        for (std::string_view seg : new_) {
            out.emplace_back(seg);
        }
        return out;
    }

    // DESIGN §7's uniform shift: new_string at old_string's depth moves by the shift; at the
    // file's depth, or at a depth of its own, it stays as written.
    [[nodiscard]] std::vector<std::string> shifted(const Shift& shift) const {
        const auto tail = [&](const auto& v) {
            return std::span<const std::string_view>(v).subspan(std::min(from_, v.size()));
        };
        const std::string_view new_depth = depth(tail(new_));
        if (new_depth == depth(tail(block_)) || new_depth != depth(tail(old_))) {
            return as_written();
        }
        std::vector<std::string> out = as_written();
        for (size_t i = from_; i < new_.size(); ++i) {
            const std::string_view seg = new_[i];
            if (is_blank(seg)) {
                continue;
            }
            if (shift.add) {
                out[i] = shift.prefix + std::string(seg);
            } else if (seg.starts_with(shift.prefix)) {
                out[i] = std::string(seg.substr(shift.prefix.size()));
            } else {
                return as_written();
            }
        }
        return out;
    }

    // Whether new_string, against indentation that is not one uniform shift, is already written
    // in the file's indentation: its unchanged lines (same text as an old_string line) carry the
    // file's indentation rather than old_string's; or, with no such line to tell, more of its
    // lines use an indentation only the block has than one only old_string has.
    [[nodiscard]] bool prefers_as_written() const {
        const std::vector<std::optional<size_t>> aligned = align_lines(new_, old_, from_);
        size_t model = 0;
        size_t file = 0;
        for (size_t i = first_checked_; i < new_.size(); ++i) {
            if (!aligned[i] || !block_of_[*aligned[i]]) {
                continue;
            }
            const std::string_view w = indentation(new_[i]);
            const std::string_view o = indentation(old_[*aligned[i]]);
            const std::string_view f = indentation(block_[*block_of_[*aligned[i]]]);
            if (w == o && w != f) {
                ++model;
            } else if (w == f && w != o) {
                ++file;
            }
        }
        if (model > 0 || file > 0) {
            return model == 0;
        }
        size_t only_old = 0;
        size_t only_file = 0;
        for (size_t i = first_checked_; i < new_.size(); ++i) {
            if (is_blank(new_[i])) {
                continue;
            }
            const std::string_view w = indentation(new_[i]);
            const bool in_old = std::any_of(pairs_.begin(), pairs_.end(), [&](const auto& p) {
                return indentation(old_[p.first]) == w;
            });
            const bool in_file =
                std::find(block_inds_.begin(), block_inds_.end(), w) != block_inds_.end();
            if (in_old && !in_file) {
                ++only_old;
            } else if (in_file && !in_old) {
                ++only_file;
            }
        }
        return only_file > only_old;
    }

    // Line-by-line re-indentation; nullopt with *unplaced set when a line has no place.
    std::optional<std::vector<std::string>> mapped(std::optional<size_t>* unplaced) const {
        const auto tail = [&](const auto& v) {
            return std::span<const std::string_view>(v).subspan(std::min(from_, v.size()));
        };
        // The model's indent unit: what its quoted lines say a level of the file is, where they
        // agree; else the steps its lines take.
        std::optional<std::string> model_unit = unit_from_pairs();
        if (!model_unit) {
            const std::array<std::span<const std::string_view>, 2> model_runs{tail(old_),
                                                                              tail(new_)};
            model_unit = indent_unit(model_runs, false);
        }
        const std::vector<std::optional<size_t>> aligned = align_lines(new_, old_, from_);
        std::vector<bool> kept(old_.size(), false);  // old_string lines new_string keeps
        for (const std::optional<size_t>& o : aligned) {
            if (o) {
                kept[*o] = true;
            }
        }
        std::vector<std::string> out = as_written();
        std::optional<size_t> anchor;
        std::optional<size_t> anchor_at;  // the new_string line the anchor was aligned from
        for (size_t i = from_; i < new_.size(); ++i) {
            if (aligned[i]) {
                anchor = aligned[i];
                anchor_at = i;
            }
            if (is_blank(new_[i])) {
                out[i].clear();
                continue;
            }
            // A changed line stands where an old_string line new_string drops stood: the same
            // distance after the last line both keep (before the first, for a leading one).
            std::optional<size_t> counterpart;
            if (!aligned[i]) {
                const size_t o = anchor ? *anchor + (i - *anchor_at) : i;
                if (o >= from_ && o < old_.size() && !kept[o] && block_of_[o]) {
                    counterpart = o;
                }
            }
            std::optional<std::string> ind =
                place(indentation(new_[i]), anchor, counterpart, model_unit);
            if (!ind) {
                *unplaced = i;
                return std::nullopt;
            }
            out[i] = *ind + std::string(new_[i].substr(indentation(new_[i]).size()));
        }
        return out;
    }

    // What one level of the file's indentation is in old_string, where its matched lines show it:
    // lines at two or more depths of the file (counted in its unit), each quoted as one margin
    // plus one string per level. Lines at one depth only cannot tell a level from the margin,
    // and a file that mixes tabs and spaces or lines that disagree say nothing.
    [[nodiscard]] std::optional<std::string> unit_from_pairs() const {
        if (mixed_file() || !file_unit_) {
            return std::nullopt;
        }
        std::vector<std::pair<size_t, std::string_view>> quoted;  // (file levels, old indentation)
        for (const auto& [o, b] : pairs_) {
            const std::string_view fi = indentation(block_[b]);
            const size_t levels = fi.empty() ? 0 : units_in(fi, *file_unit_);
            if (!fi.empty() && levels == 0) {
                return std::nullopt;
            }
            quoted.emplace_back(levels, indentation(old_[o]));
        }
        const auto [low, high] =
            std::minmax_element(quoted.begin(), quoted.end(),
                                [](const auto& a, const auto& b) { return a.first < b.first; });
        if (quoted.empty() || low->first == high->first || !high->second.starts_with(low->second)) {
            return std::nullopt;
        }
        const std::string_view extra = high->second.substr(low->second.size());
        const size_t levels = high->first - low->first;
        if (extra.empty() || extra.size() % levels != 0) {
            return std::nullopt;
        }
        const std::string unit(extra.substr(0, extra.size() / levels));
        if (units_in(extra, unit) != levels) {
            return std::nullopt;
        }
        // The margin: the shallowest line's indentation less its levels.
        std::string_view margin = low->second;
        for (size_t k = 0; k < low->first; ++k) {
            if (!margin.ends_with(unit)) {
                return std::nullopt;
            }
            margin.remove_suffix(unit.size());
        }
        for (const auto& [levels_of, oi] : quoted) {
            if (!oi.starts_with(margin) ||
                (levels_of == 0 ? oi.size() != margin.size()
                                : units_in(oi.substr(margin.size()), unit) != levels_of)) {
                return std::nullopt;
            }
        }
        return unit;
    }

    // The file indentation for a new_string line indented with `w`, relative to the old_string
    // line it replaces (`counterpart`) first, then the lines nearest the anchor (before it
    // first, then after it).
    [[nodiscard]] std::optional<std::string> place(
        std::string_view w, std::optional<size_t> anchor, std::optional<size_t> counterpart,
        const std::optional<std::string>& model_unit) const {
        std::vector<std::pair<size_t, size_t>> order;
        if (counterpart) {
            for (const auto& pair : pairs_) {
                if (pair.first == *counterpart) {
                    order.push_back(pair);
                }
            }
        }
        if (anchor) {
            for (size_t i = pairs_.size(); i-- > 0;) {
                if (pairs_[i].first <= *anchor) {
                    order.push_back(pairs_[i]);
                }
            }
        }
        for (const auto& p : pairs_) {
            if (!anchor || p.first > *anchor) {
                order.push_back(p);
            }
        }
        for (const auto& [o, b] : order) {
            if (indentation(old_[o]) == w) {
                return std::string(indentation(block_[b]));
            }
        }
        if (!model_unit) {
            return std::nullopt;
        }
        // Deeper than an old_string line: the nearest level below it.
        std::optional<std::pair<size_t, size_t>> best;  // (block index, units)
        size_t best_size = 0;
        for (const auto& [o, b] : order) {
            const std::string_view oi = indentation(old_[o]);
            if (oi.size() < w.size() && w.starts_with(oi) && (!best || oi.size() > best_size)) {
                if (const size_t n = units_in(w.substr(oi.size()), *model_unit); n > 0) {
                    best = {b, n};
                    best_size = oi.size();
                }
            }
        }
        if (best) {
            return deeper(indentation(block_[best->first]), best->second);
        }
        // Shallower than an old_string line: the nearest level above it.
        for (const auto& [o, b] : order) {
            const std::string_view oi = indentation(old_[o]);
            if (w.size() < oi.size() && oi.starts_with(w) && (!best || oi.size() < best_size)) {
                if (const size_t n = units_in(oi.substr(w.size()), *model_unit); n > 0) {
                    best = {b, n};
                    best_size = oi.size();
                }
            }
        }
        if (best) {
            return shallower(indentation(block_[best->first]), best->second);
        }
        return std::nullopt;
    }

    [[nodiscard]] bool mixed_file() const { return allowed_ == (kSpaces | kTabs); }

    // `f` plus n levels. A file that mixes tabs and spaces goes deeper the way its block does:
    // by what the shortest of its indentations that extends f adds, else by the step that led
    // to f; any other file by its indent unit.
    [[nodiscard]] std::optional<std::string> deeper(std::string_view f, size_t n) const {
        std::optional<std::string_view> step;
        if (mixed_file()) {
            for (std::string_view g : block_inds_) {
                if (g.size() > f.size() && g.starts_with(f) &&
                    (!step || g.size() - f.size() < step->size())) {
                    step = g.substr(f.size());
                }
            }
            if (!step) {
                if (std::optional<std::string_view> parent = parent_of(f)) {
                    step = f.substr(parent->size());
                }
            }
        }
        if (!step && file_unit_) {
            step = *file_unit_;
        }
        if (!step) {
            return std::nullopt;
        }
        std::string out(f);
        for (size_t k = 0; k < n; ++k) {
            out += *step;
        }
        return out;
    }

    // `f` minus n levels: to the block's next shallower indentation in a file that mixes tabs
    // and spaces, else without one indent unit at its end.
    [[nodiscard]] std::optional<std::string> shallower(std::string_view f, size_t n) const {
        std::string out(f);
        for (size_t k = 0; k < n; ++k) {
            if (std::optional<std::string_view> parent =
                    mixed_file() ? parent_of(out) : std::nullopt) {
                out.resize(parent->size());
            } else if (file_unit_ && out.ends_with(*file_unit_)) {
                out.resize(out.size() - file_unit_->size());
            } else {
                return std::nullopt;
            }
        }
        return out;
    }

    // The longest of the block's indentations that `f` extends.
    [[nodiscard]] std::optional<std::string_view> parent_of(std::string_view f) const {
        std::optional<std::string_view> parent;
        for (std::string_view g : block_inds_) {
            if (g.size() < f.size() && f.starts_with(g) && (!parent || g.size() > parent->size())) {
                parent = g;
            }
        }
        return parent;
    }

    // The first written line indented with a character the file does not use there.
    [[nodiscard]] std::optional<size_t> first_inconsistent(
        const std::vector<std::string>& lines) const {
        for (size_t i = std::max(from_, first_checked_); i < lines.size(); ++i) {
            if (!is_blank(lines[i]) && (indent_chars(indentation(lines[i])) & ~allowed_) != 0) {
                return i;
            }
        }
        return std::nullopt;
    }

    // What the refusal shows: the first matched line indented differently from old_string's, or,
    // when they all agree, the new_string line that has no place and an indented block line.
    [[nodiscard]] IndentationHint hint(size_t unplaced) const {
        IndentationHint h;
        for (const auto& [o, b] : pairs_) {
            if (indentation(old_[o]) != indentation(block_[b])) {
                h.line = fr_.first_line + b + 1;
                h.file_line = std::string(block_[b]);
                h.model_line = std::string(old_[o]);
                return h;
            }
        }
        size_t b = 0;
        for (size_t i = 0; i < block_.size(); ++i) {
            if (!is_blank(block_[i]) && !indentation(block_[i]).empty()) {
                b = i;
                break;
            }
        }
        h.line = fr_.first_line + b + 1;
        h.file_line = std::string(block_[b]);
        h.model_line = unplaced < new_.size() ? std::string(new_[unplaced]) : std::string();
        h.in_new_string = true;
        return h;
    }

    const Text& t_;
    const IndentFrame& fr_;
    size_t from_ = 0;           // the first line the rule places (1 when the match is mid-line)
    size_t first_checked_ = 0;  // the first line whose indentation is written (partial: 1)
    std::vector<std::string_view> old_;
    std::vector<std::string_view> new_;
    std::vector<std::string_view> block_;
    std::vector<std::pair<size_t, size_t>> pairs_;  // non-blank on both sides, from from_ on
    std::vector<std::optional<size_t>> block_of_;   // old_ line → its paired block line
    std::vector<std::string_view> block_inds_;      // the block's non-blank lines' indentation
    unsigned allowed_ = 0;                          // kSpaces | kTabs the file indents with
    std::optional<std::string> file_unit_;
};

enum class Pairing : uint8_t {
    kAll,      // old_string's line i matched block line i
    kAnchors,  // only the first and last lines correspond
    kFirst,    // only the first lines correspond
};

// A whole-line block [first, last] of the file replaced by new_string.
Candidate block_candidate(const Text& t, size_t first, size_t last, const OldLines& old,
                          std::string_view new_string, Pairing pairing) {
    Candidate c;
    c.start = t.start(first);
    c.end = t.content_end(last);
    if (old.trailing_newline && t.has_newline(last)) {
        ++c.end;
    }
    IndentFrame fr;
    for (std::string_view line : old.lines) {
        fr.old_lines.emplace_back(line);
    }
    fr.first_line = first;
    fr.last_line = last;
    const size_t size = last - first + 1;
    if (pairing == Pairing::kAll && size != old.lines.size()) {
        pairing = Pairing::kAnchors;
    }
    switch (pairing) {
        case Pairing::kAll:
            for (size_t i = 0; i < size; ++i) {
                fr.pairs.emplace_back(i, i);
            }
            break;
        case Pairing::kAnchors:
            fr.pairs.emplace_back(0, 0);
            fr.pairs.emplace_back(old.lines.size() - 1, size - 1);
            break;
        case Pairing::kFirst:
            fr.pairs.emplace_back(0, 0);
            break;
    }
    fr.new_string = std::string(new_string);
    fr.plain = fr.new_string;
    c.frame = std::move(fr);
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

// A match of old_string's trimmed text (verbatim, or whitespace-normalised within one line) at
// [start, end), which may begin and end inside lines.
Candidate partial_candidate(const Text& t, size_t start, size_t end, std::string_view old,
                            std::string_view new_string) {
    Candidate c;
    c.start = start;
    c.end = end;
    const std::string_view core = trim(old);
    const std::string_view lead = old.substr(0, static_cast<size_t>(core.data() - old.data()));
    const size_t lead_nl = lead.rfind('\n');
    // old_string's indentation of its first line of text.
    const std::string_view old_indent =
        indentation(lead_nl == std::string_view::npos ? lead : lead.substr(lead_nl + 1));
    IndentFrame fr;
    fr.first_line = t.line_of(start);
    fr.last_line = t.line_of(end > start ? end - 1 : start);
    fr.plain = boundary_adjusted(new_string, old);
    const std::string_view content = t.str();
    const std::string_view before =
        content.substr(t.start(fr.first_line), start - t.start(fr.first_line));
    fr.first = indentation(before).size() == before.size() ? IndentFrame::First::kAfterIndentation
                                                           : IndentFrame::First::kMidLine;
    const std::vector<std::string_view> core_lines = segments_of(core);
    for (std::string_view line : core_lines) {
        fr.old_lines.emplace_back(line);
    }
    fr.old_lines[0] = std::string(old_indent) + fr.old_lines[0];
    for (size_t i = 0; i < core_lines.size() && i <= fr.last_line - fr.first_line; ++i) {
        fr.pairs.emplace_back(i, i);
    }
    fr.new_string = fr.plain;
    if (fr.first == IndentFrame::First::kAfterIndentation) {
        const std::string_view first_new = segments_of(fr.plain).front();
        if (!is_blank(first_new)) {
            fr.new_string =
                std::string(old_indent) + fr.plain.substr(indentation(first_new).size());
        }
    }
    c.frame = std::move(fr);
    return c;
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
            f.matches.push_back(block_candidate(t, i, i + k - 1, old, new_string, Pairing::kAll));
        }
    }
    return f;
}

// Whether the whole lines [first, first + count) collapse, line breaks included, to `want`.
bool window_collapses_to(const std::vector<std::string>& norm, size_t first, size_t count,
                         std::string_view want) {
    size_t pos = 0;
    for (size_t j = first; j < first + count; ++j) {
        const std::string& s = norm[j];
        if (s.empty()) {
            continue;
        }
        if (pos > 0) {
            if (pos >= want.size() || want[pos] != ' ') {
                return false;
            }
            ++pos;
        }
        if (want.compare(pos, s.size(), s) != 0) {
            return false;
        }
        pos += s.size();
    }
    return pos == want.size();
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
                f.matches.push_back(partial_candidate(t, start, end, old, new_string));
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
            f.matches.push_back(
                block_candidate(t, i, i + k - 1, old_lines, new_string, Pairing::kAll));
        }
    }
    if (!f.matches.empty()) {
        return f;
    }
    // Line breaks moved between the same tokens: only the first lines still correspond.
    const bool first_blank = want_lines.front().empty();
    const bool last_blank = want_lines.back().empty();
    for (size_t i = 0; i + k <= t.lines(); ++i) {
        if (file_norm[i].empty() != first_blank || file_norm[i + k - 1].empty() != last_blank) {
            continue;
        }
        if (window_collapses_to(file_norm, i, k, want)) {
            f.matches.push_back(
                block_candidate(t, i, i + k - 1, old_lines, new_string, Pairing::kFirst));
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
        f.matches.push_back(partial_candidate(t, pos, pos + core.size(), old, new_string));
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
            Candidate c = block_candidate(t, b.first, b.last, old, new_string, Pairing::kAnchors);
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
            Candidate c = block_candidate(t, b.first, b.last, old, new_string, Pairing::kAll);
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
    return word_scan::count_byte(s, '\n');
}

// The line endings of a file that has both "\r\n" and "\n" (header comment).
struct Endings {
    std::vector<bool> crlf;  // one per '\n' of the normalised content, in order
    bool dominant_crlf = false;
};

// `bytes`: the file without its BOM, before "\r\n" is normalised.
Endings endings_of(std::string_view bytes) {
    Endings e;
    size_t crlf = 0;
    for (size_t i = 0; i < bytes.size(); ++i) {
        if (bytes[i] == '\n') {
            e.crlf.push_back(i > 0 && bytes[i - 1] == '\r');
            if (e.crlf.back()) {
                ++crlf;
            }
        }
    }
    const size_t lf = e.crlf.size() - crlf;
    e.dominant_crlf = crlf > lf || (crlf == lf && !e.crlf.empty() && e.crlf.front());
    return e;
}

// The endings of `rep`'s line breaks, replacing `span` whose first line break is the file's
// `first_break`-th: lines `rep` shares with the start or the end of `span` keep span's endings,
// every other line break takes the dominant one.
void append_endings(std::string_view span, std::string_view rep, size_t first_break,
                    const Endings& e, std::vector<bool>* out) {
    const std::vector<std::string_view> old_segs = segments_of(span);
    const std::vector<std::string_view> new_segs = segments_of(rep);
    const size_t n = old_segs.size() - 1;  // line breaks in span
    const size_t m = new_segs.size() - 1;  // line breaks in rep
    size_t prefix = 0;
    while (prefix < std::min(n, m) && old_segs[prefix] == new_segs[prefix]) {
        ++prefix;
    }
    size_t suffix = 0;  // segments equal from the end, not overlapping the prefix
    while (prefix + suffix < std::min(n, m) + 1 && old_segs[n - suffix] == new_segs[m - suffix]) {
        ++suffix;
    }
    for (size_t i = 0; i < m; ++i) {
        if (i < prefix) {
            out->push_back(e.crlf[first_break + i]);
        } else if (suffix > 0 && i + suffix > m) {
            out->push_back(e.crlf[first_break + n - (m - i)]);
        } else {
            out->push_back(e.dominant_crlf);
        }
    }
}

EditOutcome build(const Text& t, const TextShape& shape, const Endings* endings,
                  std::vector<Candidate> matches, Strategy strategy) {
    std::sort(matches.begin(), matches.end(),
              [](const Candidate& a, const Candidate& b) { return a.start < b.start; });
    const std::string_view c = t.str();
    const std::string_view content = c;
    std::string out;
    out.reserve(c.size() + matches.front().replacement.size());
    std::vector<bool> out_crlf;  // mixed files: the ending of each '\n' of `out`
    size_t cursor = 0;
    size_t breaks = 0;  // line breaks of the content before `cursor`
    auto keep = [&](size_t to) {
        const std::string_view kept = content.substr(cursor, to - cursor);
        out += kept;
        if (endings != nullptr) {
            for (size_t k = newlines_in(kept); k > 0; --k) {
                out_crlf.push_back(endings->crlf[breaks++]);
            }
        }
    };
    for (const Candidate& m : matches) {
        keep(m.start);
        out += m.replacement;
        if (endings != nullptr) {
            const std::string_view span = content.substr(m.start, m.end - m.start);
            append_endings(span, m.replacement, breaks, *endings, &out_crlf);
            breaks += newlines_in(span);
        }
        cursor = m.end;
    }
    keep(c.size());

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
    applied.new_first_line = newlines_in(content.substr(0, first.start)) + 1;
    std::string_view rep = first.replacement;
    if (rep.ends_with('\n')) {
        rep.remove_suffix(1);
    }
    applied.new_last_line = applied.new_first_line + newlines_in(rep);
    if (endings == nullptr) {
        // Most files have no BOM and no CRLF: the text is the content as it is, not copied.
        applied.content = shape.bom || shape.crlf ? restore_shape(out, shape) : std::move(out);
        return applied;
    }
    applied.content.reserve(out.size() + out_crlf.size() + kUtf8Bom.size());
    if (shape.bom) {
        applied.content += kUtf8Bom;
    }
    size_t k = 0;
    for (char ch : out) {
        if (ch == '\n' && out_crlf[k++]) {
            applied.content += '\r';
        }
        applied.content += ch;
    }
    return applied;
}

// Resolves one strategy's findings: nothing (try the next), a guard failure, ambiguity, the
// indentation refusal, or the edit.
std::optional<EditOutcome> settle(const Text& t, const TextShape& shape, const Endings* endings,
                                  Found found, Strategy strategy) {
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
    Candidate& c = found.matches.front();
    if (c.frame) {
        Adapted a = Reindenter(t, *c.frame).run();
        if (strategy == Strategy::kLineTrimmed && a.indentation_differs) {
            strategy = Strategy::kIndentationFlexible;
        }
        if (a.refusal) {
            EditFailure f = failure_of(EditFailureKind::kIndentation);
            f.strategy = strategy;
            f.first_line = c.frame->first_line + 1;
            f.last_line = c.frame->last_line + 1;
            f.indentation = std::move(a.refusal);
            return EditOutcome(f);
        }
        c.replacement = std::move(a.replacement);
        c.reindented = a.reindented;
    }
    return build(t, shape, endings, std::move(found.matches), strategy);
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
    // A file with LF endings and no BOM is matched where it is, not copied.
    std::string normalized;
    std::string_view text = normalize_text(spec.file, shape, normalized);
    std::optional<Endings> endings;  // a mixed file's, restored line by line
    if (shape.mixed) {
        endings = endings_of(text);
        normalized = crlf_to_lf(text);
        text = normalized;
    }
    const Endings* const mixed = endings ? &*endings : nullptr;
    const Text t(text);
    // The model's strings are matched with "\n" line breaks, like the content.
    auto conform = [&](std::string_view s) {
        std::string out = crlf_to_lf(s);
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
        return build(t, shape, mixed, std::move(f.matches), Strategy::kMultiOccurrence);
    }

    if (auto r = settle(t, shape, mixed, find_exact(t, old, new_string, true), Strategy::kExact)) {
        return std::move(*r);
    }
    if (auto r = settle(t, shape, mixed, find_line_trimmed(t, old_lines, new_string),
                        Strategy::kLineTrimmed)) {
        return std::move(*r);
    }
    if (auto r = settle(t, shape, mixed, find_whitespace_normalized(t, old, old_lines, new_string),
                        Strategy::kWhitespaceNormalized)) {
        return std::move(*r);
    }
    if (auto r = settle(t, shape, mixed, find_escape_normalized(t, old, new_string),
                        Strategy::kEscapeNormalized)) {
        return std::move(*r);
    }
    if (auto r = settle(t, shape, mixed, find_trimmed_boundary(t, old, new_string),
                        Strategy::kTrimmedBoundary)) {
        return std::move(*r);
    }
    Found anchored = find_block_anchor(t, old_lines, new_string);
    guard_proportion(t, anchored, Strategy::kBlockAnchor, old.size());
    if (auto r = settle(t, shape, mixed, std::move(anchored), Strategy::kBlockAnchor)) {
        return std::move(*r);
    }
    Found context = find_context_aware(t, old_lines, new_string);
    guard_proportion(t, context, Strategy::kContextAware, old.size());
    if (auto r = settle(t, shape, mixed, std::move(context), Strategy::kContextAware)) {
        return std::move(*r);
    }
    EditFailure nf = failure_of(EditFailureKind::kNotFound);
    nf.near_miss = find_near_miss(t, old_lines);
    return nf;
}

}  // namespace stockade::tools
