#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "runner/mcp/server.h"
#include "tests/testing/fd_leak_checker.h"
#include "tests/testing/matchers.h"

namespace stockade::mcp {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using testing::IsOk;

// Tools: echo (text back, structured length), fail (isError), block (waits for its stop
// token), progress (three reports, one of them repeated), vanish (listed, but the host then
// says it does not exist).
class FakeHost : public ToolHost {
public:
    std::vector<ToolInfo> list_tools() override {
        return {
            ToolInfo{.name = "echo",
                     .title = "Echo",
                     .description = "Returns its text.",
                     .input_schema = {{"type", "object"},
                                      {"properties", {{"text", {{"type", "string"}}}}},
                                      {"required", {"text"}}},
                     .output_schema = nullptr,
                     .annotations = {.read_only_hint = true,
                                     .destructive_hint = std::nullopt,
                                     .idempotent_hint = true,
                                     .open_world_hint = false}},
            ToolInfo{.name = "fail",
                     .title = "",
                     .description = "Always fails.",
                     .input_schema = json::object(),
                     .output_schema = nullptr,
                     .annotations = {.read_only_hint = false,
                                     .destructive_hint = true,
                                     .idempotent_hint = std::nullopt,
                                     .open_world_hint = std::nullopt}},
            ToolInfo{.name = "block",
                     .title = "",
                     .description = "Waits until cancelled.",
                     .input_schema = {{"type", "object"}, {"additionalProperties", true}},
                     .output_schema = nullptr,
                     .annotations = {}},
            ToolInfo{.name = "progress",
                     .title = "",
                     .description = "Reports progress.",
                     .input_schema = json::object(),
                     .output_schema = nullptr,
                     .annotations = {}},
            ToolInfo{.name = "vanish",
                     .title = "",
                     .description = "Listed, then unknown.",
                     .input_schema = json::object(),
                     .output_schema = nullptr,
                     .annotations = {}},
        };
    }

    ToolCallResult call_tool(const std::string& name, const json& arguments,
                             const CallInfo& info) override {
        sigset_t mask;
        if (::pthread_sigmask(SIG_BLOCK, nullptr, &mask) == 0 && sigismember(&mask, SIGPIPE) == 1) {
            sigpipe_blocked_in_a_tool_ = true;
        }
        if (name == "echo") {
            auto text = arguments.find("text");
            if (text == arguments.end() || !text->is_string()) {
                return {.text = "echo needs a string argument \"text\".",
                        .is_error = true,
                        .structured = nullptr,
                        .unknown_tool = false};
            }
            const auto& s = text->get_ref<const std::string&>();
            return {.text = s,
                    .is_error = false,
                    .structured = {{"length", s.size()}},
                    .unknown_tool = false};
        }
        if (name == "fail") {
            return {.text = "The tool failed on purpose.",
                    .is_error = true,
                    .structured = nullptr,
                    .unknown_tool = false};
        }
        if (name == "block") {
            {
                std::lock_guard lock(mu_);
                started_.push_back(info.request_id);
            }
            cv_.notify_all();
            std::mutex m;
            std::condition_variable_any wait_cv;
            std::unique_lock lock(m);
            wait_cv.wait(lock, info.stop, [] { return false; });
            ++stopped_;
            return {.text = "unblocked",
                    .is_error = false,
                    .structured = nullptr,
                    .unknown_tool = false};
        }
        if (name == "progress") {
            info.progress(1, 3, "one");
            info.progress(1, 3, "one again");  // not an increase: dropped
            info.progress(2, 3, "");
            info.progress(3, std::nullopt, "three");
            return {
                .text = "done", .is_error = false, .structured = nullptr, .unknown_tool = false};
        }
        return {.text = "", .is_error = false, .structured = nullptr, .unknown_tool = true};
    }

    // Waits until `count` block calls have started; returns their ids in start order.
    std::vector<std::string> wait_started(std::size_t count) {
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, 5s, [&] { return started_.size() >= count; });
        return started_;
    }
    int stopped() const { return stopped_.load(); }
    bool sigpipe_blocked_in_a_tool() const { return sigpipe_blocked_in_a_tool_.load(); }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<std::string> started_;
    std::atomic<int> stopped_{0};
    std::atomic<bool> sigpipe_blocked_in_a_tool_{false};
};

// Runs an McpServer on two pipes and plays the client.
class McpServerTest : public ::testing::Test {
protected:
    void start(ServerOptions options = {}) {
        options.version = "1.2.3";
        server_.emplace(host_, std::move(options));
        int in[2];
        int out[2];
        ASSERT_EQ(::pipe2(in, O_CLOEXEC), 0);
        ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
        server_in_.reset(in[0]);
        client_out_.reset(in[1]);
        client_in_.reset(out[0]);
        server_out_.reset(out[1]);
        run_ = std::async(std::launch::async,
                          [this] { return server_->run(server_in_.get(), server_out_.get()); });
    }

    void TearDown() override {
        client_out_.reset();
        if (run_.valid()) {
            ASSERT_EQ(run_.wait_for(10s), std::future_status::ready) << "server did not stop";
            EXPECT_THAT(run_.get(), IsOk());
        }
        server_.reset();
        server_in_.reset();
        server_out_.reset();
        client_in_.reset();
    }

    void send_raw(const std::string& bytes) {
        std::string_view rest = bytes;
        while (!rest.empty()) {
            ssize_t n = ::write(client_out_.get(), rest.data(), rest.size());
            ASSERT_GT(n, 0);
            rest.remove_prefix(static_cast<std::size_t>(n));
        }
    }
    void send(const json& message) { send_raw(message.dump() + "\n"); }

    void request(const json& id, const std::string& method, json params = nullptr) {
        json message = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
        if (!params.is_null()) {
            message["params"] = std::move(params);
        }
        send(message);
    }
    void notify(const std::string& method, json params) {
        send({{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
    }

    // The next line the server writes, parsed; null after the timeout.
    json next(std::chrono::milliseconds timeout = 5s) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
                std::string line = buffer_.substr(0, nl);
                buffer_.erase(0, nl + 1);
                return json::parse(line);
            }
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            if (left <= 0ms) {
                return nullptr;
            }
            pollfd pfd{.fd = client_in_.get(), .events = POLLIN, .revents = 0};
            if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) {
                continue;
            }
            char chunk[65536];
            ssize_t n = ::read(client_in_.get(), chunk, sizeof chunk);
            if (n <= 0) {
                return nullptr;
            }
            buffer_.append(chunk, static_cast<std::size_t>(n));
        }
    }

    json call(const json& id, const std::string& name, json arguments = json::object()) {
        request(id, "tools/call", {{"name", name}, {"arguments", std::move(arguments)}});
        return next();
    }

    static json modern_meta() {
        return {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                {"io.modelcontextprotocol/clientCapabilities", json::object()},
                {"io.modelcontextprotocol/clientInfo", {{"name", "test"}, {"version", "0"}}}};
    }

    void initialize(const std::string& version = "2025-11-25") {
        request(0, "initialize",
                {{"protocolVersion", version},
                 {"capabilities", json::object()},
                 {"clientInfo", {{"name", "test"}, {"version", "0"}}}});
        ASSERT_EQ(next()["result"]["protocolVersion"], version);
        notify("notifications/initialized", json::object());
    }

    testing::FdLeakChecker fd_leak_checker_;
    FakeHost host_;
    std::optional<McpServer> server_;
    UniqueFd server_in_, server_out_, client_in_, client_out_;
    std::future<Status> run_;
    std::string buffer_;
};

const json kServerInfo = {{"name", "stockade"}, {"title", "Stockade"}, {"version", "1.2.3"}};

TEST_F(McpServerTest, LegacyHandshakeNegotiatesAndAnswersPing) {
    ServerOptions options;
    options.instructions = "Use the tools.";
    start(options);
    request(1, "initialize",
            {{"protocolVersion", "2025-11-25"},
             {"capabilities", {{"elicitation", json::object()}}},
             {"clientInfo", {{"name", "test"}, {"version", "0"}}}});
    EXPECT_EQ(next(), json({{"jsonrpc", "2.0"},
                            {"id", 1},
                            {"result",
                             {{"protocolVersion", "2025-11-25"},
                              {"capabilities", {{"tools", {{"listChanged", false}}}}},
                              {"serverInfo", kServerInfo},
                              {"instructions", "Use the tools."}}}}));
    notify("notifications/initialized", json::object());
    request("p", "ping");
    EXPECT_EQ(next(), json({{"jsonrpc", "2.0"}, {"id", "p"}, {"result", json::object()}}));
}

TEST_F(McpServerTest, InitializeWithAnUnservedVersionGetsOurLatestLegacy) {
    start();
    request(1, "initialize",
            {{"protocolVersion", "2024-11-05"},
             {"capabilities", json::object()},
             {"clientInfo", {{"name", "old"}, {"version", "0"}}}});
    EXPECT_EQ(next()["result"]["protocolVersion"], "2025-11-25");
    request(2, "initialize", {{"protocolVersion", "2025-06-18"}});
    EXPECT_EQ(next()["result"]["protocolVersion"], "2025-06-18");
    request(3, "initialize", json::object());
    EXPECT_EQ(next()["error"]["code"], -32602);
}

TEST_F(McpServerTest, ModernDiscoverNeedsNoHandshake) {
    start();
    request("d", "server/discover", {{"_meta", modern_meta()}});
    EXPECT_EQ(next(), json({{"jsonrpc", "2.0"},
                            {"id", "d"},
                            {"result",
                             {{"resultType", "complete"},
                              {"supportedVersions", {"2026-07-28", "2025-11-25", "2025-06-18"}},
                              {"capabilities", {{"tools", {{"listChanged", false}}}}},
                              {"serverInfo", kServerInfo},
                              {"ttlMs", 0},
                              {"cacheScope", "private"},
                              {"_meta", {{"io.modelcontextprotocol/serverInfo", kServerInfo}}}}}}));
}

TEST_F(McpServerTest, DiscoverWithoutMetaIsInvalidParams) {
    start();
    request(1, "server/discover");
    EXPECT_EQ(next()["error"]["code"], -32602);
}

TEST_F(McpServerTest, ModernRequestWithUnsupportedVersionListsSupportedVersions) {
    start();
    json meta = modern_meta();
    meta["io.modelcontextprotocol/protocolVersion"] = "1900-01-01";
    request(1, "tools/list", {{"_meta", meta}});
    json reply = next();
    EXPECT_EQ(reply["error"]["code"], -32022);
    EXPECT_EQ(reply["error"]["data"]["requested"], "1900-01-01");
    EXPECT_EQ(reply["error"]["data"]["supported"][0], "2026-07-28");
}

TEST_F(McpServerTest, ModernRequestWithoutCapabilitiesIsInvalidParams) {
    start();
    request(1, "tools/list",
            {{"_meta", {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"}}}});
    EXPECT_EQ(next()["error"]["code"], -32602);
}

TEST_F(McpServerTest, ModernToolCallCarriesResultTypeAndServerInfo) {
    start();
    request(1, "tools/call",
            {{"name", "echo"}, {"arguments", {{"text", "hi"}}}, {"_meta", modern_meta()}});
    EXPECT_EQ(next()["result"],
              json({{"content", {{{"type", "text"}, {"text", "hi"}}}},
                    {"isError", false},
                    {"structuredContent", {{"length", 2}}},
                    {"resultType", "complete"},
                    {"_meta", {{"io.modelcontextprotocol/serverInfo", kServerInfo}}}}));
}

TEST_F(McpServerTest, PingIsNotPartOfTheModernRevision) {
    start();
    request(1, "ping", {{"_meta", modern_meta()}});
    EXPECT_EQ(next()["error"]["code"], -32601);
}

TEST_F(McpServerTest, ToolsListSnapshot) {
    start();
    initialize();
    request(1, "tools/list");
    const json expected = {
        {"tools",
         {{{"name", "echo"},
           {"title", "Echo"},
           {"description", "Returns its text."},
           {"inputSchema",
            {{"type", "object"},
             {"properties", {{"text", {{"type", "string"}}}}},
             {"required", {"text"}},
             {"additionalProperties", false}}},
           {"annotations",
            {{"readOnlyHint", true}, {"idempotentHint", true}, {"openWorldHint", false}}}},
          {{"name", "fail"},
           {"description", "Always fails."},
           {"inputSchema", {{"type", "object"}, {"additionalProperties", false}}},
           {"annotations", {{"readOnlyHint", false}, {"destructiveHint", true}}}},
          {{"name", "block"},
           {"description", "Waits until cancelled."},
           {"inputSchema", {{"type", "object"}, {"additionalProperties", true}}}},
          {{"name", "progress"},
           {"description", "Reports progress."},
           {"inputSchema", {{"type", "object"}, {"additionalProperties", false}}}},
          {{"name", "vanish"},
           {"description", "Listed, then unknown."},
           {"inputSchema", {{"type", "object"}, {"additionalProperties", false}}}}}}};
    json first = next();
    EXPECT_EQ(first["result"], expected);
    request(2, "tools/list");
    EXPECT_EQ(next()["result"], first["result"]) << "tools/list must be deterministic";
    request(3, "tools/list", {{"cursor", "x"}});
    EXPECT_EQ(next()["error"]["code"], -32602);
}

TEST_F(McpServerTest, ModernToolsListIsCacheable) {
    ServerOptions options;
    options.cache_ttl = 60000ms;
    start(options);
    request(1, "tools/list", {{"_meta", modern_meta()}});
    json result = next()["result"];
    EXPECT_EQ(result["ttlMs"], 60000);
    EXPECT_EQ(result["cacheScope"], "private");
    EXPECT_EQ(result["resultType"], "complete");
    EXPECT_EQ(result["tools"].size(), 5U);
}

TEST_F(McpServerTest, CallSucceedsFailsAndRejectsBadArgumentsAsToolErrors) {
    start();
    initialize();
    EXPECT_EQ(call(1, "echo", {{"text", "hello"}}),
              json({{"jsonrpc", "2.0"},
                    {"id", 1},
                    {"result",
                     {{"content", {{{"type", "text"}, {"text", "hello"}}}},
                      {"isError", false},
                      {"structuredContent", {{"length", 5}}}}}}));
    EXPECT_EQ(call(2, "fail")["result"],
              json({{"content", {{{"type", "text"}, {"text", "The tool failed on purpose."}}}},
                    {"isError", true}}));
    json bad = call(3, "echo", {{"text", 5}});
    EXPECT_EQ(bad["result"]["isError"], true);
    EXPECT_EQ(bad["result"]["content"][0]["text"], "echo needs a string argument \"text\".");
}

TEST_F(McpServerTest, UnknownToolIsAJsonRpcErrorNamingTheKnownTools) {
    start();
    initialize();
    json reply = call(4, "nope");
    EXPECT_EQ(reply["id"], 4);
    EXPECT_EQ(reply["error"]["code"], -32602);
    EXPECT_EQ(reply["error"]["message"],
              "Unknown tool: \"nope\". Known tools: echo, fail, block, progress, vanish.");
    EXPECT_EQ(reply["error"]["data"]["knownTools"].size(), 5U);
    EXPECT_EQ(call(5, "vanish")["error"]["code"], -32602);
}

TEST_F(McpServerTest, MalformedCallParamsAreInvalidParams) {
    start();
    initialize();
    request(1, "tools/call", {{"arguments", json::object()}});
    EXPECT_EQ(next()["error"]["code"], -32602);
    request(2, "tools/call", {{"name", "echo"}, {"arguments", {1, 2}}});
    EXPECT_EQ(next()["error"]["code"], -32602);
    send({{"jsonrpc", "2.0"}, {"id", 3}, {"method", "tools/call"}, {"params", {1}}});
    EXPECT_EQ(next()["error"]["code"], -32602);
}

TEST_F(McpServerTest, UnknownMethodIsMethodNotFoundAndUnknownNotificationIsIgnored) {
    start();
    initialize();
    notify("notifications/whatever", json::object());
    request(1, "resources/list");
    json reply = next();
    EXPECT_EQ(reply["id"], 1);
    EXPECT_EQ(reply["error"]["code"], -32601);
}

TEST_F(McpServerTest, MalformedJsonGetsParseErrorThenTheNextRequestIsAnswered) {
    start();
    send_raw("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \n");
    json reply = next();
    EXPECT_TRUE(reply["id"].is_null());
    EXPECT_EQ(reply["error"]["code"], -32700);
    send_raw("[{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}]\n");
    reply = next();
    EXPECT_TRUE(reply["id"].is_null());
    EXPECT_EQ(reply["error"]["code"], -32600);
    request(3, "ping");
    EXPECT_EQ(next(), json({{"jsonrpc", "2.0"}, {"id", 3}, {"result", json::object()}}));
}

TEST_F(McpServerTest, OversizedLineIsRejectedAndTheNextRequestIsAnswered) {
    start();
    std::string big =
        R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":")";
    big.append(std::size_t{9} << 20, 'x');
    big += "\"}}}\n";
    std::thread writer([&] { send_raw(big); });
    json reply = next();
    writer.join();
    EXPECT_TRUE(reply["id"].is_null());
    EXPECT_EQ(reply["error"]["code"], -32600);
    request(2, "ping");
    EXPECT_EQ(next(), json({{"jsonrpc", "2.0"}, {"id", 2}, {"result", json::object()}}));
}

TEST_F(McpServerTest, CancelledCallStopsPromptlyAndGetsNoResponse) {
    start();
    initialize();
    request(5, "tools/call", {{"name", "block"}, {"arguments", json::object()}});
    ASSERT_EQ(host_.wait_started(1).size(), 1U);
    notify("notifications/cancelled", {{"requestId", 5}, {"reason", "user pressed stop"}});
    request(6, "ping");
    EXPECT_EQ(next()["id"], 6);
    EXPECT_TRUE(next(300ms).is_null()) << "a cancelled request must get no response";
    EXPECT_EQ(host_.stopped(), 1);
    notify("notifications/cancelled", {{"requestId", 99}});  // unknown: ignored
    request(7, "ping");
    EXPECT_EQ(next()["id"], 7);
}

TEST_F(McpServerTest, EofWithACallInFlightCancelsItAndReturns) {
    start();
    initialize();
    request(1, "tools/call", {{"name", "block"}});
    ASSERT_EQ(host_.wait_started(1).size(), 1U);
    const auto before = std::chrono::steady_clock::now();
    client_out_.reset();
    ASSERT_EQ(run_.wait_for(5s), std::future_status::ready);
    EXPECT_LT(std::chrono::steady_clock::now() - before, 2s);
    EXPECT_THAT(run_.get(), IsOk());
    EXPECT_EQ(host_.stopped(), 1);
}

TEST_F(McpServerTest, AtMostMaxConcurrentCallsRunAndTheOthersWait) {
    ServerOptions options;
    options.max_concurrent_calls = 2;
    start(options);
    initialize();
    request(1, "tools/call", {{"name", "block"}});
    request(2, "tools/call", {{"name", "block"}});
    request(3, "tools/call", {{"name", "block"}});
    ASSERT_EQ(host_.wait_started(2).size(), 2U);
    std::this_thread::sleep_for(200ms);
    EXPECT_EQ(host_.wait_started(2).size(), 2U) << "a third call ran past the bound";
    notify("notifications/cancelled", {{"requestId", 1}});
    auto started = host_.wait_started(3);
    ASSERT_EQ(started.size(), 3U);
    std::sort(started.begin(), started.begin() + 2);  // 1 and 2 start concurrently
    EXPECT_EQ(started, (std::vector<std::string>{"1", "2", "3"}));
}

TEST_F(McpServerTest, CallPastThePendingLimitIsAToolError) {
    ServerOptions options;
    options.max_concurrent_calls = 1;
    options.max_pending_calls = 1;
    start(options);
    initialize();
    request(1, "tools/call", {{"name", "block"}});
    ASSERT_EQ(host_.wait_started(1).size(), 1U);
    json reply = call(2, "echo", {{"text", "x"}});
    EXPECT_EQ(reply["result"]["isError"], true);
}

TEST_F(McpServerTest, ReusedIdOfACallInProgressIsInvalidRequest) {
    start();
    initialize();
    request("same", "tools/call", {{"name", "block"}});
    ASSERT_EQ(host_.wait_started(1).size(), 1U);
    request("same", "tools/call", {{"name", "echo"}, {"arguments", {{"text", "x"}}}});
    json reply = next();
    EXPECT_EQ(reply["id"], "same");
    EXPECT_EQ(reply["error"]["code"], -32600);
}

TEST_F(McpServerTest, ProgressNotificationsIncreaseAndPrecedeTheResult) {
    start();
    initialize();
    request(1, "tools/call", {{"name", "progress"}, {"_meta", {{"progressToken", "tok"}}}});
    const auto progress = [](json params) {
        return json({{"jsonrpc", "2.0"}, {"method", "notifications/progress"}, {"params", params}});
    };
    EXPECT_EQ(
        next(),
        progress(
            {{"progressToken", "tok"}, {"progress", 1.0}, {"total", 3.0}, {"message", "one"}}));
    EXPECT_EQ(next(), progress({{"progressToken", "tok"}, {"progress", 2.0}, {"total", 3.0}}));
    EXPECT_EQ(next(),
              progress({{"progressToken", "tok"}, {"progress", 3.0}, {"message", "three"}}));
    EXPECT_EQ(next()["result"]["content"][0]["text"], "done");
}

TEST_F(McpServerTest, NoProgressWithoutAToken) {
    start();
    initialize();
    json reply = call(1, "progress");
    EXPECT_EQ(reply["id"], 1);
    EXPECT_EQ(reply["result"]["content"][0]["text"], "done");
}

TEST_F(McpServerTest, RequestsBeforeInitializeAreServedLeniently) {
    start();
    EXPECT_EQ(call(1, "echo", {{"text", "early"}})["result"]["content"][0]["text"], "early");
}

TEST_F(McpServerTest, RequestStopEndsRun) {
    start();
    initialize();
    server_->request_stop();
    ASSERT_EQ(run_.wait_for(5s), std::future_status::ready);
    EXPECT_THAT(run_.get(), IsOk());
}

TEST_F(McpServerTest, ToolsRunWithTheCallersSignalMask) {
    start();
    initialize();
    EXPECT_EQ(call(1, "echo", {{"text", "x"}})["result"]["isError"], false);
    EXPECT_EQ(call(2, "fail")["result"]["isError"], true);
    EXPECT_FALSE(host_.sigpipe_blocked_in_a_tool())
        << "processes spawned by tools would inherit a blocked SIGPIPE";
}

TEST_F(McpServerTest, ClosedOutputStopsTheServerWithoutSigpipe) {
    start();
    client_in_.reset();
    request(1, "ping");
    ASSERT_EQ(run_.wait_for(5s), std::future_status::ready);
    EXPECT_THAT(run_.get(), IsOk());
}

}  // namespace
}  // namespace stockade::mcp
