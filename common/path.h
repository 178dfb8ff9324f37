// Lexical path handling shared by the policy (paths in rules and commands) and the workspace
// (paths the model gives): no syscalls, symlinks are someone else's business.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace stockade {

// The fields of `text` between `sep`s, empty ones kept: split("a::b", ':') is {"a", "", "b"}.
// The views point into `text`.
std::vector<std::string_view> split(std::string_view text, char sep);

// The non-empty components of a path: "/a//b/" is {"a", "b"}. No "." or ".." handling.
std::vector<std::string_view> path_components(std::string_view path);

// Appends the components of `path` to `parts`, applying "." and ".." (".." at the top stays
// there) and skipping empty components. The views point into `path`.
void append_normalised_components(std::string_view path, std::vector<std::string_view>& parts);

// "/a/b" from {"a", "b"} (from index `from`); "/" when there is none.
std::string join_absolute(const std::vector<std::string_view>& parts, size_t from = 0);

// What comes before the last '/' of a relative path: "a/b" for "a/b/c", "" for "c".
std::string_view parent_of(std::string_view relative);

// The entries of a colon-separated list such as PATH, in order, empty ones included (split on
// ':', owned).
std::vector<std::string> split_path_list(std::string_view list);

}  // namespace stockade
