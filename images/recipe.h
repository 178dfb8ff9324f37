// An image recipe: what `stockade image build` makes an image from, and what it does to it.
// A TOML file (`--recipe FILE`; examples in images/recipes/), or the same fields from flags:
//
//   suite = "bookworm"          # a Debian root made by mmdebstrap, or:
//   image = "debian:12"         # an image of the store to build on
//   mirror = "http://deb.debian.org/debian"   # (suite) where packages come from
//   variant = "minbase"         # (suite) mmdebstrap's --variant
//   packages = ["python3", "git"]
//   run = ["python3 -m pip install --break-system-packages requests"]
//   allow = ["*.example.com:443"]
//
// `packages` go to mmdebstrap's --include on a suite, and to apt-get in the first step on an
// image. Each `run` step is a `/bin/sh -c` command in a Stockade sandbox over the image being
// built, as the sandbox's root, with `--network allowlist`: the `registries` preset's rules
// and the recipe's `allow` entries (network.access patterns: HOST[:PORT], `*.` for any
// subdomain) decide what it reaches.
// Pure: parsing only; runner/cli/image_build.cc builds.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace stockade::images {

struct Recipe {
    std::string suite{};
    std::string image{};
    std::string mirror{};
    std::string variant{};  // empty: minbase
    std::vector<std::string> packages{};
    std::vector<std::string> run{};
    std::vector<std::string> allow{};
};

// kInvalidArgument, one line naming the key and what it takes: an unknown key, a value of the
// wrong type, both or neither of suite and image, a package or suite name that is not one
// (nothing that could pass for an option of mmdebstrap's), a mirror that is not http(s).
Result<Recipe> parse_recipe(std::string_view toml_text);

// The checks parse_recipe makes, on a recipe put together from a file and flags.
Status check_recipe(const Recipe& recipe);

// mmdebstrap's variants.
inline constexpr const char* kDebianVariants[] = {
    "extract", "custom", "essential", "apt",         "required",
    "minbase", "buildd", "important", "debootstrap", "standard"};

}  // namespace stockade::images
