// Positions in a JSON text, so that settings errors and rule origins can cite "file:line:col".
// nlohmann::json parses and validates; these helpers only measure.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace stockade::policy {

struct TextPosition {
    size_t line = 1;    // 1-based
    size_t column = 1;  // 1-based, in bytes
};

// The position of byte `offset` (0-based; clamped to the text).
TextPosition position_of(std::string_view text, size_t offset);

// The offset of the first array or object bracket nested deeper than `max_depth`, if any.
// Runs before the recursive parser so that a hostile file cannot exhaust the stack.
std::optional<size_t> too_deep(std::string_view text, size_t max_depth);

// "/permissions/allow/0": a JSON pointer (RFC 6901) of a value.
std::string json_pointer_append(std::string_view pointer, std::string_view key);

// The offset at which each value of `valid_json` starts, by JSON pointer ("" is the whole
// document), for values at most `max_depth` levels down. Precondition: the text parsed.
std::map<std::string, size_t> locate_values(std::string_view valid_json, size_t max_depth);

}  // namespace stockade::policy
