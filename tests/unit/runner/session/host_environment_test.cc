#include "runner/session/host_environment.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade::runner {
namespace {

using stockade::testing::HasErrc;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(GitIdentityTest, ParsesNameAndEmailAsGitWritesThem) {
    auto id = parse_git_identity("Ada Lovelace <ada@example.com>");
    ASSERT_TRUE(id.has_value());
    EXPECT_EQ(*id, (GitIdentity{.name = "Ada Lovelace", .email = "ada@example.com"}));
    for (const char* bad : {"Ada", "<ada@example.com>", "Ada <>", "Ada <a b@c>", "Ada <a@b> x"}) {
        EXPECT_THAT(parse_git_identity(bad), HasErrc(Errc::kInvalidArgument)) << bad;
    }
}

TEST(GitIdentityTest, ReadsTheUserSectionOfAConfigFileLaterValuesWinning) {
    GitIdentity id;
    apply_git_config(R"(# global
[core]
	name = not-this
[User]
	name = "Ada Lovelace"   ; quoted, with a comment
	email = ada@old.example
[user "sub"]
	email = sub@example.com
[user]
	email = ada@example.com # the last one
)",
                     id);
    EXPECT_EQ(id, (GitIdentity{.name = "Ada Lovelace", .email = "ada@example.com"}));
    GitIdentity partial{.name = "Kept", .email = ""};
    apply_git_config("[user]\n\temail = e@x\n", partial);
    EXPECT_EQ(partial, (GitIdentity{.name = "Kept", .email = "e@x"}));
}

TEST(GitIdentityTest, TheOperatorsFilesInGitsOrder) {
    const std::filesystem::path home =
        std::filesystem::temp_directory_path() / ("stockade-git-" + std::to_string(::getpid()));
    std::filesystem::create_directories(home / ".config/git");
    std::ofstream(home / ".config/git/config") << "[user]\n\tname = Xdg\n\temail = xdg@example\n";
    std::ofstream(home / ".gitconfig") << "[user]\n\temail = home@example\n";
    auto id = operator_git_identity({"HOME=" + home.string()});
    ASSERT_TRUE(id.has_value());
    EXPECT_EQ(*id, (GitIdentity{.name = "Xdg", .email = "home@example"}));
    std::filesystem::remove_all(home);
    const auto gone =
        operator_git_identity({"HOME=" + home.string()});  // /etc/gitconfig may set one
    EXPECT_TRUE(!gone.has_value() || gone->email != "home@example");
    EXPECT_THAT(git_identity_env({.name = "A", .email = "a@b"}),
                ElementsAre("GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=A",
                            "GIT_COMMITTER_EMAIL=a@b"));
}

TEST(HiddenPathDirsTest, NamesTheToolchainsTheSandboxCannotSee) {
    const std::filesystem::path root =
        std::filesystem::temp_directory_path() / ("stockade-path-" + std::to_string(::getpid()));
    std::filesystem::create_directories(root / "cargo/bin");
    std::filesystem::create_directories(root / "empty");
    std::filesystem::create_directories(root / "mounted/bin");
    for (const char* tool : {"cargo", "rustc"}) {
        const auto file = root / "cargo/bin" / tool;
        std::ofstream(file) << "#!/bin/sh\n";
        ::chmod(file.c_str(), 0755);
    }
    std::ofstream(root / "cargo/bin/README") << "not a program\n";
    std::ofstream(root / "mounted/bin/tool") << "#!/bin/sh\n";
    ::chmod((root / "mounted/bin/tool").c_str(), 0755);
    const std::string path = (root / "cargo/bin").string() + ":" + (root / "empty").string() +
                             ":relative:" + (root / "mounted/bin").string() + ":/usr/bin";
    auto hidden = hidden_path_dirs(path, {"/usr", (root / "mounted").string()});
    ASSERT_EQ(hidden.size(), 1U);
    EXPECT_EQ(hidden[0].dir, (root / "cargo/bin").string());
    EXPECT_THAT(hidden[0].programs, ElementsAre("cargo", "rustc"));
    EXPECT_THAT(hidden_path_dirs_hint(hidden), HasSubstr("--ro " + (root / "cargo/bin").string()));
    EXPECT_THAT(hidden_path_dirs_hint({}), IsEmpty());
    std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace stockade::runner
