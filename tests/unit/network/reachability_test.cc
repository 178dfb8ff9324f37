// The proxy's address check after its rules (network/reachability.h), shared with `policy
// explain network`: which resolved addresses it reaches, and what it says of the others.
#include "network/reachability.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace stockade::network {
namespace {

using boost::asio::ip::make_address;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(ReachabilityTest, KeepsPublicAddressesAndNamesTheFirstDropped) {
    std::vector<boost::asio::ip::address> addresses = {
        make_address("10.1.2.3"), make_address("93.184.215.14"), make_address("::1")};
    const auto first = drop_unreachable(addresses, {});
    ASSERT_TRUE(first);
    EXPECT_EQ(first->address, "10.1.2.3");
    EXPECT_EQ(first->why, "a private address (RFC 1918)");
    EXPECT_THAT(addresses, ElementsAre(make_address("93.184.215.14")));

    std::vector<boost::asio::ip::address> public_only = {make_address("93.184.215.14")};
    EXPECT_FALSE(drop_unreachable(public_only, {}));
    EXPECT_EQ(public_only.size(), 1U);
}

TEST(ReachabilityTest, ThisHostsOwnAddressesAreNeverReached) {
    // A public address that is this host's reaches its services as loopback would.
    std::vector<boost::asio::ip::address> addresses = {make_address("93.184.215.14")};
    const auto first = drop_unreachable(addresses, {make_address("93.184.215.14")});
    ASSERT_TRUE(first);
    EXPECT_EQ(first->why, "an address of this host");
    EXPECT_THAT(addresses, IsEmpty());
}

TEST(ReachabilityTest, ANameGetsItsPinAndAnAddressNone) {
    const Unreachable loopback{.address = "127.0.0.1", .why = "a loopback address"};
    EXPECT_EQ(unreachable_reason("mirror.test", false, loopback),
              "mirror.test resolves to a loopback address (127.0.0.1), which is never reached "
              "through the proxy");
    EXPECT_EQ(unreachable_hint("mirror.test", false, loopback),
              "if it is meant to be reached, the user can pin it: --resolve "
              "mirror.test=127.0.0.1 (settings: sandbox.network.resolve)");
    EXPECT_EQ(unreachable_reason("127.0.0.1", true, loopback),
              "127.0.0.1 is a loopback address, which is never reached through the proxy");
    EXPECT_EQ(unreachable_hint("127.0.0.1", true, loopback), "");
}

}  // namespace
}  // namespace stockade::network
