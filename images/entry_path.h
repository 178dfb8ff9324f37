// Archive entry names as paths beneath an image's root (DESIGN.md §8; issue 23). Pure: the layer
// writer (layer_apply.h) resolves what these return beneath the root by descriptor.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/result.h"

namespace stockade::images {

// The longest name an entry may have, whole and per component (PATH_MAX and NAME_MAX).
inline constexpr std::size_t kMaxEntryPathBytes = 4096;
inline constexpr std::size_t kMaxEntryNameBytes = 255;

// What every refusal of an entry tells the operator to do.
inline constexpr std::string_view kEntryRemedy =
    "the image is refused; import it only from a source you trust, rebuilt without this entry";

// An archive entry's name as a relative path beneath the root: leading "/" and "./", empty and
// "." components dropped ("./usr//bin/" -> "usr/bin"; "./" and "/" -> "", the root itself).
// Refuses (kInvalidArgument, the message naming the entry and saying what to do) an empty name,
// a NUL byte, any ".." component, a component over 255 bytes or a name over 4096.
Result<std::string> normalize_entry_path(std::string_view name);

// A name as messages show it: in double quotes, at most 200 bytes, bytes outside printable
// ASCII (and '"', '\') escaped as \xNN, so an archive cannot forge or hide text in a message.
std::string quote_entry_name(std::string_view name);

}  // namespace stockade::images
