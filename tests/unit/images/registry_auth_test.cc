#include "images/registry_auth.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade::images {
namespace {

using ::stockade::testing::HasErrc;
using ::stockade::testing::IsOk;
using ::testing::HasSubstr;
using ::testing::Not;

Reference parsed_ref(std::string_view text) {
    auto parsed = parse_reference(text);
    EXPECT_THAT(parsed, IsOk());
    return *parsed;
}

std::optional<RegistryCredentials> creds(std::string_view text, std::string_view reference) {
    auto found = credentials_from_auth_text(text, parsed_ref(reference));
    EXPECT_THAT(found, IsOk());
    return found ? *found : std::nullopt;
}

TEST(RegistryAuthTest, DecodesTheBase64AuthOfAHostEntry) {
    // "alice:s3cr:et" — the password keeps every colon after the first.
    const auto found =
        creds(R"({"auths": {"registry.example:5000": {"auth": "YWxpY2U6czNjcjpldA=="}}})",
              "registry.example:5000/team/app:1");
    EXPECT_EQ(found, (RegistryCredentials{.username = "alice", .password = "s3cr:et"}));
}

TEST(RegistryAuthTest, ReadsUsernamePasswordAndIdentityTokenFields) {
    EXPECT_EQ(
        creds(R"({"auths": {"ghcr.io": {"username": "bob", "password": "pw"}}})", "ghcr.io/o/r"),
        (RegistryCredentials{.username = "bob", .password = "pw"}));
    EXPECT_EQ(creds(R"({"auths": {"ghcr.io": {"identitytoken": "refresh"}}})", "ghcr.io/o/r"),
              (RegistryCredentials{.identity_token = "refresh"}));
}

TEST(RegistryAuthTest, DockersLegacyIndexKeyNamesDockerHub) {
    const std::string text =
        R"({"auths": {"https://index.docker.io/v1/": {"auth": "dTpw"}}, "credsStore": "x"})";
    EXPECT_EQ(creds(text, "debian:12"), (RegistryCredentials{.username = "u", .password = "p"}));
    EXPECT_EQ(creds(text, "ghcr.io/debian"), std::nullopt);
}

TEST(RegistryAuthTest, NormalizesKeys) {
    EXPECT_EQ(normalize_auth_key("https://index.docker.io/v1/"), "docker.io");
    EXPECT_EQ(normalize_auth_key("registry-1.docker.io"), "docker.io");
    EXPECT_EQ(normalize_auth_key("http://localhost:5000/v2/"), "localhost:5000");
    EXPECT_EQ(normalize_auth_key("Ghcr.io/org/"), "ghcr.io/org");
    EXPECT_EQ(normalize_auth_key("[::1]:5000"), "[::1]:5000");
    EXPECT_EQ(normalize_auth_key(""), std::nullopt);
    EXPECT_EQ(normalize_auth_key("https://"), std::nullopt);
}

TEST(RegistryAuthTest, TheLongestNamespaceKeyWins) {
    const std::string text = R"({"auths": {
        "quay.io": {"auth": "aG9zdDpw"},
        "quay.io/team": {"auth": "dGVhbTpw"},
        "quay.io/te": {"auth": "dGU6cA=="}}})";
    EXPECT_EQ(creds(text, "quay.io/team/app")->username, "team");
    EXPECT_EQ(creds(text, "quay.io/teams/app")->username, "host");  // not a component prefix
    EXPECT_EQ(creds(text, "quay.io/other")->username, "host");
}

TEST(RegistryAuthTest, AFileWithoutAuthsOrWithoutTheHostHasNone) {
    EXPECT_EQ(creds("{}", "ghcr.io/o/r"), std::nullopt);
    EXPECT_EQ(creds(R"({"auths": null})", "ghcr.io/o/r"), std::nullopt);
    EXPECT_EQ(creds(R"({"auths": {"docker.io": {"auth": "dTpw"}}})", "ghcr.io/o/r"), std::nullopt);
}

TEST(RegistryAuthTest, MalformedFilesAreRefusedWithoutTheirSecrets) {
    const Reference r = parsed_ref("ghcr.io/o/r");
    EXPECT_THAT(credentials_from_auth_text("not json", r), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(credentials_from_auth_text("[]", r), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(credentials_from_auth_text(R"({"auths": []})", r), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(credentials_from_auth_text(R"({"auths": {"ghcr.io": "x"}})", r),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(credentials_from_auth_text(R"({"auths": {"ghcr.io": {"auth": 5}}})", r),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(credentials_from_auth_text(R"({"auths": {"ghcr.io": {}}})", r),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(credentials_from_auth_text(R"({"auths": {"ghcr.io": {"username": "u"}}})", r),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(credentials_from_auth_text(std::string(70, '[') + std::string(70, ']'), r),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(credentials_from_auth_text(std::string(kMaxAuthFileBytes + 1, ' '), r),
                HasErrc(Errc::kInvalidArgument));

    // Not base64, and base64 of no "user:password": the key is named, the value is not.
    auto bad = credentials_from_auth_text(R"({"auths": {"ghcr.io": {"auth": "hunter2!"}}})", r);
    ASSERT_THAT(bad, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(bad.error().message, HasSubstr("\"ghcr.io\""));
    EXPECT_THAT(bad.error().message, Not(HasSubstr("hunter2")));
    // base64("hunter2"), no colon.
    bad = credentials_from_auth_text(R"({"auths": {"ghcr.io": {"auth": "aHVudGVyMg=="}}})", r);
    ASSERT_THAT(bad, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(bad.error().message, Not(HasSubstr("aHVudGVyMg")));
    EXPECT_THAT(bad.error().message, Not(HasSubstr("hunter2")));
    // A syntax error's message would quote the text near it: none is given.
    bad = credentials_from_auth_text(R"({"auths": {"ghcr.io": {"auth": "c2VjcmV0OnB3"})", r);
    ASSERT_THAT(bad, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(bad.error().message, Not(HasSubstr("c2VjcmV0")));
}

TEST(RegistryAuthTest, CandidatesFollowTheContainersOrder) {
    const AuthFileSources all{.authfile = "/flag.json",
                              .registry_auth_file = "/env.json",
                              .xdg_runtime_dir = "/run/user/1000",
                              .home = "/home/u"};
    auto c = auth_file_candidates(all);
    EXPECT_EQ(c.files, std::vector<std::filesystem::path>{"/flag.json"});
    EXPECT_TRUE(c.explicit_file);

    AuthFileSources no_flag = all;
    no_flag.authfile.reset();
    c = auth_file_candidates(no_flag);
    EXPECT_EQ(c.files, std::vector<std::filesystem::path>{"/env.json"});
    EXPECT_TRUE(c.explicit_file);

    no_flag.registry_auth_file.reset();
    c = auth_file_candidates(no_flag);
    EXPECT_EQ(c.files, (std::vector<std::filesystem::path>{"/run/user/1000/containers/auth.json",
                                                           "/home/u/.docker/config.json"}));
    EXPECT_FALSE(c.explicit_file);

    EXPECT_TRUE(auth_file_candidates(AuthFileSources{}).files.empty());
}

class RegistryAuthFileTest : public ::testing::Test {
protected:
    void SetUp() override {
        char dir_template[] = "/tmp/registry_auth_test.XXXXXX";
        ASSERT_NE(::mkdtemp(dir_template), nullptr);
        dir_ = dir_template;
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    std::filesystem::path write(const std::string& name, const std::string& text) {
        const auto path = dir_ / name;
        std::filesystem::create_directories(path.parent_path());
        std::ofstream(path) << text;
        return path;
    }
    std::filesystem::path dir_;
};

TEST_F(RegistryAuthFileTest, TheFirstDefaultFileWithAnEntryWins) {
    write("run/containers/auth.json", R"({"auths": {"other.io": {"auth": "eDp5"}}})");
    write("home/.docker/config.json", R"({"auths": {"ghcr.io": {"auth": "dTpw"}}})");
    const AuthFileCandidates candidates = auth_file_candidates(
        AuthFileSources{.xdg_runtime_dir = dir_ / "run", .home = dir_ / "home"});
    auto found = find_credentials(candidates, parsed_ref("ghcr.io/o/r"));
    ASSERT_THAT(found, IsOk());
    EXPECT_EQ(*found, (RegistryCredentials{.username = "u", .password = "p"}));
}

TEST_F(RegistryAuthFileTest, MissingDefaultFilesAreSkippedAndAMissingExplicitOneIsAnError) {
    const Reference r = parsed_ref("ghcr.io/o/r");
    auto none = find_credentials(
        auth_file_candidates(AuthFileSources{.xdg_runtime_dir = dir_ / "x", .home = dir_ / "y"}),
        r);
    ASSERT_THAT(none, IsOk());
    EXPECT_EQ(*none, std::nullopt);

    auto missing = find_credentials(
        auth_file_candidates(AuthFileSources{.authfile = dir_ / "missing.json"}), r);
    ASSERT_THAT(missing, HasErrc(Errc::kNotFound));
    EXPECT_THAT(missing.error().message, HasSubstr("missing.json"));
}

TEST_F(RegistryAuthFileTest, AMalformedFileIsNamed) {
    const auto path = write("auth.json", R"({"auths": {"ghcr.io": {"auth": "!!"}}})");
    auto bad = find_credentials(auth_file_candidates(AuthFileSources{.authfile = path}),
                                parsed_ref("ghcr.io/o/r"));
    ASSERT_THAT(bad, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(bad.error().message, HasSubstr(path.string()));
}

}  // namespace
}  // namespace stockade::images
