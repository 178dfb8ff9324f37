// Named lists of network.access allow rules, for `--allow-preset NAME` (docs/policy.md, "Network
// presets"). A preset's rules join the command-line layer with the origin "preset NAME", so
// that `stockade policy explain` says where an allow came from.
//   registries   npm, PyPI, crates.io, the Go module proxy, Debian, GitHub (HTTPS; Debian's
//                mirrors on HTTP too)
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace stockade::policy {

// The preset's entries, each a network.access specifier ("pypi.org:443"); nullopt for a name
// that is not a preset.
std::optional<std::span<const std::string_view>> network_preset(std::string_view name);
// Every preset's name, sorted.
std::vector<std::string_view> network_preset_names();

}  // namespace stockade::policy
