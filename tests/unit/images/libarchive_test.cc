// libarchive() and load_libarchive(): libarchive loaded on first use, or an error that names the
// package to install.
#include "images/libarchive.h"

#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade::images {
namespace {

using testing::HasErrc;
using ::testing::HasSubstr;
using testing::IsOk;

TEST(LibArchiveTest, LoadsEveryFunctionOnceForAllThreads) {
    std::vector<const LibArchive*> seen(4, nullptr);
    {
        std::vector<std::jthread> threads;
        for (const LibArchive*& slot : seen) {
            threads.emplace_back([&slot] {
                auto lib = libarchive();
                ASSERT_THAT(lib, IsOk());
                slot = *lib;
            });
        }
    }
    for (const LibArchive* lib : seen) {
        ASSERT_NE(lib, nullptr);
        EXPECT_EQ(lib, seen.front());
    }
    const LibArchive& lib = *seen.front();
#define STOCKADE_EXPECT_BOUND(name) EXPECT_NE(lib.name, nullptr) << "archive_" #name;
    STOCKADE_LIBARCHIVE_FUNCTIONS(STOCKADE_EXPECT_BOUND)
#undef STOCKADE_EXPECT_BOUND
    EXPECT_GE(lib.version_number(), 3006000);
}

TEST(LibArchiveTest, ReadsAndWritesThroughTheTable) {
    auto loaded = libarchive();
    ASSERT_THAT(loaded, IsOk());
    const LibArchive& lib = **loaded;
    archive* reader = lib.read_new();
    ASSERT_NE(reader, nullptr);
    EXPECT_EQ(lib.read_support_format_empty(reader), ARCHIVE_OK);
    EXPECT_EQ(lib.read_open_memory(reader, "", 0), ARCHIVE_OK);
    archive_entry* entry = nullptr;
    EXPECT_EQ(lib.read_next_header(reader, &entry), ARCHIVE_EOF);
    EXPECT_EQ(lib.read_free(reader), ARCHIVE_OK);
}

TEST(LibArchiveTest, AMissingLibraryNamesThePackage) {
    const auto lib = load_libarchive("libstockade-absent.so.13");
    ASSERT_THAT(lib, HasErrc(Errc::kUnavailable));
    EXPECT_THAT(lib.error().message, HasSubstr("libarchive13"));
    EXPECT_THAT(lib.error().message, HasSubstr("stockade image import"));
    EXPECT_THAT(lib.error().message, HasSubstr("libstockade-absent.so.13"));
}

TEST(LibArchiveTest, ALibraryWithoutTheFunctionsNamesThoseItLacks) {
    const auto lib = load_libarchive("libm.so.6");
    ASSERT_THAT(lib, HasErrc(Errc::kUnavailable));
    EXPECT_THAT(lib.error().message, HasSubstr("libarchive13"));
    EXPECT_THAT(lib.error().message, HasSubstr("libm.so.6 lacks archive_version_number"));
    EXPECT_THAT(lib.error().message, HasSubstr("archive_entry_set_hardlink"));
}

}  // namespace
}  // namespace stockade::images
