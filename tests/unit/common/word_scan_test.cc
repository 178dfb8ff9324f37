#include "common/word_scan.h"

#include <cstring>
#include <random>
#include <string>

#include <gtest/gtest.h>

namespace stockade::word_scan {
namespace {

uint64_t word_of(const unsigned char (&bytes)[8]) {
    uint64_t word = 0;
    std::memcpy(&word, bytes, sizeof word);
    return word;
}

// The yes/no answers agree with a byte loop for random words and for every byte value in
// every position (a borrow from a lower byte must not hide or invent one).
TEST(WordScanTest, AgreesWithAByteLoop) {
    std::mt19937_64 rng(7);
    for (int round = 0; round < 200'000; ++round) {
        unsigned char bytes[8];
        for (unsigned char& b : bytes) {
            // Mostly printable, some controls, DEL, high bytes and the values tested for.
            const uint64_t r = rng();
            b = static_cast<unsigned char>(r % 4 == 0 ? (r >> 8) & 0xFF : 0x20 + ((r >> 8) % 0x5F));
        }
        if (round < 8 * 256) {
            bytes[round % 8] = static_cast<unsigned char>(round / 8);
        }
        const uint64_t word = word_of(bytes);
        bool below = false;
        bool quote = false;
        bool c2 = false;
        for (unsigned char b : bytes) {
            below = below || b < 0x20;
            quote = quote || b == '"';
            c2 = c2 || b == 0xC2;
        }
        ASSERT_EQ(any_below(word, 0x20) != 0, below) << round;
        ASSERT_EQ(any_equal(word, '"') != 0, quote) << round;
        ASSERT_EQ(any_equal(word, 0xC2) != 0, c2) << round;
    }
}

TEST(WordScanTest, CountsEveryEqualByteExactly) {
    std::mt19937_64 rng(11);
    for (int round = 0; round < 2'000; ++round) {
        std::string text(rng() % 100, 'a');
        for (char& c : text) {
            const uint64_t r = rng();
            c = static_cast<char>(r % 3 == 0 ? '\n' : (r >> 8) & 0xFF);  // runs of '\n' too
        }
        size_t newlines = 0;
        size_t highs = 0;
        for (char c : text) {
            newlines += c == '\n' ? 1U : 0U;
            highs += static_cast<unsigned char>(c) == 0x8A ? 1U : 0U;
        }
        ASSERT_EQ(count_byte(text, '\n'), newlines) << round;
        ASSERT_EQ(count_byte(text, 0x8A), highs) << round;
    }
}

TEST(WordScanTest, CountsPastTheLaneBatchWhenEveryByteMatches) {
    // 255 words fill a byte lane with matches; lengths around one and two batches, and odd
    // tails, must still count every byte.
    for (size_t size : {2039U, 2040U, 2041U, 2048U, 4079U, 4080U, 4081U, 100'003U}) {
        const std::string text(size, '\n');
        ASSERT_EQ(count_byte(text, '\n'), size) << size;
        ASSERT_EQ(count_byte(text, 'a'), 0U) << size;
    }
}

TEST(WordScanTest, SkipsWholeClearWordsOnly) {
    const auto has_x = [](uint64_t word) {
        return any_equal(word, 'x');
    };
    const std::string text = std::string(20, 'a') + "x" + std::string(10, 'a');
    EXPECT_EQ(skip_clear_words(text, 0, has_x), 16U);   // the word at 16 holds the x at 20
    EXPECT_EQ(skip_clear_words(text, 21, has_x), 29U);  // 29 + 8 > 31: the tail is the caller's
    EXPECT_EQ(skip_clear_words(std::string_view(), 0, has_x), 0U);
}

}  // namespace
}  // namespace stockade::word_scan
