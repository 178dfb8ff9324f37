// Name similarity for near-miss hints: Levenshtein distance, a 0..1 similarity, and ranked
// "Did you mean …?" suggestions for a missing path among the paths that do exist.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stockade::tools {

// Edit distance (insertions, deletions, substitutions; bytewise). When the distance exceeds
// `max_distance`, returns max_distance + 1 without finishing the computation.
size_t levenshtein(std::string_view a, std::string_view b, size_t max_distance = SIZE_MAX);

// 1 - distance / max(length): 1 for equal strings (two empty strings included), 0 for
// completely different ones.
double similarity(std::string_view a, std::string_view b);
// Optimal string alignment distance: Levenshtein plus the swap of two adjacent characters as
// one edit ("gti" is one from "git"), each substring edited at most once.
size_t osa_distance(std::string_view a, std::string_view b);

// Up to `max_results` of `candidates` (workspace-relative paths) that look like `missing`,
// closest first: a close whole-path spelling, or the same or a close file name in another
// directory. Ties keep the shorter, then alphabetical, path.
std::vector<std::string> suggest_paths(std::string_view missing,
                                       const std::vector<std::string>& candidates,
                                       size_t max_results = 3);

// The candidate closest to `word` within `max_distance`, if any (ties: the first given).
std::optional<std::string> closest(std::string_view word,
                                   const std::vector<std::string>& candidates, size_t max_distance);

}  // namespace stockade::tools
