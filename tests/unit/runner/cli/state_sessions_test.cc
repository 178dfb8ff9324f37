#include "runner/cli/state_sessions.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/unique_fd.h"
#include "tests/testing/fd_leak_checker.h"
#include "tests/testing/matchers.h"

namespace stockade::runner {
namespace {

using nlohmann::json;
using testing::HasErrc;
using ::testing::HasSubstr;
using testing::IsOk;
using ::testing::Not;

constexpr const char* kMcpId = "5be1c0a4d2e9f7a6b3c8d1e0f9a2b7c4d3e6f1a8b5c2d9e4f7a0b3c6d1e8f5a2";

std::string event_line(const std::string& type, json fields, const std::string& ts) {
    fields["v"] = 1;
    fields["type"] = type;
    fields["ts"] = ts;
    return fields.dump() + "\n";
}

class StateSessionsTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/stockade-log-state-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        state_ = tmpl;
    }
    void TearDown() override { std::filesystem::remove_all(state_); }

    // A session directory beneath the state directory with `lines` as its events.jsonl.
    std::string add_session(const std::string& relative_dir, const std::string& lines,
                            mode_t mode = 0600) {
        const std::string dir = state_ + "/" + relative_dir;
        std::filesystem::create_directories(dir);
        const std::string path = dir + "/events.jsonl";
        std::ofstream(path) << lines;
        ::chmod(path.c_str(), mode);
        return dir;
    }

    void add_usual_sessions() {
        add_session(
            "sessions/s-00000000000a",
            event_line("SessionStarted", {{"workspace", "/w/one"}}, "2026-12-04T10:00:00.000Z") +
                event_line("ToolRequested", {{"call", "1"}, {"tool", "read"}},
                           "2026-12-04T10:00:01.000Z") +
                event_line("ToolRequested", {{"call", "2"}, {"tool", "bash"}},
                           "2026-12-04T10:00:02.000Z") +
                event_line("SessionEnded", json::object(), "2026-12-04T10:05:00.000Z"));
        add_session(
            "tenants/alpha/sessions/s-00000000000b",
            event_line(
                "SessionStarted",
                {{"workspace", "/srv/alpha/api"}, {"mcp_session", kMcpId}, {"tenant", "alpha"}},
                "2026-12-04T09:00:00.000Z") +
                event_line("ToolRequested", {{"call", "1"}, {"tool", "read"}},
                           "2026-12-04T09:30:00.000Z"));
    }

    std::string state_;
    testing::FdLeakChecker fd_leak_checker_;
};

TEST_F(StateSessionsTest, ListsLocalAndTenantsSessionsOldestFirst) {
    add_usual_sessions();
    auto state = StateSessions::open(state_);
    ASSERT_THAT(state, IsOk());
    const std::vector<SessionSummary> sessions = state->list();
    ASSERT_EQ(sessions.size(), 2U);
    const SessionSummary& tenant = sessions[0];
    EXPECT_EQ(tenant.id, "s-00000000000b");
    EXPECT_EQ(tenant.tenant, "alpha");
    EXPECT_EQ(tenant.mcp_session, kMcpId);
    EXPECT_EQ(tenant.workspace, "/srv/alpha/api");
    EXPECT_EQ(tenant.calls, 1U);
    EXPECT_FALSE(tenant.ended);
    EXPECT_FALSE(tenant.running);
    EXPECT_FALSE(tenant.resumable) << "serve --resume does not look in tenants/";
    const SessionSummary& local = sessions[1];
    EXPECT_EQ(local.id, "s-00000000000a");
    EXPECT_EQ(local.tenant, "");
    EXPECT_EQ(local.started, "2026-12-04T10:00:00.000Z");
    EXPECT_EQ(local.last_activity, "2026-12-04T10:05:00.000Z");
    EXPECT_EQ(local.calls, 2U);
    EXPECT_TRUE(local.ended);
    EXPECT_TRUE(local.resumable);
    EXPECT_EQ(format_session_table(sessions),
              "ID              TENANT  MCP-SESSION   WORKSPACE       STARTED (UTC)        LAST "
              "ACTIVITY        CALLS  STATE\n"
              "s-00000000000b  alpha   5be1c0a4d2e9  /srv/alpha/api  2026-12-04 09:00:00  "
              "2026-12-04 09:30:00  1      ended\n"
              "s-00000000000a  -       -             /w/one          2026-12-04 10:00:00  "
              "2026-12-04 10:05:00  2      resumable\n");
    const json listed = session_list_json(sessions);
    ASSERT_EQ(listed.size(), 2U);
    EXPECT_EQ(listed[1]["tenant"], nullptr);
    EXPECT_EQ(listed[1]["mcp_session"], nullptr);
    EXPECT_EQ(listed[1]["resumable"], true);
    EXPECT_EQ(listed[0]["mcp_session"], kMcpId);
}

TEST_F(StateSessionsTest, ASessionAStockadeProcessHoldsIsRunningAndNotResumable) {
    add_usual_sessions();
    const UniqueFd dir(
        ::open((state_ + "/sessions/s-00000000000a").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(dir);
    ASSERT_EQ(::flock(dir.get(), LOCK_EX | LOCK_NB), 0);  // as open_session_dir does
    auto state = StateSessions::open(state_);
    ASSERT_THAT(state, IsOk());
    const auto sessions = state->list();
    ASSERT_EQ(sessions.size(), 2U);
    EXPECT_TRUE(sessions[1].running);
    EXPECT_FALSE(sessions[1].resumable);
    EXPECT_THAT(format_session_table(sessions), HasSubstr("running\n"));
}

TEST_F(StateSessionsTest, FindsASessionByItsIdItsMcpIdOrAUniquePrefix) {
    add_usual_sessions();
    auto state = StateSessions::open(state_);
    ASSERT_THAT(state, IsOk());
    for (const std::string& key : {std::string("s-00000000000b"), std::string(kMcpId),
                                   std::string("5be1c0a4d2e9"), std::string("s-00000000000")}) {
        auto found = state->find(key);
        if (key == "s-00000000000") {
            ASSERT_THAT(found, HasErrc(Errc::kFailedPrecondition)) << key;
            EXPECT_THAT(found.error().message, HasSubstr("s-00000000000a, s-00000000000b"));
            continue;
        }
        ASSERT_THAT(found, IsOk()) << key;
        EXPECT_EQ(found->id, "s-00000000000b") << key;
        EXPECT_EQ(found->tenant, "alpha") << key;
        EXPECT_TRUE(found->dir_fd) << key;
        EXPECT_EQ(found->dir, state->path() + "/tenants/alpha/sessions/s-00000000000b");
    }
}

TEST_F(StateSessionsTest, AnUnknownSessionListsWhatThereIs) {
    add_usual_sessions();
    auto state = StateSessions::open(state_);
    ASSERT_THAT(state, IsOk());
    auto found = state->find("s-ffffffffffff");
    ASSERT_THAT(found, HasErrc(Errc::kNotFound));
    EXPECT_THAT(found.error().message,
                HasSubstr("the most recent there: s-00000000000a, s-00000000000b (tenant "
                          "alpha). Run `stockade log` to list them all"));
    EXPECT_THAT(state->find("s-0"), HasErrc(Errc::kNotFound)) << "a prefix under 4 characters";
    for (const char* bad : {"../sessions/s-00000000000a", "s-a/..", "", "a b", "\x1b[2J"}) {
        auto invalid = state->find(bad);
        ASSERT_THAT(invalid, HasErrc(Errc::kInvalidArgument)) << bad;
        EXPECT_THAT(invalid.error().message, Not(HasSubstr("\x1b")));
    }
}

TEST_F(StateSessionsTest, AnEmptyOrMissingStateDirectorySaysWhatToDo) {
    auto empty = StateSessions::open(state_);
    ASSERT_THAT(empty, IsOk());
    EXPECT_TRUE(empty->list().empty());
    auto found = empty->find("s-00000000000a");
    ASSERT_THAT(found, HasErrc(Errc::kNotFound));
    EXPECT_THAT(found.error().message, HasSubstr("holds no sessions"));
    auto missing = StateSessions::open(state_ + "/nope");
    ASSERT_THAT(missing, HasErrc(Errc::kNotFound));
    EXPECT_THAT(missing.error().message, HasSubstr("--state-dir"));
}

TEST_F(StateSessionsTest, NeverFollowsALinkAndSkipsWhatIsNotASession) {
    add_usual_sessions();
    // Elsewhere: a session directory the links below point at.
    const std::string outside = add_session(
        "../" + std::filesystem::path(state_).filename().string() + "-outside/s-0000000000ff",
        event_line("SessionStarted", {{"workspace", "/elsewhere"}}, "2026-12-04T08:00:00Z"));
    std::filesystem::create_directory_symlink(outside, state_ + "/sessions/s-0000000000ee");
    std::filesystem::create_directory_symlink(std::filesystem::path(outside).parent_path(),
                                              state_ + "/tenants/beta");
    std::ofstream(state_ + "/sessions/README") << "not a session\n";
    std::filesystem::create_directories(state_ + "/tenants/Not.A.Tenant/sessions/s-000000000001");
    // A log with a symlink for events.jsonl, and one others may write.
    std::filesystem::create_directories(state_ + "/sessions/s-000000000002");
    std::filesystem::create_symlink(outside + "/events.jsonl",
                                    state_ + "/sessions/s-000000000002/events.jsonl");
    add_session("sessions/s-000000000003",
                event_line("SessionStarted", json::object(), "2026-12-04T07:00:00Z"), 0666);

    auto state = StateSessions::open(state_);
    ASSERT_THAT(state, IsOk());
    std::size_t skipped = 0;
    const auto sessions = state->list(&skipped);
    EXPECT_EQ(skipped, 4U) << "the link, the file, the link to a tenant, the tenant's bad name";
    std::vector<std::string> ids;
    for (const auto& s : sessions) {
        ids.push_back(s.id);
        EXPECT_NE(s.workspace, "/elsewhere") << s.id;
    }
    EXPECT_THAT(ids, ::testing::UnorderedElementsAre("s-00000000000a", "s-00000000000b",
                                                     "s-000000000002", "s-000000000003"));
    for (const auto& s : sessions) {
        if (s.id == "s-000000000002") {
            EXPECT_THAT(s.problem, HasSubstr("symlink")) << s.problem;
        }
        if (s.id == "s-000000000003") {
            EXPECT_THAT(s.problem, HasSubstr("refusing")) << s.problem;
            EXPECT_FALSE(s.resumable);
        }
    }
    EXPECT_THAT(state->find("s-0000000000ee"), HasErrc(Errc::kNotFound));
    std::filesystem::remove_all(std::filesystem::path(outside).parent_path());
}

TEST(SummarizeEventsTest, CountsRequestedCallsAndReadsTheFirstStart) {
    SessionSummary summary;
    summarize_events({json{{"type", "PolicyLoaded"}, {"ts", "t0"}},
                      json{{"type", "SessionStarted"}, {"ts", "t1"}, {"workspace", "/a"}},
                      json{{"type", "ToolRequested"}, {"ts", "t2"}},
                      json{{"type", "SessionEnded"}, {"ts", "t3"}},
                      json{{"type", "SessionResumed"}, {"ts", "t4"}},
                      json{{"type", "ToolRequested"}, {"ts", "t5"}}},
                     summary);
    EXPECT_EQ(summary.started, "t0");
    EXPECT_EQ(summary.last_activity, "t5");
    EXPECT_EQ(summary.workspace, "/a");
    EXPECT_EQ(summary.calls, 2U);
    EXPECT_FALSE(summary.ended);
}

TEST(ValidTenantNameTest, IsTheTenantsFilesRule) {
    for (const char* good : {"alpha", "a", "team-2", "x_y", "0abc"}) {
        EXPECT_TRUE(valid_tenant_name(good)) << good;
    }
    for (const char* bad : {"", ".", "..", "Alpha", "-a", "_a", "a.b", "a/b", "a b"}) {
        EXPECT_FALSE(valid_tenant_name(bad)) << bad;
    }
    EXPECT_TRUE(valid_tenant_name(std::string(63, 'a')));
    EXPECT_FALSE(valid_tenant_name(std::string(64, 'a')));
}

TEST(FormatSessionTableTest, EmptyForNoSessionsAndSafeForTheTerminal) {
    EXPECT_EQ(format_session_table({}), "");
    SessionSummary odd{.id = "s-1", .workspace = "/w/\x1b]0;x\x07", .problem = "bad"};
    EXPECT_THAT(format_session_table({odd}), HasSubstr("/w/?]0;x?  -"));
    EXPECT_THAT(format_session_table({odd}), HasSubstr("unreadable\n"));
}

}  // namespace
}  // namespace stockade::runner
