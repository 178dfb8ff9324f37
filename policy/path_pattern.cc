#include "policy/path_pattern.h"

#include <fmt/format.h>

#include "common/path.h"
#include "policy/star_match.h"

namespace stockade::policy {
namespace {

bool has_glob_chars(std::string_view text) {
    return text.find_first_of("*?[\\") != std::string_view::npos;
}

// Matches one pattern element at pattern[p] against `c`; on success `next` is the index after
// the element. A "[" without its "]" is a literal "[".
bool match_one(std::string_view pattern, size_t p, char c, size_t& next) {
    const char pc = pattern[p];
    if (pc == '?') {
        next = p + 1;
        return c != '/';
    }
    if (pc == '\\' && p + 1 < pattern.size()) {
        next = p + 2;
        return pattern[p + 1] == c;
    }
    if (pc == '[') {
        size_t i = p + 1;
        bool negate = false;
        if (i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^')) {
            negate = true;
            ++i;
        }
        bool matched = false;
        bool first = true;
        for (; i < pattern.size() && (first || pattern[i] != ']'); first = false) {
            char lo = pattern[i];
            if (lo == '\\' && i + 1 < pattern.size()) {
                lo = pattern[++i];
            }
            char hi = lo;
            if (i + 2 < pattern.size() && pattern[i + 1] == '-' && pattern[i + 2] != ']') {
                hi = pattern[i + 2];
                if (hi == '\\' && i + 3 < pattern.size()) {
                    hi = pattern[i + 3];
                    ++i;
                }
                i += 2;
            }
            const auto uc = static_cast<unsigned char>(c);
            if (uc >= static_cast<unsigned char>(lo) && uc <= static_cast<unsigned char>(hi)) {
                matched = true;
            }
            ++i;
        }
        if (i >= pattern.size()) {  // no closing bracket: a literal "["
            next = p + 1;
            return c == '[';
        }
        next = i + 1;
        return c != '/' && matched != negate;
    }
    next = p + 1;
    return pc == c;
}

// The longest run of plain characters in a literal or glob component.
std::string_view longest_literal(std::string_view text) {
    std::string_view best;
    size_t start = 0;
    bool in_class = false;
    for (size_t i = 0; i <= text.size(); ++i) {
        const bool special = i == text.size() || in_class || text[i] == '*' || text[i] == '?' ||
                             text[i] == '[' || text[i] == '\\';
        if (i < text.size() && text[i] == '[') {
            in_class = true;
        } else if (in_class && i < text.size() && text[i] == ']') {
            in_class = false;
            start = i + 1;
            continue;
        }
        if (special) {
            if (i > start && i - start > best.size()) {
                best = text.substr(start, i - start);
            }
            start = i + 1;
        }
    }
    return best;
}

}  // namespace

PathView::PathView(std::string_view normalised_path)
    : path(normalised_path), parts(path_components(normalised_path)) {}

bool glob_component_match(std::string_view pattern, std::string_view name) {
    return star_match(pattern, name, match_one);
}

Result<PathPattern> PathPattern::compile(std::string_view anchor, std::string_view glob) {
    PathPattern out;
    out.anchor_ = anchor;
    out.anchor_parts_ = PathView(out.anchor_).parts.size();
    std::string_view rest = glob;
    while (!rest.empty() && rest.back() == '/') {
        out.directory_only_ = true;
        rest.remove_suffix(1);
    }
    while (rest.starts_with("./")) {
        rest.remove_prefix(2);
    }
    std::vector<std::string_view> parts;
    size_t start = 0;
    while (start <= rest.size()) {
        size_t slash = rest.find('/', start);
        if (slash == std::string_view::npos) {
            slash = rest.size();
        }
        const std::string_view part = rest.substr(start, slash - start);
        if (part == "..") {
            return Error{Errc::kInvalidArgument,
                         fmt::format(R"(".." is not allowed in a path pattern ("{}"))", glob)};
        }
        if (!part.empty() && part != ".") {
            parts.push_back(part);
        }
        start = slash + 1;
    }
    // An empty pattern ("./", "//") names everything beneath the anchor.
    if (parts.empty()) {
        parts.emplace_back("**");
    }
    out.basename_ = rest.find('/') == std::string_view::npos;
    for (size_t i = 0; i < parts.size(); ++i) {
        const std::string_view part = parts[i];
        if (part == "**" && !out.basename_) {
            // A trailing "**" is "one or more components" (the contents, not the directory):
            // a "*" for the first and "zero or more" for the rest.
            if (i + 1 == parts.size()) {
                out.segments_.push_back({SegmentKind::kGlob, "*"});
            }
            if (out.segments_.empty() || out.segments_.back().kind != SegmentKind::kAnyDirs) {
                out.segments_.push_back({SegmentKind::kAnyDirs, ""});
                out.any_dirs_ = true;
            }
            continue;
        }
        // Any other "**" is an ordinary "*" (gitignore).
        std::string text(part == "**" ? std::string_view("*") : part);
        const SegmentKind kind = has_glob_chars(text) ? SegmentKind::kGlob : SegmentKind::kLiteral;
        const std::string_view literal =
            kind == SegmentKind::kLiteral ? text : longest_literal(text);
        if (literal.size() > out.required_.size()) {
            out.required_ = literal;
        }
        out.segments_.push_back({kind, std::move(text)});
    }
    return out;
}

bool PathPattern::segment_matches(const Segment& segment, std::string_view name) const {
    switch (segment.kind) {
        case SegmentKind::kLiteral:
            return segment.text == name;
        case SegmentKind::kGlob:
            return glob_component_match(segment.text, name);
        case SegmentKind::kAnyDirs:
            return true;
    }
    return false;
}

bool PathPattern::match_segments(const std::string_view* parts, size_t count) const {
    // Wildcard matching over components, "**" being the star: the same greedy algorithm as
    // glob_component_match, one component per non-star segment.
    const size_t m = segments_.size();
    size_t p = 0;
    size_t t = 0;
    size_t star = SIZE_MAX;
    size_t mark = 0;
    while (t < count) {
        if (p < m && segments_[p].kind == SegmentKind::kAnyDirs) {
            star = p++;
            mark = t;
        } else if (p < m && segment_matches(segments_[p], parts[t])) {
            ++p;
            ++t;
        } else if (star != SIZE_MAX) {
            p = star + 1;
            t = ++mark;
        } else {
            return false;
        }
    }
    while (p < m && segments_[p].kind == SegmentKind::kAnyDirs) {
        ++p;
    }
    return p == m;
}

bool PathPattern::matches(const PathView& path, bool is_directory) const {
    if (path.parts.size() < anchor_parts_ ||
        (anchor_ != "/" &&
         (!path.path.starts_with(anchor_) ||
          (path.path.size() > anchor_.size() && path.path[anchor_.size()] != '/')))) {
        return false;
    }
    const size_t n = path.parts.size() - anchor_parts_;
    const std::string_view* rel = path.parts.data() + anchor_parts_;
    if (n == 0) {
        return false;
    }
    if (!required_.empty() && path.path.find(required_) == std::string_view::npos) {
        return false;
    }
    if (basename_) {
        for (size_t i = 0; i < n; ++i) {
            if (segment_matches(segments_.front(), rel[i]) &&
                (i + 1 < n || !directory_only_ || is_directory)) {
                return true;
            }
        }
        return false;
    }
    // The path itself, or one of its directories beneath the anchor.
    if (!any_dirs_) {
        const size_t k = segments_.size();
        return k <= n && match_segments(rel, k) && (k < n || !directory_only_ || is_directory);
    }
    for (size_t k = 1; k <= n; ++k) {
        if (match_segments(rel, k) && (k < n || !directory_only_ || is_directory)) {
            return true;
        }
    }
    return false;
}

}  // namespace stockade::policy
