#include "runner/host/pod_backend.h"

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/testing/matchers.h"

namespace stockade::runner {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using std::chrono_literals::operator""ms;
using std::chrono_literals::operator""s;
using std::chrono_literals::operator""h;
using testing::HasErrc;
using ::testing::HasSubstr;
using testing::IsOk;

using SystemClock = std::chrono::system_clock;
using SteadyClock = std::chrono::steady_clock;

// The first host uid of the default range: as root, a tenant's root must be one of its own.
constexpr uid_t kDefaultRangeUid = 1879048193;

// A pod's backend on a fresh state directory and a workspace root for tenant "acme" (token
// "acme-token"); the operator's token is "admin". Its wall clock is `now_`.
class PodBackendTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/stockade-pod-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
        for (const char* sub : {"acme", "state"}) {
            fs::create_directory(dir_ / sub);
        }
        if (::geteuid() == 0) {
            ASSERT_EQ(::chown((dir_ / "acme").c_str(), kDefaultRangeUid, kDefaultRangeUid), 0);
        }
    }
    void TearDown() override {
        pod_.reset();
        fs::remove_all(dir_);
    }

    // Opens the pod; `bind_file`: its --bind-file, read every 20 ms.
    void open(const std::string& bind_file = "") {
        auto state = HostDir::open((dir_ / "state").string());
        ASSERT_THAT(state, IsOk());
        PodConfig config{.host = HostConfig{.state = *state, .admin = {sha256("admin")}},
                         .idle_ttl = 60s,
                         .bind_file = bind_file,
                         .poll = 20ms};
        config.announce = [this](const std::string& text) {
            announced_.push_back(text);
        };
        config.clock = [this] {
            return now_;
        };
        pod_ = PodBackend::open(std::move(config));
    }

    // A binding of acme with `fields` (each starting with a comma) added to the body.
    [[nodiscard]] std::string body(const std::string& fields = "",
                                   const std::string& name = "acme") const {
        return fmt::format(
            R"({{"tenant": {{"name": "{}", "token_sha256": ["{}"], "workspace_root": "{}",
                             "limits": {{"sessions": 2}}}}{}}})",
            name, token_hash_hex(name + "-token"), (dir_ / "acme").string(), fields);
    }

    Result<PodBackend::BindOutcome> bind(const std::string& text) {
        auto binding = parse_pod_binding(text);
        EXPECT_THAT(binding, IsOk()) << text;
        if (!binding) {
            return std::move(binding).error();
        }
        return pod_->bind(*binding, "the test");
    }

    // An admin request, as the server hands it on.
    mcp::AdminReply admin(std::string_view method, std::string_view path,
                          const std::string& request_body = "", mcp::ServerActivity activity = {}) {
        auto reply = pod_->admin(method, path, request_body, activity);
        EXPECT_TRUE(reply.has_value()) << path;
        return reply.value_or(mcp::AdminReply{});
    }

    // Waits (up to 5 s) until the pod is bound.
    bool wait_bound() {
        for (int i = 0; i < 500 && pod_->bound() == nullptr; ++i) {
            std::this_thread::sleep_for(10ms);
        }
        return pod_->bound() != nullptr;
    }

    fs::path dir_;
    std::unique_ptr<PodBackend> pod_;
    std::vector<std::string> announced_;
    SystemClock::time_point now_ = std::chrono::sys_days(std::chrono::year(2026) / 6 / 1);
};

TEST_F(PodBackendTest, AnUnboundPodIsReadyRefusesMcpAndNeverStops) {
    open();
    EXPECT_EQ(pod_->ready(), "ready, unbound");
    ASSERT_TRUE(pod_->unavailable().has_value());
    EXPECT_THAT(*pod_->unavailable(),
                HasSubstr("not bound to a tenant yet; the platform binds it with POST "
                          "/admin/bind"));
    EXPECT_EQ(pod_->authenticate(std::string("acme-token")), nullptr);
    EXPECT_EQ(pod_->stop_reason({.now = SteadyClock::now() + std::chrono::days(365)}),
              std::nullopt);
    EXPECT_THAT(pod_->metrics(), HasSubstr("\nstockade_pod_bound 0\n"));
    EXPECT_TRUE(pod_->is_admin(std::string("admin")));
    EXPECT_FALSE(pod_->is_admin(std::string("acme-token")));
    EXPECT_FALSE(pod_->is_admin(std::nullopt));
}

TEST_F(PodBackendTest, BindingServesTheTenantOnceAndTheSameBindingAgainIsNoChange) {
    open();
    ASSERT_THAT(bind(body()), IsOk());
    EXPECT_EQ(*bind(body()), PodBackend::BindOutcome::kAlreadyBound);
    EXPECT_EQ(pod_->ready(), "ready, bound to tenant acme");
    EXPECT_EQ(pod_->unavailable(), std::nullopt);
    const mcp::HttpTenant* tenant = pod_->authenticate(std::string("acme-token"));
    ASSERT_NE(tenant, nullptr);
    EXPECT_EQ(tenant->name, "acme");
    EXPECT_EQ(tenant->max_sessions, 2U) << "the binding's limits";
    EXPECT_EQ(pod_->authenticate(std::string("admin")), nullptr);
    EXPECT_EQ(pod_->authenticate(std::nullopt), nullptr);
    EXPECT_THAT(pod_->metrics(), HasSubstr("\nstockade_pod_bound 1\n"));
    ASSERT_EQ(pod_->usage().size(), 1U);
    EXPECT_EQ(pod_->usage()[0].tenant, "acme");
    EXPECT_EQ(announced_, std::vector<std::string>{"pod bound to tenant acme by the test"});
    // Its state lives where a tenants file's tenant's does.
    EXPECT_TRUE(fs::is_directory(dir_ / "state" / "tenants" / "acme"));
}

TEST_F(PodBackendTest, AnotherBindingOfABoundPodIsRefusedAndChangesNothing) {
    open();
    ASSERT_THAT(bind(body()), IsOk());
    auto other = bind(body("", "beta"));
    ASSERT_THAT(other, HasErrc(Errc::kAlreadyExists));
    EXPECT_THAT(other.error().message,
                HasSubstr("this pod is bound to tenant \"acme\" already, since "
                          "2026-06-01T00:00:00Z; a pod is bound once, to one tenant: claim "
                          "another pod for tenant \"beta\""));
    auto changed = bind(body(R"(, "expires": "2027-01-01")"));
    ASSERT_THAT(changed, HasErrc(Errc::kAlreadyExists));
    EXPECT_THAT(changed.error().message, HasSubstr("by another binding"));
    EXPECT_EQ(pod_->ready(), "ready, bound to tenant acme");
    EXPECT_EQ(pod_->authenticate(std::string("beta-token")), nullptr);
}

TEST_F(PodBackendTest, AWorkspaceRootThatCannotBeOpenedLeavesThePodUnboundToBindLater) {
    open();
    fs::remove(dir_ / "acme");
    auto refused = bind(body());
    ASSERT_THAT(refused, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(refused.error().message, HasSubstr("workspace root"));
    EXPECT_THAT(refused.error().message, HasSubstr("create it, or fix workspace_root"));
    EXPECT_EQ(pod_->bound(), nullptr);
    EXPECT_EQ(pod_->ready(), "ready, unbound");
    fs::create_directory(dir_ / "acme");
    if (::geteuid() == 0) {
        ASSERT_EQ(::chown((dir_ / "acme").c_str(), kDefaultRangeUid, kDefaultRangeUid), 0);
    }
    EXPECT_EQ(*bind(body()), PodBackend::BindOutcome::kBound);
}

TEST_F(PodBackendTest, AsRootTheWorkspaceRootMustBeTheTenants) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "the owner of a tenant's root is checked when serve runs as root";
    }
    open();
    ASSERT_EQ(::chown((dir_ / "acme").c_str(), 0, 0), 0);
    auto refused = bind(body());
    ASSERT_THAT(refused, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(refused.error().message, HasSubstr("owned by uid 0 (root)"));
    EXPECT_EQ(pod_->bound(), nullptr);
}

TEST_F(PodBackendTest, ABindingWhoseExpiresHasPassedIsRefused) {
    open();
    auto refused = bind(body(R"(, "expires": "2026-05-31T23:59:59Z")"));
    ASSERT_THAT(refused, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(refused.error().message,
                HasSubstr("expires: 2026-05-31T23:59:59Z has passed: the claim has ended"));
    EXPECT_EQ(pod_->bound(), nullptr);
}

TEST_F(PodBackendTest, ABoundPodStopsOnceIdlePastItsTtlButNotWhileASessionIsOpen) {
    open();
    ASSERT_THAT(bind(body()), IsOk());
    const auto bound = SteadyClock::now();
    EXPECT_EQ(pod_->stop_reason({.now = bound + 30s, .last_request = bound - 1h}), std::nullopt)
        << "idle from its binding on, not from the server's start";
    EXPECT_EQ(pod_->stop_reason({.now = bound + 2h, .sessions = 1, .last_request = bound}),
              std::nullopt)
        << "a session is open";
    EXPECT_EQ(pod_->stop_reason({.now = bound + 90s, .last_request = bound + 40s}), std::nullopt)
        << "a request 50 s ago";
    auto why = pod_->stop_reason({.now = bound + 120s, .last_request = bound + 40s});
    ASSERT_TRUE(why.has_value());
    EXPECT_THAT(*why, HasSubstr("pod of tenant acme idle: no session and no request for 8"));
    EXPECT_THAT(*why, HasSubstr("(--pod-idle-ttl 60 s)"));
}

TEST_F(PodBackendTest, ABoundPodStopsWhenItsBindingExpires) {
    open();
    ASSERT_THAT(bind(body(R"(, "expires": "2026-06-01T00:00:10Z")")), IsOk());
    const mcp::ServerActivity busy{.now = SteadyClock::now(), .sessions = 1};
    now_ += 9s;
    EXPECT_EQ(pod_->stop_reason(busy), std::nullopt);
    now_ += 1s;
    EXPECT_EQ(pod_->stop_reason(busy),
              "pod of tenant acme expired: its binding ended at 2026-06-01T00:00:10Z");
}

TEST_F(PodBackendTest, AdminBindAnswersWithTheStatusOrTheRefusalAndItsStatus) {
    open();
    const mcp::AdminReply bad = admin("POST", "/admin/bind", body(R"(, "expiry": "2027-01-01")"));
    EXPECT_EQ(bad.status, 400U);
    EXPECT_EQ(json::parse(bad.body),
              (json{{"error", "unknown key \"expiry\": the keys are tenant, expires"}}));
    EXPECT_EQ(admin("GET", "/admin/bind").status, 405U);
    const mcp::ServerActivity activity{.now = SteadyClock::now(), .sessions = 0};
    const mcp::AdminReply ok =
        admin("POST", "/admin/bind", body(R"(, "expires": "2026-12-31")"), activity);
    EXPECT_EQ(ok.status, 200U);
    EXPECT_EQ(ok.content_type, "application/json");
    const json status = {{"bound", true},
                         {"tenant", "acme"},
                         {"bound_at", "2026-06-01T00:00:00Z"},
                         {"expires", "2026-12-31T00:00:00Z"},
                         {"idle_seconds", 0},
                         {"idle_ttl_seconds", 60},
                         {"sessions", 0}};
    EXPECT_EQ(json::parse(ok.body), status);
    const mcp::AdminReply again =
        admin("POST", "/admin/bind", body(R"(, "expires": "2026-12-31")"), activity);
    EXPECT_EQ(again.status, 200U);
    EXPECT_EQ(json::parse(again.body), status);
    const mcp::AdminReply other = admin("POST", "/admin/bind", body("", "beta"), activity);
    EXPECT_EQ(other.status, 409U);
    EXPECT_THAT(json::parse(other.body).value("error", ""), HasSubstr("bound once"));
    EXPECT_EQ(json::parse(admin("GET", "/admin/pod", "", activity).body), status);
    EXPECT_EQ(pod_->admin("GET", "/admin/other", "", activity), std::nullopt);
}

TEST_F(PodBackendTest, AdminPodSaysWhatAnUnboundPodHasNot) {
    open();
    EXPECT_EQ(json::parse(admin("GET", "/admin/pod").body), (json{{"bound", false},
                                                                  {"tenant", nullptr},
                                                                  {"bound_at", nullptr},
                                                                  {"expires", nullptr},
                                                                  {"idle_seconds", nullptr},
                                                                  {"idle_ttl_seconds", 60},
                                                                  {"sessions", 0}}));
}

TEST_F(PodBackendTest, ADrainingPodTakesNoBinding) {
    open();
    const mcp::AdminReply reply =
        admin("POST", "/admin/bind", body(), {.now = SteadyClock::now(), .draining = true});
    EXPECT_EQ(reply.status, 503U);
    EXPECT_EQ(pod_->bound(), nullptr);
}

TEST_F(PodBackendTest, TheBindFileBindsThePodOnceItHoldsABinding) {
    const fs::path file = dir_ / "binding.json";
    open(file.string());
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(pod_->bound(), nullptr) << "no file: unbound";
    std::ofstream(file) << "";
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(pod_->bound(), nullptr) << "an empty file: unbound";
    std::ofstream(file) << body(R"(, "tenant_name": "x")");
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(pod_->bound(), nullptr) << "a refused binding: unbound";
    std::ofstream(file) << body();
    ASSERT_TRUE(wait_bound());
    EXPECT_EQ(pod_->ready(), "ready, bound to tenant acme");
    EXPECT_THAT(announced_.at(0),
                HasSubstr("pod bound to tenant acme by --bind-file " + file.string()));
    // Another binding later is refused; the pod stays its first tenant's.
    std::ofstream(file) << body("", "beta");
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(pod_->ready(), "ready, bound to tenant acme");
}

TEST_F(PodBackendTest, ABindFileWhoseWorkspaceRootIsMissingBindsOnceTheRootIsThere) {
    const fs::path file = dir_ / "binding.json";
    fs::remove(dir_ / "acme");
    std::ofstream(file) << body();
    open(file.string());
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(pod_->bound(), nullptr);
    fs::create_directory(dir_ / "acme");
    if (::geteuid() == 0) {
        ASSERT_EQ(::chown((dir_ / "acme").c_str(), kDefaultRangeUid, kDefaultRangeUid), 0);
    }
    ASSERT_TRUE(wait_bound()) << "the same file, read again";
}

TEST_F(PodBackendTest, TheBindFileIsFollowedThroughKubernetesSymlinkSwap) {
    // A mounted Secret: binding.json -> ..data/binding.json, ..data -> ..2026_06_01_v1; an
    // update writes a new timestamped directory and renames a new ..data link over the old one.
    const fs::path mount = dir_ / "mount";
    fs::create_directories(mount / "..v1");
    fs::create_directory_symlink("..v1", mount / "..data");
    fs::create_symlink("..data/binding.json", mount / "binding.json");
    open((mount / "binding.json").string());
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(pod_->bound(), nullptr) << "the key is not there yet";
    fs::create_directories(mount / "..v2");
    std::ofstream(mount / "..v2" / "binding.json") << body();
    fs::create_directory_symlink("..v2", mount / "..data_tmp");
    fs::rename(mount / "..data_tmp", mount / "..data");
    ASSERT_TRUE(wait_bound());
    EXPECT_EQ(pod_->ready(), "ready, bound to tenant acme");
}

TEST_F(PodBackendTest, ABindFileThereAtTheStartBindsThePodBeforeItServes) {
    const fs::path file = dir_ / "binding.json";
    std::ofstream(file) << body();
    open(file.string());
    EXPECT_NE(pod_->bound(), nullptr) << "bound by open(), with no wait";
}

}  // namespace
}  // namespace stockade::runner
