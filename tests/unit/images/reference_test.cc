#include "images/reference.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade::images {
namespace {

using ::stockade::testing::HasErrc;
using ::stockade::testing::IsOk;
using ::testing::HasSubstr;

const std::string kHex(64, 'a');
const std::string kDigest = "sha256:" + kHex;

std::string canonical(std::string_view text) {
    auto ref = parse_reference(text);
    EXPECT_THAT(ref, IsOk()) << text;
    return ref ? ref->str() : "";
}

TEST(ReferenceTest, FillsInDockerDefaults) {
    EXPECT_EQ(canonical("debian"), "docker.io/library/debian:latest");
    EXPECT_EQ(canonical("debian:12"), "docker.io/library/debian:12");
    EXPECT_EQ(canonical("user/tool"), "docker.io/user/tool:latest");
    EXPECT_EQ(canonical("docker.io/debian"), "docker.io/library/debian:latest");
    EXPECT_EQ(canonical("index.docker.io/debian:12"), "docker.io/library/debian:12");
    EXPECT_EQ(canonical("docker.io/library/debian:12"), "docker.io/library/debian:12");
}

TEST(ReferenceTest, SplitsEveryPart) {
    auto ref = parse_reference("LocalHost:5000/team/tool:v1.2@" + kDigest);
    ASSERT_THAT(ref, IsOk());
    EXPECT_EQ(*ref, (Reference{.registry = "localhost:5000",
                               .repository = "team/tool",
                               .tag = "v1.2",
                               .digest = *Digest::parse(kDigest)}));
    EXPECT_EQ(ref->name(), "localhost:5000/team/tool");
    EXPECT_EQ(ref->tag_or_digest(), kDigest);
    EXPECT_EQ(ref->str(), "localhost:5000/team/tool:v1.2@" + kDigest);
}

TEST(ReferenceTest, DigestAloneLeavesNoTag) {
    auto ref = parse_reference("ghcr.io/o/r@" + kDigest);
    ASSERT_THAT(ref, IsOk());
    EXPECT_EQ(ref->tag, std::nullopt);
    EXPECT_EQ(ref->str(), "ghcr.io/o/r@" + kDigest);
    EXPECT_EQ(ref->tag_or_digest(), kDigest);
}

TEST(ReferenceTest, DetectsTheRegistryLikeDocker) {
    EXPECT_EQ(parse_reference("localhost/x")->registry, "localhost");
    EXPECT_EQ(parse_reference("localhost:5000/x")->registry, "localhost:5000");
    EXPECT_EQ(parse_reference("registry.example.com/x")->registry, "registry.example.com");
    EXPECT_EQ(parse_reference("127.0.0.1:5000/x")->registry, "127.0.0.1:5000");
    EXPECT_EQ(parse_reference("[::1]:5000/x:1")->registry, "[::1]:5000");
    EXPECT_EQ(parse_reference("Registry/x")->registry, "Registry") << "upper case: a host";
    EXPECT_EQ(parse_reference("GHCR.io/x")->registry, "ghcr.io");
    EXPECT_EQ(parse_reference("myhost/x")->registry, "docker.io") << "no '.' or ':'";
    EXPECT_EQ(parse_reference("myhost/x")->repository, "myhost/x");
    // Without a '/', "localhost:5000" is a name and a tag.
    EXPECT_EQ(canonical("localhost:5000"), "docker.io/library/localhost:5000");
}

TEST(ReferenceTest, AcceptsTheSeparatorsOfTheGrammar) {
    EXPECT_THAT(parse_reference("org/a.b_c__d---e/f-g"), IsOk());
    EXPECT_THAT(parse_reference("x:_tag.With-Case"), IsOk());
    EXPECT_THAT(parse_reference("x:" + std::string(128, 't')), IsOk());
}

TEST(ReferenceTest, CanonicalFormReadsBackTheSame) {
    for (const std::string& text : std::vector<std::string>{
             "debian", "a/b:c", "localhost:5000/x@" + kDigest, "[::1]:5000/x:1@" + kDigest,
             "quay.io/a/b/c:d", "Intranet/x", "LOCALHOST/x"}) {
        auto first = parse_reference(text);
        ASSERT_THAT(first, IsOk()) << text;
        auto again = parse_reference(first->str());
        ASSERT_THAT(again, IsOk()) << first->str();
        EXPECT_EQ(*again, *first);
    }
}

std::string reference_error(std::string_view text) {
    auto ref = parse_reference(text);
    EXPECT_THAT(ref, HasErrc(Errc::kInvalidArgument)) << text;
    return ref ? "" : ref.error().message;
}

TEST(ReferenceTest, RefusesWhatTheGrammarDoesNot) {
    EXPECT_EQ(reference_error(""), "reference is empty");
    EXPECT_EQ(reference_error("Debian"), "reference \"Debian\": repository names are lower case");
    EXPECT_THAT(reference_error("ghcr.io/Org/x"), HasSubstr("repository names are lower case"));
    EXPECT_THAT(reference_error("a//b"), HasSubstr("a path component is empty"));
    EXPECT_THAT(reference_error("a/"), HasSubstr("a path component is empty"));
    EXPECT_THAT(reference_error("ghcr.io/"), HasSubstr("the repository name is empty"));
    EXPECT_THAT(reference_error(":tag"), HasSubstr("the repository name is empty"));
    EXPECT_THAT(reference_error("-a"), HasSubstr("must start and end with a letter or digit"));
    EXPECT_THAT(reference_error("a..b"), HasSubstr("\"..\" in path component \"a..b\""));
    EXPECT_THAT(reference_error("a___b"), HasSubstr("\"___\""));
    EXPECT_THAT(reference_error("a b"), HasSubstr("\" \" in path component"));
    EXPECT_THAT(reference_error("x:"), HasSubstr("the tag after ':' is empty"));
    EXPECT_THAT(reference_error("x:.t"), HasSubstr("tag \".t\" is not"));
    EXPECT_THAT(reference_error("x:" + std::string(129, 't')), HasSubstr("longer than 128"));
    EXPECT_THAT(reference_error("x@sha256:abc"), HasSubstr("not 3"));
    EXPECT_THAT(reference_error("x@md5:abc"), HasSubstr("\"md5\" is not supported"));
    EXPECT_THAT(reference_error("docker://debian"),
                HasSubstr("a reference has no scheme: drop \"docker://\""));
    EXPECT_THAT(reference_error(kHex), HasSubstr("is an image ID, not a repository"));
    EXPECT_THAT(reference_error("localhost:0/x"), HasSubstr("not a number from 1 to 65535"));
    EXPECT_THAT(reference_error("localhost:65536/x"), HasSubstr("not a number"));
    EXPECT_THAT(reference_error("localhost:/x"), HasSubstr("not a number"));
    EXPECT_THAT(reference_error("exa_mple.com/x"), HasSubstr("a host name is letters"));
    EXPECT_THAT(reference_error("-bad.com/x"), HasSubstr("must not start or end with '-'"));
    EXPECT_THAT(reference_error("a..com/x"), HasSubstr("has an empty label"));
    EXPECT_THAT(reference_error("[::1/x"), HasSubstr("'[' without ']'"));
    EXPECT_THAT(reference_error("[zz]:5000/x"), HasSubstr("is not an IPv6 address"));
    EXPECT_THAT(reference_error("example.com/" + std::string(250, 'a')),
                HasSubstr("longer than 255 characters"));
    EXPECT_THAT(reference_error(std::string(2000, 'a')), HasSubstr("longer than 1024"));
}

TEST(ReferenceTest, ApiHostOfDockerHub) {
    EXPECT_EQ(registry_api_host("docker.io"), "registry-1.docker.io");
    EXPECT_EQ(registry_api_host("localhost:5000"), "localhost:5000");
}

TEST(ImageNameTest, ParsesNameTagAndDigest) {
    EXPECT_EQ(*parse_image_name("debian"), (ImageName{.name = "debian"}));
    EXPECT_EQ(*parse_image_name("py3.12_slim-x:v1"),
              (ImageName{.name = "py3.12_slim-x", .tag = "v1"}));
    auto pinned = parse_image_name("tools:1@" + kDigest);
    ASSERT_THAT(pinned, IsOk());
    EXPECT_EQ(pinned->digest, *Digest::parse(kDigest));
    EXPECT_EQ(pinned->str(), "tools:1@" + kDigest);
    EXPECT_EQ(parse_image_name("tools@" + kDigest)->str(), "tools@" + kDigest);
}

TEST(ImageNameTest, RefusesWhatIsNotAStoreName) {
    const auto error = [](std::string_view text) {
        auto name = parse_image_name(text);
        EXPECT_THAT(name, HasErrc(Errc::kInvalidArgument)) << text;
        return name ? "" : name.error().message;
    };
    EXPECT_EQ(error(""), "image name is empty");
    EXPECT_THAT(error("Debian"), HasSubstr("image names are lower case"));
    EXPECT_THAT(error(".hidden"), HasSubstr("starts with a letter or digit"));
    EXPECT_THAT(error("-x"), HasSubstr("starts with a letter or digit"));
    EXPECT_THAT(error("docker.io/debian"), HasSubstr("a store name has no '/'"));
    EXPECT_THAT(error("a b"), HasSubstr("\" \" is not allowed"));
    EXPECT_THAT(error("x:"), HasSubstr("the tag after ':' is empty"));
    EXPECT_THAT(error("x:a:b"), HasSubstr("tag \"a:b\" is not"));
    EXPECT_THAT(error(":t"), HasSubstr("the name before ':' or '@' is empty"));
    EXPECT_THAT(error(std::string(129, 'a')), HasSubstr("longer than 128"));
    EXPECT_THAT(error("x@sha256:zz"), HasSubstr("image name \"x@sha256:zz\": digest"));
}

}  // namespace
}  // namespace stockade::images
