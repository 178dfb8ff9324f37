// normalize_entry_path and quote_entry_name: what becomes of an archive entry's name.
#include "images/entry_path.h"

#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade::images {
namespace {

using testing::HasErrc;
using ::testing::HasSubstr;
using testing::IsOk;

TEST(NormalizeEntryPathTest, DropsLeadingSlashesDotsAndEmptyComponents) {
    EXPECT_EQ(normalize_entry_path("usr/bin/env").value(), "usr/bin/env");
    EXPECT_EQ(normalize_entry_path("./usr//bin/").value(), "usr/bin");
    EXPECT_EQ(normalize_entry_path("/etc/./passwd").value(), "etc/passwd");
    EXPECT_EQ(normalize_entry_path("./").value(), "");
    EXPECT_EQ(normalize_entry_path("/").value(), "");
    EXPECT_EQ(normalize_entry_path(".wh..wh..opq").value(), ".wh..wh..opq");
    EXPECT_EQ(normalize_entry_path("a/...").value(), "a/...");
}

TEST(NormalizeEntryPathTest, RefusesDotDotNulAndOverlongNamesNamingTheEntry) {
    for (const std::string_view bad :
         {std::string_view("../etc/passwd"), std::string_view("a/../../b"),
          std::string_view("a/.."), std::string_view("/.."), std::string_view(""),
          std::string_view("a\0b", 3)}) {
        const auto r = normalize_entry_path(bad);
        EXPECT_THAT(r, HasErrc(Errc::kInvalidArgument)) << bad;
    }
    EXPECT_THAT(normalize_entry_path("x/../y").error().message, HasSubstr("\"x/../y\""));
    EXPECT_THAT(normalize_entry_path("x/../y").error().message, HasSubstr("\"..\""));
    EXPECT_THAT(normalize_entry_path(std::string(256, 'a')), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(normalize_entry_path(std::string(255, 'a')), IsOk());
    std::string long_path;
    while (long_path.size() <= kMaxEntryPathBytes) {
        long_path += "abcdefg/";
    }
    EXPECT_THAT(normalize_entry_path(long_path), HasErrc(Errc::kInvalidArgument));
}

TEST(QuoteEntryNameTest, EscapesWhatCouldForgeAMessageAndTruncates) {
    EXPECT_EQ(quote_entry_name("usr/bin"), "\"usr/bin\"");
    EXPECT_EQ(quote_entry_name(std::string_view("a\nb\0\"", 5)), "\"a\\x0ab\\x00\\x22\"");
    EXPECT_EQ(quote_entry_name(std::string(300, 'a')), "\"" + std::string(200, 'a') + "\"...");
}

}  // namespace
}  // namespace stockade::images
