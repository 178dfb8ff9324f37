#include "runner/mcp/http_sessions.h"

#include <chrono>
#include <memory>
#include <string>

#include <gtest/gtest.h>

namespace stockade::mcp {
namespace {

using namespace std::chrono_literals;

class SessionTableTest : public ::testing::Test {
protected:
    // A session of `tenant`, opened.
    std::shared_ptr<McpSession> open(const HttpTenant& tenant) {
        auto reserved = table_.reserve(tenant, false);
        EXPECT_TRUE(reserved.opener);
        if (!reserved.slot) {
            return nullptr;
        }
        table_.opened(*reserved.slot, ok_status());
        return reserved.slot->session;
    }

    HttpTenant acme_{.name = "acme", .max_sessions = 2};
    HttpTenant other_{.name = "other"};
    HttpOptions options_;
    Metrics metrics_;
    SessionTable table_{options_, metrics_};
};

TEST_F(SessionTableTest, ASessionIsFoundByItsIdOnceOpen) {
    auto reserved = table_.reserve(acme_, false);
    ASSERT_NE(reserved.slot, nullptr);
    const std::string id = reserved.slot->session->id;
    EXPECT_TRUE(http::is_session_id(id));
    EXPECT_EQ(table_.find(id, acme_), nullptr) << "not open yet";
    table_.opened(*reserved.slot, ok_status());
    EXPECT_EQ(table_.find(id, acme_), reserved.slot->session);
    EXPECT_EQ(table_.open_sessions().size(), 1U);
}

TEST_F(SessionTableTest, AnotherTenantsSessionIdFindsNothing) {
    auto session = open(acme_);
    ASSERT_NE(session, nullptr);
    EXPECT_EQ(table_.find(session->id, other_), nullptr);
    HttpTenant same_name_other_tenant{.name = "acme"};
    EXPECT_EQ(table_.find(session->id, same_name_other_tenant), nullptr)
        << "a tenant is who the backend authenticated, not a name";
    EXPECT_EQ(table_.find_any(session->id), session) << "the operator finds any";
}

TEST_F(SessionTableTest, AnIdOfAnotherShapeOrUnknownFindsNothing) {
    (void)open(acme_);
    EXPECT_EQ(table_.find("", acme_), nullptr);
    EXPECT_EQ(table_.find("../etc", acme_), nullptr);
    EXPECT_EQ(table_.find(http::new_session_id(), acme_), nullptr);
}

TEST_F(SessionTableTest, MaxSessionsRefusesTheNextUntilOneIsForgotten) {
    auto first = open(acme_);
    auto second = open(acme_);
    ASSERT_NE(second, nullptr);
    const auto refused = table_.reserve(acme_, false);
    EXPECT_EQ(refused.slot, nullptr);
    EXPECT_EQ(refused.open, 2U);
    EXPECT_NE(open(other_), nullptr) << "tenants are counted apart";
    table_.forget(*first);
    EXPECT_EQ(table_.find(first->id, acme_), nullptr);
    EXPECT_NE(table_.reserve(acme_, false).slot, nullptr);
}

TEST_F(SessionTableTest, ASessionThatFailsToOpenLeavesWithItsStatus) {
    const struct {
        Errc code;
        unsigned status;
    } cases[] = {{Errc::kInvalidArgument, 400},
                 {Errc::kNotFound, 400},
                 {Errc::kResourceExhausted, 429},
                 {Errc::kUnavailable, 503},
                 {Errc::kInternal, 503}};
    for (const auto& c : cases) {
        auto reserved = table_.reserve(acme_, false);
        ASSERT_NE(reserved.slot, nullptr);
        table_.opened(*reserved.slot, Error{c.code, "no sandbox"});
        EXPECT_TRUE(reserved.slot->ready);
        EXPECT_EQ(reserved.slot->status, c.status);
        EXPECT_EQ(reserved.slot->error, "no sandbox");
        EXPECT_EQ(table_.find(reserved.slot->session->id, acme_), nullptr);
    }
    EXPECT_TRUE(table_.open_sessions().empty());
    EXPECT_EQ(table_.gauges()["acme"].sessions, 0U) << "failures are not counted";
}

TEST_F(SessionTableTest, TheSharedSessionIsOpenedOnceAndItsWaitersWoken) {
    auto first = table_.reserve(acme_, true);
    ASSERT_TRUE(first.opener);
    auto second = table_.reserve(acme_, true);
    EXPECT_FALSE(second.opener);
    EXPECT_EQ(second.slot, first.slot);
    int woken = 0;
    EXPECT_FALSE(table_.ready_or_wait(*second.slot, [&woken] { ++woken; }));
    table_.opened(*first.slot, ok_status());
    EXPECT_EQ(woken, 1);
    EXPECT_TRUE(table_.ready_or_wait(*second.slot, [&woken] { ++woken; }));
    EXPECT_EQ(woken, 1);
    table_.forget(*first.slot->session);
    EXPECT_TRUE(table_.reserve(acme_, true).opener) << "a new shared session once it ended";
}

TEST_F(SessionTableTest, AnIdleSessionIsDueAfterItsIdleTtl) {
    acme_.idle_ttl = 10s;
    auto session = open(acme_);
    ASSERT_NE(session, nullptr);
    const auto now = SessionTable::Clock::now();
    EXPECT_TRUE(table_.due(now).empty());
    EXPECT_TRUE(table_.due(now + 9s).empty());
    const auto due = table_.due(now + 11s);
    ASSERT_EQ(due.size(), 1U);
    EXPECT_EQ(due[0].session, session);
    EXPECT_FALSE(due[0].expired);
    session->touch();
    EXPECT_TRUE(table_.due(SessionTable::Clock::now() + 9s).empty()) << "used again";
}

TEST_F(SessionTableTest, ASessionIsDueAtItsMaxLifetimeEvenWhenUsedJustNow) {
    acme_.idle_ttl = 1000s;
    acme_.max_lifetime = 60s;
    auto session = open(acme_);
    ASSERT_NE(session, nullptr);
    const auto later = SessionTable::Clock::now() + 61s;
    session->last_used.store(later.time_since_epoch().count());
    const auto due = table_.due(later);
    ASSERT_EQ(due.size(), 1U);
    EXPECT_TRUE(due[0].expired);
}

TEST_F(SessionTableTest, CallsPerSecondIsATokenBucket) {
    acme_.calls_per_second = 2;
    const auto start = SessionTable::Clock::now();
    EXPECT_EQ(table_.take_call_token(acme_, start), std::nullopt);
    EXPECT_EQ(table_.take_call_token(acme_, start), std::nullopt) << "a burst of 2";
    EXPECT_EQ(table_.take_call_token(acme_, start), 1L);
    EXPECT_EQ(table_.take_call_token(acme_, start + 500ms), std::nullopt) << "refilled";
    EXPECT_EQ(table_.take_call_token(acme_, start + 500ms), 1L);
    for (int i = 0; i < 10; ++i) {
        EXPECT_EQ(table_.take_call_token(other_, start), std::nullopt) << "0: unlimited";
    }
}

TEST_F(SessionTableTest, GaugesCountSessionsBeingOpened) {
    (void)open(acme_);
    (void)table_.reserve(acme_, false);  // being opened
    (void)open(other_);
    auto gauges = table_.gauges();
    EXPECT_EQ(gauges["acme"].sessions, 2U);
    EXPECT_EQ(gauges["other"].sessions, 1U);
    EXPECT_EQ(gauges["acme"].calls, 0U);
}

}  // namespace
}  // namespace stockade::mcp
