#include "runner/cli/serve_command.h"

#include <stdlib.h>

#include <filesystem>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade::runner {
namespace {

namespace fs = std::filesystem;
using testing::HasErrc;
using ::testing::HasSubstr;
using testing::IsOk;

class CheckpointFlagsTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::string templ = (fs::temp_directory_path() / "serve-flags-XXXXXX").string();
        ASSERT_NE(::mkdtemp(templ.data()), nullptr);
        dir_ = templ;
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    Result<SessionConfig> config(RunOptions sandbox) {
        return session_config_from_flags(dir_.string(), "", "", "", "", PolicyFlags{}, sandbox,
                                         false);
    }
    fs::path dir_;
};

TEST_F(CheckpointFlagsTest, OnByDefaultOffWhenSaidAndSizesParsed) {
    auto on = config(RunOptions{});
    ASSERT_THAT(on, IsOk());
    EXPECT_TRUE(on->checkpoints.enabled);
    RunOptions off;
    off.checkpoints = "off";
    off.checkpoint_quota = "64M";
    off.checkpoint_file_cap = "1M";
    auto parsed = config(off);
    ASSERT_THAT(parsed, IsOk());
    EXPECT_FALSE(parsed->checkpoints.enabled);
    EXPECT_EQ(parsed->checkpoints.cap_bytes, uint64_t{64} << 20);
    EXPECT_EQ(parsed->checkpoints.max_file_bytes, uint64_t{1} << 20);
}

TEST_F(CheckpointFlagsTest, AnythingElseIsAUsageErrorNamingTheFlag) {
    RunOptions bad;
    bad.checkpoints = "yes";
    auto r = config(bad);
    ASSERT_THAT(r, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(r.error().message, HasSubstr("--checkpoints \"yes\": say on or off"));
    RunOptions big;
    big.checkpoint_file_cap = "64M";
    auto too_big = config(big);
    ASSERT_THAT(too_big, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(too_big.error().message, HasSubstr("--checkpoint-file-cap"));
}

}  // namespace
}  // namespace stockade::runner
