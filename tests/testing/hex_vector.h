// Test vectors kept as one line of hex (tests/unit/network/testdata/*.hex: what a real client
// sent, captured once): the bytes, for the parsers' tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

namespace stockade::testing {

// The bytes of the first line of hex in `path`; a test failure when there are none.
inline std::string hex_vector(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::string hex((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::string out;
    for (size_t i = 0; i + 1 < hex.size() && hex[i] != '\n'; i += 2) {
        out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    }
    EXPECT_FALSE(out.empty()) << path;
    return out;
}

}  // namespace stockade::testing
