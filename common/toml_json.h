// A TOML document as the JSON value of the same structure, so that one reader checks a file in
// either syntax (the tenants file, an image recipe). toml++ stays inside toml_json.cc: it costs
// a file that includes it ~5 s of compile time.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace stockade {

// kInvalidArgument with the line and column of a syntax error, or the key and line of a date
// or time (no file of ours takes one: durations and times are strings there).
Result<nlohmann::json> toml_to_json(std::string_view text);

}  // namespace stockade
