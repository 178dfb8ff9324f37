#include "policy/network_preset.h"

#include <array>

namespace stockade::policy {
namespace {

using std::string_view_literals::operator""sv;

// Package registries and code hosts, on the ports their clients use: HTTPS, and plain HTTP for
// Debian's archive (apt's default sources are http:// and are checked by signature).
constexpr std::array kRegistries = {
    // npm and yarn
    "registry.npmjs.org:443"sv,
    "registry.yarnpkg.com:443"sv,
    // PyPI: the index and the files
    "pypi.org:443"sv,
    "files.pythonhosted.org:443"sv,
    // crates.io: the API, the sparse index and the crate files
    "crates.io:443"sv,
    "index.crates.io:443"sv,
    "static.crates.io:443"sv,
    // Go: the module proxy and the checksum database. The proxy answers a module's .zip with
    // a redirect to Google Cloud Storage (golang/go#52908), so storage.googleapis.com is on
    // the list too, although it serves other buckets as well.
    "proxy.golang.org:443"sv,
    "sum.golang.org:443"sv,
    "storage.googleapis.com:443"sv,
    // Debian
    "deb.debian.org:80"sv,
    "deb.debian.org:443"sv,
    "security.debian.org:80"sv,
    "security.debian.org:443"sv,
    // GitHub: the site and git over HTTPS, the API, archives, raw files, release downloads
    "github.com:443"sv,
    "api.github.com:443"sv,
    "codeload.github.com:443"sv,
    "objects.githubusercontent.com:443"sv,
    "raw.githubusercontent.com:443"sv,
    "release-assets.githubusercontent.com:443"sv,
};

struct NamedPreset {
    std::string_view name;
    std::span<const std::string_view> entries;
};

constexpr std::array kPresets = {
    NamedPreset{"registries"sv, kRegistries},
};

}  // namespace

std::optional<std::span<const std::string_view>> network_preset(std::string_view name) {
    for (const NamedPreset& preset : kPresets) {
        if (preset.name == name) {
            return preset.entries;
        }
    }
    return std::nullopt;
}

std::vector<std::string_view> network_preset_names() {
    std::vector<std::string_view> names;
    for (const NamedPreset& preset : kPresets) {
        names.push_back(preset.name);
    }
    return names;
}

}  // namespace stockade::policy
