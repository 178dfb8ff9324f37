#include "images/registry_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade::images {
namespace {

using ::stockade::testing::HasErrc;
using ::stockade::testing::IsOk;

Reference parsed_ref(std::string_view text) {
    auto parsed = parse_reference(text);
    EXPECT_THAT(parsed, IsOk());
    return *parsed;
}

TEST(RegistryClientTest, BuildsTheApiUrlsOfAReference) {
    EXPECT_EQ(registry_base_url(parsed_ref("debian:12"), false), "https://registry-1.docker.io");
    EXPECT_EQ(registry_base_url(parsed_ref("127.0.0.1:5000/x/y"), true), "http://127.0.0.1:5000");
    EXPECT_EQ(registry_base_url(parsed_ref("[::1]:5000/x"), false), "https://[::1]:5000");
    EXPECT_EQ(manifest_path(parsed_ref("debian:12")), "/v2/library/debian/manifests/12");
    const std::string hex(64, 'a');
    const Reference pinned = parsed_ref("ghcr.io/o/r:1@sha256:" + hex);
    EXPECT_EQ(manifest_path(pinned), "/v2/o/r/manifests/sha256:" + hex);
    EXPECT_EQ(blob_path(pinned, *pinned.digest), "/v2/o/r/blobs/sha256:" + hex);
}

TEST(RegistryClientTest, AcceptsEveryManifestKind) {
    EXPECT_EQ(manifest_accept(),
              "application/vnd.oci.image.manifest.v1+json, "
              "application/vnd.oci.image.index.v1+json, "
              "application/vnd.docker.distribution.manifest.v2+json, "
              "application/vnd.docker.distribution.manifest.list.v2+json");
}

TEST(RegistryClientTest, TokenUrlsEncodeServiceAndScope) {
    auto url = token_request_url("https://auth.docker.io/token", "registry.docker.io",
                                 "repository:library/debian:pull");
    ASSERT_THAT(url, IsOk());
    EXPECT_EQ(*url,
              "https://auth.docker.io/token?service=registry.docker.io&"
              "scope=repository:library/debian:pull");

    url = token_request_url("https://auth.example/t?x=1#frag", "a b&c", "");
    ASSERT_THAT(url, IsOk());
    EXPECT_EQ(*url, "https://auth.example/t?x=1&service=a%20b%26c");

    EXPECT_THAT(token_request_url("ftp://auth.example/t", "", ""), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(token_request_url("/token", "", ""), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(token_request_url("https://", "", ""), HasErrc(Errc::kInvalidArgument));
}

TEST(RegistryClientTest, InsecureRegistriesAreMatchedByHostAndPort) {
    const std::vector<std::string> insecure = {"127.0.0.1:5000", "localhost:5001"};
    EXPECT_TRUE(insecure_listed("127.0.0.1:5000", insecure));
    EXPECT_TRUE(insecure_listed("localhost:5001", insecure));
    EXPECT_FALSE(insecure_listed("127.0.0.1:5001", insecure));
    EXPECT_FALSE(insecure_listed("127.0.0.1", insecure));
}

TEST(RegistryClientTest, PlainHttpGoesOnlyToLoopbackAddresses) {
    EXPECT_THAT(check_plain_http_addresses("localhost:5000", {"127.0.0.1", "::1"}), IsOk());
    EXPECT_THAT(check_plain_http_addresses("x:5000", {"127.8.9.10"}), IsOk());
    // One address elsewhere is enough to refuse: the connection could go there.
    auto refused = check_plain_http_addresses("registry.lan:5000", {"127.0.0.1", "192.0.2.7"});
    ASSERT_THAT(refused, HasErrc(Errc::kPolicyDenied));
    EXPECT_THAT(refused.error().message, ::testing::HasSubstr("192.0.2.7"));
    EXPECT_THAT(refused.error().message, ::testing::HasSubstr("registry.lan:5000"));
    EXPECT_THAT(check_plain_http_addresses("x:1", {"::ffff:127.0.0.1"}),
                HasErrc(Errc::kPolicyDenied));
    EXPECT_THAT(check_plain_http_addresses("x:1", {"0.0.0.0"}), HasErrc(Errc::kPolicyDenied));
    EXPECT_THAT(check_plain_http_addresses("x:1", {}), HasErrc(Errc::kPolicyDenied));
}

}  // namespace
}  // namespace stockade::images
