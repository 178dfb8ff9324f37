// A bound on JSON nesting checked on the raw text, before any recursive parser sees it
// (frames from the sandbox worker, JSON-RPC lines from the client).
#pragma once

#include <cstddef>
#include <string_view>

namespace stockade {

// The deepest nesting of arrays and objects in `text`, stopping early once it passes `limit`.
// Brackets inside strings do not count. Malformed text gives some number; the parser that
// follows rejects it anyway.
std::size_t json_nesting_depth(std::string_view text, std::size_t limit);

}  // namespace stockade
