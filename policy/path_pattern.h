// Path patterns of Read/Edit/... rules, with gitignore semantics beneath an anchor directory:
//   *      any run of characters within one path component
//   ?      one character other than "/"
//   [a-z]  one character of a class ("[!...]" / "[^...]" negate); "\x" is a literal x
//   **     "**/x" and "a/**/b": zero or more directories; "a/**": everything inside a
//   x/     a trailing slash: only a directory named x (and so everything inside it)
//   x      a pattern without a slash matches a component named x at any depth beneath the
//          anchor; a pattern with a slash is matched from the anchor
// A pattern that matches a directory also matches everything inside it, as an ignored
// directory hides its contents from git. Patterns are compiled once, when the policy loads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace stockade::policy {

// A normalised absolute path split into its components, computed once per request and shared
// by every rule that looks at it.
struct PathView {
    explicit PathView(std::string_view normalised_path);
    std::string_view path;
    std::vector<std::string_view> parts;
};

// True when `name` (one path component) matches glob `pattern` (*, ?, [...], \x).
bool glob_component_match(std::string_view pattern, std::string_view name);

class PathPattern {
public:
    // `anchor`: an absolute, normalised directory. `glob`: the pattern relative to it. Fails
    // on ".." components (a rule must not climb out of its anchor).
    static Result<PathPattern> compile(std::string_view anchor, std::string_view glob);

    // `path` is absolute and normalised; `is_directory` says whether it names a directory
    // (a "dir/" pattern matches the path itself only then, and its contents always).
    [[nodiscard]] bool matches(const PathView& path, bool is_directory) const;
    [[nodiscard]] bool matches(std::string_view path, bool is_directory) const {
        return matches(PathView(path), is_directory);
    }

    [[nodiscard]] const std::string& anchor() const { return anchor_; }

private:
    enum class SegmentKind : uint8_t { kLiteral, kGlob, kAnyDirs };
    struct Segment {
        SegmentKind kind = SegmentKind::kLiteral;
        std::string text{};
    };

    [[nodiscard]] bool segment_matches(const Segment& segment, std::string_view name) const;
    [[nodiscard]] bool match_segments(const std::string_view* parts, size_t count) const;

    std::string anchor_;
    size_t anchor_parts_ = 0;
    std::vector<Segment> segments_;
    bool basename_ = false;        // no slash in the pattern: one component at any depth
    bool directory_only_ = false;  // trailing slash
    bool any_dirs_ = false;        // segments_ holds a "**"
    // The longest literal run of the pattern: a path without it cannot match, which rejects
    // most rules with one substring search.
    std::string required_;
};

}  // namespace stockade::policy
