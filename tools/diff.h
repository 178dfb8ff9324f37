// Unified diff of two texts, line by line (Myers' O(ND) algorithm with a size cap), three lines
// of context, `--- a/PATH` / `+++ b/PATH` headers, and the +/− line counts that write and edit
// report. Pure.
#pragma once

#include <string>
#include <string_view>

namespace stockade::tools {

struct DiffResult {
    std::string text{};  // empty when the texts are equal
    int additions = 0;
    int deletions = 0;
};

struct DiffOptions {
    int context = 3;
    bool created = false;  // the old side is /dev/null
    // Myers' search stops after this many edits and falls back to replacing the whole
    // differing middle (still a correct diff, just not a minimal one).
    int max_edit_distance = 2000;
};

// `path` is the workspace-relative path used in the headers.
DiffResult unified_diff(std::string_view before, std::string_view after, std::string_view path,
                        const DiffOptions& options = {});

}  // namespace stockade::tools
