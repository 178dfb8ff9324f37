// parse_run_flags and make_sandbox_spec: --mask and --read-only (RunOptions::masked_paths,
// read_only_paths) into the spec.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runner/cli/run_command.h"
#include "tests/testing/matchers.h"
#include "tests/testing/run_spec.h"

namespace stockade::runner {
namespace {

using ::testing::ElementsAre;
using testing::HasErrc;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

Result<sandbox::SandboxSpec> build(const RunOptions& flags, const CallerContext& caller) {
    return testing::build_run_spec(flags, caller);
}

class RunSpecPathsTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/stockade-paths-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = fs::canonical(tmpl).string();
        fs::create_directories(dir_ + "/ws/sub");
        fs::create_directories(dir_ + "/ws/.git/hooks");
        fs::create_directories(dir_ + "/data");
        fs::create_directories(dir_ + "/outside");
        std::ofstream(dir_ + "/ws/.env") << "SECRET=1";
        std::ofstream(dir_ + "/data/token") << "t";
        caller_.cwd = dir_ + "/ws/sub";
        caller_.euid = 1234;
        caller_.egid = 1234;
        options_.workspace = dir_ + "/ws";
        options_.command = {"true"};
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::string dir_;
    CallerContext caller_;
    RunOptions options_;
};

TEST_F(RunSpecPathsTest, PathsReachTheSpecAbsoluteAndNormalised) {
    options_.masked_paths = {dir_ + "/ws/.env", "../.git//hooks/../config", "missing/later"};
    options_.read_only_paths = {dir_ + "/ws/.git/hooks/"};
    auto spec = build(options_, caller_);
    ASSERT_TRUE(spec) << spec.error().message;
    EXPECT_THAT(spec->masked_paths, ElementsAre(dir_ + "/ws/.env", dir_ + "/ws/.git/config",
                                                dir_ + "/ws/sub/missing/later"));
    EXPECT_THAT(spec->read_only_paths, ElementsAre(dir_ + "/ws/.git/hooks"));
    EXPECT_FALSE(spec->path_rules_best_effort);
}

TEST_F(RunSpecPathsTest, PathsInOtherBindsAreAccepted) {
    options_.ro = {dir_ + "/data"};
    options_.masked_paths = {dir_ + "/data/token"};
    auto spec = build(options_, caller_);
    ASSERT_TRUE(spec) << spec.error().message;
    EXPECT_THAT(spec->masked_paths, ElementsAre(dir_ + "/data/token"));
}

TEST_F(RunSpecPathsTest, PathsOutsideEveryBindAreUsageErrors) {
    options_.masked_paths = {dir_ + "/outside"};
    auto spec = build(options_, caller_);
    ASSERT_THAT(spec, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(spec.error().message, HasSubstr("--mask"));
    EXPECT_THAT(spec.error().message, HasSubstr("not inside the workspace"));

    options_.masked_paths = {};
    options_.read_only_paths = {"../../outside"};
    spec = build(options_, caller_);
    ASSERT_THAT(spec, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(spec.error().message, HasSubstr("--read-only"));

    options_.read_only_paths = {""};
    EXPECT_THAT(build(options_, caller_), HasErrc(Errc::kInvalidArgument));
}

TEST_F(RunSpecPathsTest, PathsThroughSymlinksAreUsageErrorsNamingTheRealPath) {
    fs::create_symlink(dir_ + "/ws/.env", dir_ + "/ws/envlink");
    fs::create_directory_symlink(dir_ + "/ws/.git", dir_ + "/ws/gitlink");
    options_.masked_paths = {dir_ + "/ws/envlink"};
    auto spec = build(options_, caller_);
    ASSERT_THAT(spec, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(spec.error().message, HasSubstr("symbolic link"));
    EXPECT_THAT(spec.error().message, HasSubstr(dir_ + "/ws/.env"));

    fs::create_symlink(dir_ + "/ws/nowhere", dir_ + "/ws/dangling");
    options_.masked_paths = {"../dangling"};
    spec = build(options_, caller_);
    ASSERT_THAT(spec, HasErrc(Errc::kInvalidArgument)) << "a dangling symlink too";
    EXPECT_THAT(spec.error().message, HasSubstr("points nowhere"));

    options_.masked_paths = {dir_ + "/ws/gitlink/hooks/new"};
    spec = build(options_, caller_);
    ASSERT_THAT(spec, HasErrc(Errc::kInvalidArgument)) << "a symlink on the way counts too";
    EXPECT_THAT(spec.error().message, HasSubstr(dir_ + "/ws/.git"));
}

TEST_F(RunSpecPathsTest, BestEffortIsPassedThrough) {
    options_.read_only_paths = {dir_ + "/ws/.git/hooks"};
    auto parsed = parse_run_flags(options_, caller_);
    ASSERT_TRUE(parsed) << parsed.error().message;
    parsed->config.path_rules_best_effort = true;
    auto spec = make_sandbox_spec(parsed->config, caller_, sandbox::Isolation::kFull);
    ASSERT_TRUE(spec) << spec.error().message;
    EXPECT_TRUE(spec->path_rules_best_effort);
}

}  // namespace
}  // namespace stockade::runner
