// The disk quota of tool output is a bound: a process that floods its log, in a session with a
// small --output-budget and in a tenant's sessions of `serve --http` with a small limits.disk,
// never takes the tool output on disk past the quota by more than one write (what the
// supervisor reads from a process at once, 128 KiB), while it runs nor when it ends and its
// log's tail is added. The HTTP sessions are driven with curl over a unix socket.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/testing/sandbox_harness.h"
#include "tests/testing/serve_client.h"

namespace stockade::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

constexpr uint64_t kOneWrite = uint64_t{128} << 10;
// Far more than any quota here: about 4 MB a second, for as long as it runs.
constexpr const char* kFlood = "while :; do seq 1 20000; sleep 0.02; done";

// The bytes of tool output beneath `dir` (every regular file in a tool-output directory), as
// `du --apparent-size` counts them, without the directories.
uint64_t tool_output_bytes(const std::string& dir) {
    uint64_t total = 0;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
         it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        if (ec) {
            break;
        }
        std::error_code size_ec;
        if (it->is_regular_file(size_ec) &&
            it->path().string().find("/tool-output/") != std::string::npos) {
            const uintmax_t size = it->file_size(size_ec);
            total += size_ec ? 0 : size;
        }
    }
    return total;
}

// The most tool output seen beneath `dir`, sampled every 20 ms for `how_long`.
uint64_t peak_tool_output(const std::string& dir, std::chrono::milliseconds how_long) {
    uint64_t peak = 0;
    const auto until = std::chrono::steady_clock::now() + how_long;
    while (std::chrono::steady_clock::now() < until) {
        peak = std::max(peak, tool_output_bytes(dir));
        std::this_thread::sleep_for(20ms);
    }
    return peak;
}

std::string process_id_in(const std::string& text) {
    std::smatch m;
    static const std::regex kId("\\b(p\\d+)\\b");
    return std::regex_search(text, m, kId) ? std::string(m[1]) : std::string();
}

// The log a process result names ("... log /state/.../p1.log").
std::string log_path_in(const std::string& text) {
    std::smatch m;
    static const std::regex kLog("(/\\S+/process-logs/p\\d+\\.log)");
    return std::regex_search(text, m, kLog) ? std::string(m[1]) : std::string();
}

TEST(QuotaTest, ASessionsOutputBudgetBoundsALogItsProcessFloods) {
    TempDir workspace("stockade-quota-ws");
    TempDir state("stockade-quota-state");
    constexpr uint64_t kBudget = uint64_t{1} << 20;
    ServeProcess serve(workspace.path(), state.path(), {"--output-budget", "1M"});
    ASSERT_TRUE(serve.initialize().contains("result"));
    const std::string started =
        text_of(serve.call("process", {{"action", "start"}, {"command", kFlood}}));
    const std::string id = process_id_in(started);
    ASSERT_FALSE(id.empty()) << started;
    EXPECT_LE(peak_tool_output(state.path(), 3s), kBudget + kOneWrite);
    const std::string stopped = text_of(serve.call("process", {{"action", "stop"}, {"id", id}}));
    EXPECT_THAT(stopped, HasSubstr("Stopped " + id)) << stopped;
    // Its log's end: the tail the supervisor held is added only where there is room for it.
    EXPECT_LE(peak_tool_output(state.path(), 1s), kBudget + kOneWrite);
    std::string stop_note;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(state.path())) {
        if (entry.path().filename() == id + ".log") {
            stop_note = read_file_text(entry.path()).value_or("");
        }
    }
    EXPECT_THAT(stop_note, HasSubstr("[stockade: this log stops here: the session's output "
                                     "budget (1.0 MB) is full"));
    // A bash command's flood: the result says what its log lacks.
    const std::string flooded = text_of(serve.call("bash", {{"command", "seq 1 1000000"}}));
    EXPECT_THAT(flooded, HasSubstr("Note: the full output's log lacks")) << flooded;
    EXPECT_THAT(flooded, HasSubstr("it keeps the start only")) << flooded;
    EXPECT_LE(tool_output_bytes(state.path()), kBudget + kOneWrite);
    serve.close_input();
    EXPECT_EQ(serve.wait_exit(20s), 0);
}

// One tenant's `serve --http` on a unix socket, and its MCP sessions, through curl.
class TenantQuotaTest : public ::testing::Test {
protected:
    static constexpr uint64_t kQuota = uint64_t{1} << 20;

    void SetUp() override {
        if (::access("/usr/bin/curl", X_OK) != 0) {
            GTEST_SKIP() << "curl is not installed (/usr/bin/curl): apt-get install curl";
        }
        RunConfig stdin_token;
        stdin_token.stdin_data = kToken;
        RunResult hashed = run_stockade({"token", "hash"}, stdin_token);
        ASSERT_EQ(hashed.exit_code, 0) << hashed.describe();
        std::string hash = hashed.out.substr(0, hashed.out.find('\n'));
        const std::string root = dir_.make_dir("small");
        nlohmann::json tenant = {{"name", "small"},
                                 {"token_sha256", {hash}},
                                 {"workspace_root", root},
                                 {"limits", {{"sessions", 4}, {"disk", "1M"}}}};
        if (running_as_root()) {
            // The tenant's root belongs to one of its own uids, as serve wants it.
            tenant["host_uid_range"] = "1500400000-1500465535";
            ASSERT_EQ(::chown(root.c_str(), 1500400000, 1500400000), 0);
        }
        const std::string tenants =
            dir_.write_file("tenants.json", nlohmann::json({{"tenants", {tenant}}}).dump());
        socket_ = dir_.sub("serve.sock");
        RunConfig config;
        config.env = {"STOCKADE_STATE_DIR=" + dir_.make_dir("state")};
        config.timeout = 240s;
        serve_.emplace(start_stockade(
            {"serve", "--http", "unix:" + socket_, "--tenants", tenants, "--no-user-settings"},
            config));
        ASSERT_TRUE(serve_->running());
        for (int i = 0; i < 500 && !std::filesystem::exists(socket_); ++i) {
            std::this_thread::sleep_for(20ms);
        }
        ASSERT_TRUE(std::filesystem::exists(socket_)) << "serve --http did not listen";
    }
    void TearDown() override {
        if (serve_ && serve_->running()) {
            EXPECT_TRUE(serve_->signal(SIGTERM));
            const RunResult done = serve_->wait();
            EXPECT_EQ(done.exit_code, 0) << done.describe();
        }
    }

    struct Reply {
        int status = 0;
        std::string session;     // its Mcp-Session-Id
        nlohmann::json message;  // the JSON-RPC message, from JSON or the SSE stream
    };
    // POSTs `body` to /mcp (in `session` when not empty).
    Reply post(const nlohmann::json& body, const std::string& session = "") {
        std::vector<std::string> argv = {"/usr/bin/curl",
                                         "-sS",
                                         "-D",
                                         "-",
                                         "--unix-socket",
                                         socket_,
                                         "-H",
                                         std::string("Authorization: Bearer ") + kToken,
                                         "-H",
                                         "Content-Type: application/json",
                                         "-H",
                                         "Accept: application/json, text/event-stream",
                                         "--data-binary",
                                         "@-"};
        if (!session.empty()) {
            argv.insert(argv.end(), {"-H", "Mcp-Session-Id: " + session});
        }
        argv.emplace_back("http://localhost/mcp");
        RunConfig config;
        config.stdin_data = body.dump();
        config.timeout = 90s;
        const RunResult done = run_process(argv, config);
        EXPECT_EQ(done.exit_code, 0) << done.describe();
        Reply reply;
        std::smatch m;
        if (std::regex_search(done.out, m, std::regex("^HTTP/[0-9.]+ (\\d+)"))) {
            reply.status = std::stoi(m[1]);
        }
        if (std::regex_search(done.out, m, std::regex("[Mm]cp-[Ss]ession-[Ii]d: *([0-9a-f]+)"))) {
            reply.session = m[1];
        }
        const size_t body_at = done.out.find("\r\n\r\n");
        const std::string text = body_at == std::string::npos ? "" : done.out.substr(body_at + 4);
        for (const std::string& line : split_lines(text)) {
            const std::string data = line.starts_with("data:") ? line.substr(5) : line;
            auto parsed = nlohmann::json::parse(data, nullptr, false);
            if (parsed.is_object() && (parsed.contains("result") || parsed.contains("error"))) {
                reply.message = std::move(parsed);
            }
        }
        return reply;
    }
    // A new session, initialized: its id.
    std::string open_session() {
        const Reply init = post({{"jsonrpc", "2.0"},
                                 {"id", 1},
                                 {"method", "initialize"},
                                 {"params",
                                  {{"protocolVersion", "2025-11-25"},
                                   {"capabilities", nlohmann::json::object()},
                                   {"clientInfo", {{"name", "quota-test"}, {"version", "0"}}}}}});
        EXPECT_EQ(init.status, 200) << init.message.dump();
        EXPECT_FALSE(init.session.empty());
        (void)post({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, init.session);
        return init.session;
    }
    std::string call(const std::string& session, const std::string& tool,
                     nlohmann::json arguments) {
        const Reply reply =
            post({{"jsonrpc", "2.0"},
                  {"id", ++calls_},
                  {"method", "tools/call"},
                  {"params", {{"name", tool}, {"arguments", std::move(arguments)}}}},
                 session);
        return text_of(reply.message);
    }
    void end_session(const std::string& session) {
        const RunResult done = run_process(
            {"/usr/bin/curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "DELETE",
             "--unix-socket", socket_, "-H", std::string("Authorization: Bearer ") + kToken, "-H",
             "Mcp-Session-Id: " + session, "http://localhost/mcp"});
        EXPECT_EQ(done.out, "204") << done.describe();
    }
    [[nodiscard]] std::string tenant_state() const { return dir_.sub("state/tenants/small"); }
    // Where a path a result names under /stockade/tool-output (a tenant sees no server path)
    // is on the host: in the one session of the tenant's state that has it; "" unless one has.
    [[nodiscard]] std::string host_path(const std::string& inside) const {
        const std::string prefix = "/stockade/tool-output/";
        if (inside.rfind(prefix, 0) != 0) {
            ADD_FAILURE() << inside << " is not under " << prefix;
            return "";
        }
        std::vector<std::string> found;
        std::error_code ec;
        for (const auto& session :
             std::filesystem::directory_iterator(tenant_state() + "/sessions", ec)) {
            const auto candidate = session.path() / "tool-output" / inside.substr(prefix.size());
            if (std::filesystem::exists(candidate)) {
                found.push_back(candidate.string());
            }
        }
        return found.size() == 1 ? found.front() : "";
    }

    static constexpr const char* kToken =
        "quota-test-token-0123456789abcdef0123456789abcdef0123456789abcdef";
    TempDir dir_{"stockade-tenant-quota"};
    std::string socket_;
    std::optional<ChildProcess> serve_;
    int calls_ = 1;
};

TEST_F(TenantQuotaTest, ATenantsToolOutputStaysWithinItsQuotaWhileAProcessFloodsItsLog) {
    const std::string first = open_session();
    const std::string started = call(first, "process", {{"action", "start"}, {"command", kFlood}});
    const std::string id = process_id_in(started);
    ASSERT_FALSE(id.empty()) << started;
    EXPECT_LE(peak_tool_output(tenant_state(), 3s), kQuota + kOneWrite);
    EXPECT_THAT(call(first, "process", {{"action", "stop"}, {"id", id}}), HasSubstr("Stopped"));
    EXPECT_LE(peak_tool_output(tenant_state(), 1s), kQuota + kOneWrite);

    const std::string first_log = host_path(log_path_in(started));
    ASSERT_TRUE(std::filesystem::exists(first_log)) << started;

    // Another session while the first is open: nothing of an open session is reclaimed, so the
    // log of its command has no room at all, and its result says so.
    const std::string second = open_session();
    const std::string bash = call(second, "bash", {{"command", "seq 1 300000"}});
    EXPECT_THAT(bash, HasSubstr("Note: the full output's log holds none of it")) << bash;
    EXPECT_LE(tool_output_bytes(tenant_state()), kQuota + kOneWrite);
    // Once the first has ended, its output makes room for the second's.
    end_session(first);
    const std::string again = call(second, "process", {{"action", "start"}, {"command", kFlood}});
    const std::string again_id = process_id_in(again);
    ASSERT_FALSE(again_id.empty()) << again;
    EXPECT_LE(peak_tool_output(tenant_state(), 3s), kQuota + kOneWrite);
    EXPECT_THAT(call(second, "process", {{"action", "stop"}, {"id", again_id}}),
                HasSubstr("Stopped"));
    EXPECT_LE(peak_tool_output(tenant_state(), 1s), kQuota + kOneWrite);
    EXPECT_FALSE(std::filesystem::exists(first_log)) << "reclaimed for the second session";
    const std::string second_log = host_path(log_path_in(again));
    ASSERT_TRUE(std::filesystem::exists(second_log)) << again;
    EXPECT_GT(std::filesystem::file_size(second_log), kQuota / 2);
    end_session(second);
}

}  // namespace
}  // namespace stockade::testing
