// --package-config: the user's npm, pip and cargo configuration for the sandbox, with every
// credential left out, and read only from files of the user's own, reached without a symlink.
#include "runner/session/package_config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/sandbox_harness.h"

namespace stockade::runner {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

TEST(PackageConfigTest, NpmrcKeepsRegistriesAndDropsEveryCredential) {
    size_t dropped = 0;
    const std::string out = npmrc_without_credentials(
        "registry=https://npm.mirror.example/\n"
        "@corp:registry=https://npm.corp.example/\n"
        "//npm.corp.example/:_authToken=npm_SECRET1\n"
        "_auth = dXNlcjpTRUNSRVQy\n"
        "strict-ssl=true\n"
        "; a comment\n"
        "email=me@example.com\n"
        "cafile=/etc/ssl/corp.pem\n",
        &dropped);
    EXPECT_EQ(out,
              "registry=https://npm.mirror.example/\n"
              "@corp:registry=https://npm.corp.example/\n"
              "strict-ssl=true\n"
              "; a comment\n"
              "cafile=/etc/ssl/corp.pem\n");
    EXPECT_EQ(dropped, 3U);
}

TEST(PackageConfigTest, PipConfLosesUserinfoAndClientCerts) {
    size_t dropped = 0;
    const std::string out = pip_conf_without_credentials(
        "[global]\n"
        "index-url = https://alice:SECRET3@pypi.corp.example/simple\n"
        "extra-index-url = https://pypi.org/simple\n"
        "client-cert = /home/alice/client.pem\n"
        "timeout = 30\n",
        &dropped);
    EXPECT_EQ(out,
              "[global]\n"
              "index-url = https://pypi.corp.example/simple\n"
              "extra-index-url = https://pypi.org/simple\n"
              "timeout = 30\n");
    EXPECT_EQ(dropped, 2U);
}

TEST(PackageConfigTest, CargoConfigLosesTokens) {
    size_t dropped = 0;
    const std::string out = cargo_config_without_credentials(
        "[source.crates-io]\nreplace-with = \"mirror\"\n"
        "[registries.corp]\nindex = \"sparse+https://crates.corp.example/\"\n"
        "token = \"SECRET4\"\ncredential-provider = \"cargo:token\"\n",
        &dropped);
    EXPECT_THAT(out, HasSubstr("replace-with = \"mirror\""));
    EXPECT_THAT(out, HasSubstr("index = \"sparse+https://crates.corp.example/\""));
    EXPECT_THAT(out, Not(HasSubstr("SECRET4")));
    EXPECT_THAT(out, Not(HasSubstr("credential-provider")));
    EXPECT_EQ(dropped, 2U);
}

TEST(PackageConfigTest, TakesOnlyTheUsersOwnFilesReachedWithoutASymlink) {
    testing::TempDir home("stockade-package-config");
    home.write_file(".npmrc", "registry=https://npm.mirror.example/\n//x/:_authToken=SECRET5\n");
    home.make_dir(".config");
    home.make_dir(".config/pip");
    home.write_file("elsewhere.conf", "[global]\nindex-url = https://mirror.example/simple\n");
    ASSERT_EQ(
        ::symlink(home.sub("elsewhere.conf").c_str(), home.sub(".config/pip/pip.conf").c_str()), 0);
    const std::vector<std::string> env = {"HOME=" + home.path()};
    const PackageConfig config = load_package_config(env, ::geteuid());
    ASSERT_EQ(config.files.size(), 1U);
    EXPECT_EQ(config.files[0].target, "/.stockade/npmrc");
    EXPECT_THAT(config.files[0].content, HasSubstr("registry=https://npm.mirror.example/"));
    EXPECT_THAT(config.files[0].content, Not(HasSubstr("SECRET5")));
    EXPECT_THAT(config.files[0].content, HasSubstr("1 credential line(s) left out"));
    EXPECT_THAT(config.env, ElementsAre("NPM_CONFIG_USERCONFIG=/.stockade/npmrc"));
    ASSERT_EQ(config.warnings.size(), 1U);
    EXPECT_THAT(config.warnings[0], HasSubstr("pip.conf is (or goes through) a symlink"));

    // A file of another user's (the caller is not its owner) is not taken.
    const PackageConfig other = load_package_config(env, ::geteuid() + 1);
    EXPECT_THAT(other.files, IsEmpty());
    EXPECT_THAT(other.warnings[0], HasSubstr("is not a regular file of yours"));
}

}  // namespace
}  // namespace stockade::runner
