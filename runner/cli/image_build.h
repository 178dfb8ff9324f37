// `stockade image build NAME`: an image of the store made from a recipe (images/recipe.h) —
// a Debian root by mmdebstrap, or an image of the store, then the recipe's steps, each in a
// sandbox over the image being built, captured as one more layer (images/layer_diff.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace stockade::runner {

struct ImageBuildOptions {
    std::string store{};   // --image-store
    std::string name{};    // NAME: the image's name in the store
    std::string recipe{};  // --recipe FILE
    // Flags over the recipe's fields: --suite, --image (a base of the store), --mirror,
    // --variant replace them; --include adds packages, --run adds steps, --allow adds rules.
    std::string suite{};
    std::string base{};
    std::string mirror{};
    std::string variant{};
    std::vector<std::string> include{};
    std::vector<std::string> run{};
    std::vector<std::string> allow{};
    // --resolve NAME[:PORT]=ADDRESS[:PORT] for the steps' proxy (a mirror at a private
    // address), as run's.
    std::vector<std::string> resolve{};
    // --source-date-epoch; else $SOURCE_DATE_EPOCH; else kDefaultSourceDateEpoch.
    std::optional<int64_t> source_date_epoch{};
    bool json = false;
};

// 2024-01-01T00:00:00Z: what every file's time is clamped to unless SOURCE_DATE_EPOCH says
// otherwise, so that the same inputs give the same digest on any day.
inline constexpr int64_t kDefaultSourceDateEpoch = 1704067200;

// Exit 0; 2 for a recipe or flag that is wrong; 69 when mmdebstrap is missing; 65 when the
// result is refused as an import would refuse it; 1 when mmdebstrap or a step fails (its own
// output above says why).
int image_build_command(const ImageBuildOptions& options);

}  // namespace stockade::runner
