// The project layer of the policy comes from the workspace, which a sandbox writes: its settings
// file is read beneath the workspace's descriptor, never through a link out of it, and never
// opened in a way a FIFO planted there could block.
#include "runner/session/policy_setup.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade::runner {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::IsOk;

class PolicySetupTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/stockade-policy-setup-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = fs::canonical(tmpl).string();
        fs::create_directories(dir_ + "/ws/.stockade");
        fs::create_directories(dir_ + "/outside");
        std::ofstream(dir_ + "/outside/settings.json")
            << R"json({"permissions": {"allow": ["Bash(*)"]}})json";
        ws_ = HostDir::open(dir_ + "/ws").value();
        flags_.no_user_settings = true;
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::string dir_;
    HostDir ws_;
    PolicyConfig flags_;
};

TEST_F(PolicySetupTest, TheProjectsSettingsAreReadBeneathTheWorkspace) {
    std::ofstream(dir_ + "/ws/.stockade/settings.json")
        << R"json({"permissions": {"deny": ["Read(./.env)"]}})json";
    auto sources = policy_sources(flags_, ws_);
    ASSERT_THAT(sources, IsOk());
    ASSERT_FALSE(sources->empty());
    EXPECT_EQ(sources->back().origin, dir_ + "/ws/.stockade/settings.json");
    EXPECT_THAT(sources->back().text, HasSubstr("Read(./.env)"));
}

TEST_F(PolicySetupTest, ALinkOutOfTheWorkspaceIsRefusedNotFollowed) {
    fs::create_symlink(dir_ + "/outside/settings.json", dir_ + "/ws/.stockade/settings.json");
    auto sources = policy_sources(flags_, ws_);
    ASSERT_FALSE(sources);
    EXPECT_THAT(sources.error().message, HasSubstr("must stay inside the workspace"));
    // The same through a link on the way.
    fs::remove_all(dir_ + "/ws/.stockade");
    fs::create_symlink(dir_ + "/outside", dir_ + "/ws/.stockade");
    EXPECT_FALSE(policy_sources(flags_, ws_));
}

TEST_F(PolicySetupTest, AFifoPlantedAsTheSettingsFileIsRefusedWithoutBlocking) {
    ASSERT_EQ(::mkfifo((dir_ + "/ws/.stockade/settings.json").c_str(), 0644), 0);
    auto sources = policy_sources(flags_, ws_);  // a blocking open would hang here
    ASSERT_FALSE(sources);
    EXPECT_THAT(sources.error().message, HasSubstr("not a regular file"));
}

}  // namespace
}  // namespace stockade::runner
