// Every golden file is compared by some test: a file no test names is stale.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tests/unit/tools/tool_harness.h"

namespace stockade::tools {
namespace {

using stockade::testing::read_text;

std::filesystem::path golden_dir() {
    return stockade::testing::source_root() / "tests" / "golden" / "tools";
}

TEST(GoldenFilesTest, EveryGoldenFileIsUsedByATest) {
    std::string sources;
    const std::filesystem::path tests = std::filesystem::path(__FILE__).parent_path();
    for (const auto& entry : std::filesystem::directory_iterator(tests)) {
        if (entry.path().extension() == ".cc") {
            sources += read_text(entry.path());
        }
    }
    size_t count = 0;
    for (const auto& entry : std::filesystem::directory_iterator(golden_dir())) {
        const std::string name = entry.path().filename().string();
        ++count;
        EXPECT_NE(sources.find("\"" + name + "\""), std::string::npos)
            << "tests/golden/tools/" << name << " is not used by any test in tests/unit/tools/";
    }
    EXPECT_GT(count, 0U);
}

}  // namespace
}  // namespace stockade::tools
