// Binary detection for read (TOOL_PROTOCOL §2.2): a known binary extension, a recognised magic
// number, a NUL byte, or too many non-text bytes in the first 4 KB. A binary file is described
// ("PNG image"), never dumped.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace stockade::tools {

inline constexpr size_t kSniffBytes = 4096;

// The kind of binary file ("PNG image", "ELF executable", "binary data"), or nothing for text.
std::optional<std::string> sniff_binary(std::string_view path, std::string_view head);

}  // namespace stockade::tools
