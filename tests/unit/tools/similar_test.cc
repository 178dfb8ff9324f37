#include "tools/similar.h"

#include <gtest/gtest.h>

namespace stockade::tools {
namespace {

TEST(SimilarTest, Levenshtein) {
    EXPECT_EQ(levenshtein("kitten", "sitting"), 3U);
    EXPECT_EQ(levenshtein("", "abc"), 3U);
    EXPECT_EQ(levenshtein("same", "same"), 0U);
    EXPECT_EQ(levenshtein("kitten", "sitting", 1), 2U);  // capped: max + 1
}

TEST(SimilarTest, OsaCountsAnAdjacentSwapAsOneEdit) {
    EXPECT_EQ(osa_distance("git", "gti"), 1U);
    EXPECT_EQ(levenshtein("git", "gti"), 2U);
    EXPECT_EQ(osa_distance("", "abc"), 3U);
    EXPECT_EQ(osa_distance("abc", ""), 3U);
    EXPECT_EQ(osa_distance("kitten", "sitting"), 3U);
    EXPECT_EQ(osa_distance("ca", "abc"), 3U);  // not 2: OSA edits each substring once
    EXPECT_EQ(osa_distance("python", "pyhton"), 1U);
    EXPECT_EQ(osa_distance("same", "same"), 0U);
}

TEST(SimilarTest, Similarity) {
    EXPECT_DOUBLE_EQ(similarity("", ""), 1.0);
    EXPECT_DOUBLE_EQ(similarity("abcd", "abcd"), 1.0);
    EXPECT_DOUBLE_EQ(similarity("abcd", "abce"), 0.75);
    EXPECT_DOUBLE_EQ(similarity("ab", "xy"), 0.0);
}

TEST(SimilarTest, SuggestsTheSeedExample) {
    const std::vector<std::string> files = {"src/kernel/agent.ts", "src/kernel/agent.test.ts",
                                            "src/context/engine.ts", "README.md"};
    EXPECT_EQ(suggest_paths("src/kernal/agent.ts", files),
              (std::vector<std::string>{"src/kernel/agent.ts", "src/kernel/agent.test.ts"}));
}

TEST(SimilarTest, SuggestsTheSameNameInAnotherDirectory) {
    const std::vector<std::string> files = {"src/kernel/agent.ts", "docs/guide.md"};
    EXPECT_EQ(suggest_paths("src/agent.ts", files),
              (std::vector<std::string>{"src/kernel/agent.ts"}));
}

TEST(SimilarTest, NothingCloseMeansNoSuggestion) {
    EXPECT_TRUE(suggest_paths("completely/other.txt", {"src/a.cc", "b.h"}).empty());
}

TEST(SimilarTest, AtMostThreeSuggestions) {
    const std::vector<std::string> files = {"a1.txt", "a2.txt", "a3.txt", "a4.txt"};
    EXPECT_EQ(suggest_paths("a0.txt", files).size(), 3U);
}

TEST(SimilarTest, Closest) {
    EXPECT_EQ(closest("path", {"file_path", "offset", "limit"}, 5), "file_path");
    EXPECT_FALSE(closest("zzzzzz", {"offset"}, 2).has_value());
}

}  // namespace
}  // namespace stockade::tools
