// JSON as the files an operator writes (the tenants file, serve's --oauth file and its JWKS) and
// the documents a client presents (a JWT's header and claims) are read: nlohmann's parser, with
// nesting bounded on the raw text before the recursive parser sees it (common/json_depth.h), and
// a key given twice in one object an error rather than the last one winning silently (RFC 7515
// §4 allows a JWS parser either; a security file must not keep two values of one key).
#pragma once

#include <cstddef>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace stockade {

// The document, or kInvalidArgument on one line: "invalid JSON at line 3, column 5: ...",
// "invalid JSON: nested deeper than 16 levels", or the path of a repeated key:
// "tenants[1].limits.memory: given twice".
Result<nlohmann::json> parse_strict_json(std::string_view text, std::size_t max_depth);

}  // namespace stockade
