// Lexical path handling shared by the policy (paths in rules and commands) and the workspace
// (paths the model gives): no syscalls, symlinks are someone else's business.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace stockade {

// Appends the components of `path` to `parts`, applying "." and ".." (".." at the top stays
// there) and skipping empty components. The views point into `path`.
void append_normalised_components(std::string_view path, std::vector<std::string_view>& parts);

// "/a/b" from {"a", "b"} (from index `from`); "/" when there is none.
std::string join_absolute(const std::vector<std::string_view>& parts, size_t from = 0);

// The entries of a colon-separated list such as PATH, in order, empty ones included.
std::vector<std::string> split_path_list(std::string_view list);

}  // namespace stockade
