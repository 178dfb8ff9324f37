// Golden files: every model-facing string is compared, whole, with a file under tests/golden/.
// STOCKADE_UPDATE_GOLDEN=1 rewrites the files instead of comparing (review the diff).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

namespace stockade::testing {

inline std::filesystem::path source_root() {
    // This header is tests/testing/golden.h.
    return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path();
}

inline std::string read_text(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Compares `actual` (plus a final newline) with tests/golden/<group>/<name>.
inline void expect_golden(const std::string& group, const std::string& name,
                          const std::string& actual) {
    const std::filesystem::path p = source_root() / "tests" / "golden" / group / name;
    const std::string want = actual + "\n";
    // NOLINTNEXTLINE(concurrency-mt-unsafe): tests read the environment once per check.
    if (const char* update = std::getenv("STOCKADE_UPDATE_GOLDEN");
        update != nullptr && *update == '1') {
        std::filesystem::create_directories(p.parent_path());
        std::ofstream(p, std::ios::binary | std::ios::trunc) << want;
        return;
    }
    ASSERT_TRUE(std::filesystem::exists(p))
        << "missing golden file " << p << " (run with STOCKADE_UPDATE_GOLDEN=1)";
    EXPECT_EQ(read_text(p), want) << "golden file " << p;
}

}  // namespace stockade::testing
