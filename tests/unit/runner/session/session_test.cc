// Session::open on its own: what a typed SessionConfig becomes before any worker starts.
#include "runner/session/session.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
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

std::string read_all(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

class SessionOpenTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/stockade-session-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = fs::path(tmpl);
        fs::create_directory(dir_ / "ws");
        fs::create_directory(dir_ / "state");
    }
    void TearDown() override { fs::remove_all(dir_); }

    // A session on ws/ with its state in state/; nothing is started.
    [[nodiscard]] SessionConfig config() const {
        SessionConfig config;
        config.sandbox.workspace = HostDir::open((dir_ / "ws").string()).value();
        config.sandbox.isolation = sandbox::Isolation::kNone;
        config.sandbox.host_uid = 1879048192;  // as root: no lease of a host uid
        config.state_dir = (dir_ / "state").string();
        config.policy.no_user_settings = true;
        return config;
    }

    fs::path dir_;
};

TEST_F(SessionOpenTest, OpensItsStateAndRecordsItsPolicy) {
    SessionConfig c = config();
    c.policy.mode = policy::Mode::kCi;
    c.policy.deny = {"Read(./secret.txt)"};
    std::ofstream(dir_ / "ws" / "secret.txt") << "hunter2\n";
    c.git_identity = GitIdentity{.name = "Ada", .email = "ada@example.com"};
    auto session = Session::open(std::move(c));
    ASSERT_THAT(session, IsOk());
    const Session& s = **session;
    EXPECT_EQ(s.workspace(), (dir_ / "ws").string());
    EXPECT_EQ(s.policy().mode(), policy::Mode::kCi);
    EXPECT_EQ(s.git_identity().email, "ada@example.com");
    EXPECT_TRUE(s.paths().id.starts_with("s-")) << s.paths().id;
    EXPECT_EQ(s.paths().dir, (dir_ / "state" / "sessions" / s.paths().id).string());
    const std::string events = read_all(s.paths().events);
    EXPECT_THAT(events, HasSubstr("\"PolicyLoaded\""));
    EXPECT_THAT(events, HasSubstr("\"mode\":\"ci\""));
    EXPECT_THAT(events, HasSubstr("\"SessionStarted\""));
    // The deny rule is a mask of the worker's view.
    EXPECT_THAT(s.sandbox().masked_paths,
                ::testing::Contains((dir_ / "ws" / "secret.txt").string()));
}

TEST_F(SessionOpenTest, ResumingASessionThatIsNotThereFails) {
    SessionConfig c = config();
    c.resume = "s-000000000000";
    auto session = Session::open(std::move(c));
    ASSERT_THAT(session, HasErrc(Errc::kNotFound));
}

TEST_F(SessionOpenTest, AStateDirectoryInsideTheWorkspaceIsRefused) {
    fs::create_directory(dir_ / "ws" / "state");
    SessionConfig c = config();
    c.state_dir = (dir_ / "ws" / "state").string();
    auto session = Session::open(std::move(c));
    ASSERT_FALSE(session);
    EXPECT_THAT(session.error().message, HasSubstr("state"));
    EXPECT_FALSE(fs::exists(dir_ / "ws" / "state" / "sessions"))
        << "nothing is written where the sandbox could reach it";
}

TEST_F(SessionOpenTest, AResumedSessionKeepsItsId) {
    std::string id;
    {
        auto first = Session::open(config());
        ASSERT_THAT(first, IsOk());
        id = (*first)->paths().id;
    }
    SessionConfig c = config();
    c.resume = id;
    auto again = Session::open(std::move(c));
    ASSERT_THAT(again, IsOk());
    EXPECT_EQ((*again)->paths().id, id);
    EXPECT_THAT(read_all((*again)->paths().events), HasSubstr("\"SessionResumed\""));
}

}  // namespace
}  // namespace stockade::runner
