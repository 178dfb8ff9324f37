#include "runner/session/host_ids.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade::runner {
namespace {

using testing::HasErrc;

class HostIdsTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/stockade-ids-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = std::string(tmpl) + "/locks";
    }
    void TearDown() override {
        std::filesystem::remove_all(std::filesystem::path(dir_).parent_path());
    }
    std::string dir_;
};

TEST_F(HostIdsTest, EachLiveLeaseHoldsItsOwnIdAndAReleasedOneIsReused) {
    auto a = lease_host_id(5000, 3, dir_);
    auto b = lease_host_id(5000, 3, dir_);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->id(), 5000U);
    EXPECT_EQ(b->id(), 5001U);
    {
        auto c = lease_host_id(5000, 3, dir_);
        ASSERT_TRUE(c);
        EXPECT_EQ(c->id(), 5002U);
        EXPECT_THAT(lease_host_id(5000, 3, dir_), HasErrc(Errc::kResourceExhausted));
    }
    auto again = lease_host_id(5000, 3, dir_);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->id(), 5002U) << "the id of an ended lease is free again";
    *a = HostIdLease();
    auto first = lease_host_id(5000, 3, dir_);
    ASSERT_TRUE(first);
    EXPECT_EQ(first->id(), 5000U);
}

TEST(HostIdRangeTest, ParsesFirstLastAndRefusesTheRest) {
    auto range = parse_host_id_range("200000-200099");
    ASSERT_TRUE(range.has_value());
    EXPECT_EQ(range->first, 200000U);
    EXPECT_EQ(range->count, 100U);
    auto fallback = parse_host_id_range("");
    ASSERT_TRUE(fallback.has_value());
    EXPECT_EQ(fallback->first, kSessionHostIdFirst);
    EXPECT_EQ(fallback->count, kSessionHostIdCount);
    for (const char* bad : {"0-10", "10", "20-10", "a-b", "1-4294967295", "-5"}) {
        auto r = parse_host_id_range(bad);
        ASSERT_FALSE(r.has_value()) << bad;
        EXPECT_NE(r.error().message.find("FIRST-LAST"), std::string::npos) << bad;
    }
}

// The initial namespace maps every id: the default ranges hold.
TEST(IdsInsideOwnMapTest, TheInitialNamespaceKeepsTheDefaults) {
    auto ids = ids_inside_own_map("         0          0 4294967295\n",
                                  "         0          0 4294967295\n");
    ASSERT_TRUE(ids);
    EXPECT_FALSE(ids->has_value());
    auto unread = ids_inside_own_map("", "");
    ASSERT_TRUE(unread);
    EXPECT_FALSE(unread->has_value());
}

// A container's map (podman --uidmap 0:200000:65536, Kubernetes hostUsers: false): the upper
// half of what it maps, below nobody (65534).
TEST(IdsInsideOwnMapTest, AContainersMapSparesTheUpperHalfBelowNobody) {
    auto ids = ids_inside_own_map("         0     200000      65536\n",
                                  "         0     200000      65536\n");
    ASSERT_TRUE(ids && ids->has_value());
    EXPECT_EQ((*ids)->first, 32767U);
    EXPECT_EQ((*ids)->last(), 65533U);
}

// Only ids both maps hold are spared, from the largest run they share.
TEST(IdsInsideOwnMapTest, OnlyIdsBothMapsHoldAreSpared) {
    auto ids = ids_inside_own_map("0 1000 1\n1 100000 65536\n", "0 1000 1\n1 100000 1001\n");
    ASSERT_TRUE(ids && ids->has_value());
    EXPECT_EQ((*ids)->first, 501U);
    EXPECT_EQ((*ids)->last(), 1001U);
}

// `unshare --map-root-user` maps one id: nothing to spare, the caller runs sandboxes as itself.
TEST(IdsInsideOwnMapTest, AOneIdMapSparesNone) {
    auto ids = ids_inside_own_map("         0       1000          1\n",
                                  "         0       1000          1\n");
    ASSERT_TRUE(ids && ids->has_value());
    EXPECT_EQ((*ids)->count, 0U);
}

TEST(IdsInsideOwnMapTest, ATextThatIsNotAMapIsAnError) {
    EXPECT_THAT(ids_inside_own_map("0 1000\n", "0 1000 1\n"), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(ids_inside_own_map("0 x 1\n", "0 1000 1\n"), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(ids_inside_own_map("0 1000 0\n", "0 1000 1\n"), HasErrc(Errc::kInvalidArgument));
}

}  // namespace
}  // namespace stockade::runner
