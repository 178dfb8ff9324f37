// Fuzzes the image recipe parser (images/recipe.h), whose input is an operator's TOML file: no
// crash; an accepted recipe has exactly one base, and no package, suite or mirror that could
// pass for an option of mmdebstrap's.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "images/recipe.h"

namespace images = stockade::images;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto recipe = images::parse_recipe(text);
    if (!recipe) {
        return 0;
    }
    if (recipe->suite.empty() == recipe->image.empty()) {
        std::abort();
    }
    if (recipe->suite.starts_with('-') || (!recipe->mirror.empty() && recipe->mirror[0] == '-')) {
        std::abort();
    }
    for (const auto& package : recipe->packages) {
        if (package.empty() || package[0] == '-' || package.find(',') != std::string::npos) {
            std::abort();
        }
    }
    if (!images::check_recipe(*recipe)) {
        std::abort();
    }
    return 0;
}
