#include "runner/mcp/server.h"

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
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/testing/fd_leak_checker.h"
#include "tests/testing/matchers.h"

namespace stockade::mcp {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using testing::IsOk;

// Tools: echo (text back, structured length), fail (isError), block (waits for its stop
// token), progress (three reports, one of them repeated), vanish (listed, but the host then
// says it does not exist), and, when with_ask is set, ask (elicits; see ask()).
class FakeHost : public ToolHost {
public:
    std::vector<ToolInfo> list_tools() override {
        ++listed_;
        std::vector<ToolInfo> tools = {
            ToolInfo{.name = "echo",
                     .title = "Echo",
                     .description = "Returns its text.",
                     .input_schema = {{"type", "object"},
                                      {"properties", {{"text", {{"type", "string"}}}}},
                                      {"required", {"text"}}},
                     .output_schema = nullptr,
                     .annotations = tools::ToolAnnotations{.read_only = true, .idempotent = true}},
            ToolInfo{.name = "fail",
                     .title = "",
                     .description = "Always fails.",
                     .input_schema = json::object(),
                     .output_schema = nullptr,
                     .annotations = tools::ToolAnnotations{.destructive = true}},
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
        if (with_ask) {
            tools.push_back(
                ToolInfo{.name = "ask",
                         .title = "",
                         .description = "Asks the user.",
                         .input_schema = {{"type", "object"}, {"additionalProperties", true}},
                         .output_schema = nullptr,
                         .annotations = {}});
        }
        return tools;
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
                        .meta = nullptr,
                        .structured = nullptr,
                        .unknown_tool = false};
            }
            const auto& s = text->get_ref<const std::string&>();
            return {.text = s,
                    .is_error = false,
                    .meta = {{"test/echo", {{"bytes", s.size()}}}},
                    .structured = {{"length", s.size()}},
                    .unknown_tool = false};
        }
        if (name == "fail") {
            return {.text = "The tool failed on purpose.",
                    .is_error = true,
                    .meta = nullptr,
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
                    .meta = nullptr,
                    .structured = nullptr,
                    .unknown_tool = false};
        }
        if (name == "ask") {
            return ask(arguments, info);
        }
        if (name == "progress") {
            info.progress(1, 3, "one");
            info.progress(1, 3, "one again");  // not an increase: dropped
            info.progress(2, 3, "");
            info.progress(3, std::nullopt, "three");
            return {.text = "done",
                    .is_error = false,
                    .meta = nullptr,
                    .structured = nullptr,
                    .unknown_tool = false};
        }
        return {.text = "",
                .is_error = false,
                .meta = nullptr,
                .structured = nullptr,
                .unknown_tool = true};
    }

    // Waits until `count` block calls have started; returns their ids in start order.
    std::vector<std::string> wait_started(std::size_t count) {
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, 5s, [&] { return started_.size() >= count; });
        return started_;
    }
    int stopped() const { return stopped_.load(); }
    int listed() const { return listed_.load(); }

    // The errors elicit() returned, as errc names, once `count` asks have returned.
    std::vector<std::string> wait_ask_errors(std::size_t count) {
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, 5s, [&] { return asks_returned_ >= count; });
        return ask_errors_;
    }

    bool with_ask = false;
    bool sigpipe_blocked_in_a_tool() const { return sigpipe_blocked_in_a_tool_.load(); }

private:
    // ask: elicits arguments.message (default "Allow the call?") with arguments.schema (default
    // a required "decision" enum of once/deny), waiting arguments.timeout_ms (default 5000);
    // with arguments.twice, asks "Really?" (an empty form) after an accepted first answer. The
    // result: {"answers": [{"action", "content"}...]}, or an isError naming the elicit error.
    ToolCallResult ask(const json& arguments, const CallInfo& info) {
        if (!info.can_elicit()) {
            return {.text = "cannot elicit",
                    .is_error = true,
                    .meta = nullptr,
                    .structured = nullptr,
                    .unknown_tool = false};
        }
        std::vector<ElicitRequest> questions = {ElicitRequest{
            .message = arguments.value("message", "Allow the call?"),
            .requested_schema =
                arguments.value("schema", json({{"type", "object"},
                                                {"properties",
                                                 {{"decision",
                                                   {{"type", "string"},
                                                    {"enum", {"once", "deny"}},
                                                    {"enumNames", {"Allow once", "Deny"}}}}}},
                                                {"required", {"decision"}}})),
            .timeout = std::chrono::milliseconds(arguments.value("timeout_ms", 5000))}};
        if (arguments.value("twice", false)) {
            questions.push_back(
                ElicitRequest{.message = "Really?", .requested_schema = nullptr, .timeout = 5s});
        }
        json answers = json::array();
        for (const auto& question : questions) {
            auto answer = info.elicit(question);
            if (!answer) {
                std::string errc = errc_name(answer.error().code);
                {
                    std::lock_guard lock(mu_);
                    ask_errors_.push_back(errc);
                    ++asks_returned_;
                }
                cv_.notify_all();
                return {.text = errc + ": " + answer.error().message,
                        .is_error = true,
                        .meta = nullptr,
                        .structured = {{"errc", errc}},
                        .unknown_tool = false};
            }
            answers.push_back({{"action", answer->action}, {"content", answer->content}});
            if (!answer->accepted()) {
                break;
            }
        }
        {
            std::lock_guard lock(mu_);
            ++asks_returned_;
        }
        cv_.notify_all();
        return {.text = "answered",
                .is_error = false,
                .meta = nullptr,
                .structured = {{"answers", std::move(answers)}},
                .unknown_tool = false};
    }

    std::mutex mu_;
    std::condition_variable cv_;
    std::size_t asks_returned_ = 0;
    std::vector<std::string> ask_errors_;
    std::vector<std::string> started_;
    std::atomic<int> stopped_{0};
    std::atomic<int> listed_{0};
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

    void initialize(const std::string& version = "2025-11-25", json capabilities = json::object()) {
        request(0, "initialize",
                {{"protocolVersion", version},
                 {"capabilities", std::move(capabilities)},
                 {"clientInfo", {{"name", "test"}, {"version", "0"}}}});
        ASSERT_EQ(next()["result"]["protocolVersion"], version);
        notify("notifications/initialized", json::object());
    }

    // Answers a request of the server's (an elicitation/create).
    void respond(const json& id, json result) {
        send({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
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
            {{"protocolVersion", "2024-10-07"},
             {"capabilities", json::object()},
             {"clientInfo", {{"name", "old"}, {"version", "0"}}}});
    EXPECT_EQ(next()["result"]["protocolVersion"], "2025-11-25");
    request(2, "initialize", {{"protocolVersion", "2025-06-18"}});
    EXPECT_EQ(next()["result"]["protocolVersion"], "2025-06-18");
    request(3, "initialize", json::object());
    EXPECT_EQ(next()["error"]["code"], -32602);
}

TEST_F(McpServerTest, InitializeThatDeclares20260728InItsMetaIsAnUnknownMethod) {
    start();
    request(1, "initialize", {{"protocolVersion", "2026-07-28"}, {"_meta", modern_meta()}});
    json reply = next();
    EXPECT_EQ(reply["id"], 1);
    EXPECT_EQ(reply["error"]["code"], -32601) << reply;
    // The connection has no legacy session: a plain initialize still works after it.
    request(2, "initialize", {{"protocolVersion", "2025-11-25"}});
    EXPECT_EQ(next()["result"]["protocolVersion"], "2025-11-25");
}

TEST_F(McpServerTest, ModernDiscoverNeedsNoHandshake) {
    start();
    request("d", "server/discover", {{"_meta", modern_meta()}});
    EXPECT_EQ(next(),
              json({{"jsonrpc", "2.0"},
                    {"id", "d"},
                    {"result",
                     {{"resultType", "complete"},
                      {"supportedVersions",
                       {"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}},
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
    EXPECT_EQ(next()["result"], json({{"content", {{{"type", "text"}, {"text", "hi"}}}},
                                      {"isError", false},
                                      {"structuredContent", {{"length", 2}}},
                                      {"resultType", "complete"},
                                      {"_meta",
                                       {{"test/echo", {{"bytes", 2}}},
                                        {"io.modelcontextprotocol/serverInfo", kServerInfo}}}}));
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
            {{"readOnlyHint", true},
             {"destructiveHint", false},
             {"idempotentHint", true},
             {"openWorldHint", false}}}},
          {{"name", "fail"},
           {"description", "Always fails."},
           {"inputSchema", {{"type", "object"}, {"additionalProperties", false}}},
           {"annotations",
            {{"readOnlyHint", false},
             {"destructiveHint", true},
             {"idempotentHint", false},
             {"openWorldHint", false}}}},
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
                      {"structuredContent", {{"length", 5}}},
                      {"_meta", {{"test/echo", {{"bytes", 5}}}}}}}}));
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

TEST_F(McpServerTest, ACallOfAKnownToolDoesNotListTheTools) {
    start();
    initialize();
    const int before = host_.listed();
    EXPECT_EQ(call(4, "echo", {{"text", "hi"}})["result"]["content"][0]["text"], "hi");
    EXPECT_EQ(host_.listed(), before) << "the host checks the name when it runs the call";
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
    EXPECT_FALSE(reply.contains("id")) << reply;
    EXPECT_EQ(reply["error"]["code"], -32700);
    send_raw("[{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}]\n");
    reply = next();
    EXPECT_FALSE(reply.contains("id")) << reply;
    EXPECT_EQ(reply["error"]["code"], -32600);
    request(3, "ping");
    EXPECT_EQ(next(), json({{"jsonrpc", "2.0"}, {"id", 3}, {"result", json::object()}}));
}

TEST_F(McpServerTest, ANumberTooLargeToHoldIsAParseErrorAnsweredToTheRequestsId) {
    start();
    send_raw(
        R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"n":1e999}}})"
        "\n");
    json reply = next();
    EXPECT_EQ(reply["id"], 5) << reply;
    EXPECT_EQ(reply["error"]["code"], -32700);
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
    EXPECT_FALSE(reply.contains("id")) << reply;
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

TEST_F(McpServerTest, CallsPastThePendingBytesAreAToolErrorAndTheBoundFreesUp) {
    ServerOptions options;
    options.max_concurrent_calls = 1;
    options.max_pending_bytes = 64 << 10;
    start(options);
    initialize();
    request(1, "tools/call", {{"name", "block"}});
    ASSERT_EQ(host_.wait_started(1).size(), 1U);
    const std::string big(40 << 10, 'x');
    request(2, "tools/call", {{"name", "echo"}, {"arguments", {{"text", big}}}});  // waits
    json refused = call(3, "echo", {{"text", big}});
    EXPECT_EQ(refused["result"]["isError"], true);
    EXPECT_THAT(refused["result"]["content"][0]["text"].get<std::string>(),
                ::testing::HasSubstr("MiB of arguments"));
    notify("notifications/cancelled", {{"requestId", 1}});
    json echoed = next();
    EXPECT_EQ(echoed["id"], 2);
    EXPECT_EQ(echoed["result"]["isError"], false);
    // Once they are answered, the same size fits again.
    EXPECT_EQ(call(4, "echo", {{"text", big}})["result"]["isError"], false);
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

TEST_F(McpServerTest, AnIdIsFreeAgainTheMomentItsReplyArrives) {
    start();
    initialize();
    // A client may reuse an id as soon as it has the reply; the server must not still count
    // the finished call against it.
    for (int round = 0; round < 200; ++round) {
        json reply = call("again", "echo", {{"text", std::to_string(round)}});
        ASSERT_TRUE(reply.contains("result")) << "round " << round << ": " << reply.dump();
        EXPECT_EQ(reply["result"]["content"][0]["text"], std::to_string(round));
    }
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

// ---- older revisions: 2025-03-26 and 2024-11-05 ----------------------------------------------

TEST_F(McpServerTest, OlderRevisionsAreNegotiatedAndServedWithoutTitles) {
    start();
    for (const char* version : {"2025-03-26", "2024-11-05"}) {
        request(version, "initialize",
                {{"protocolVersion", version},
                 {"capabilities", json::object()},
                 {"clientInfo", {{"name", "old"}, {"version", "0"}}}});
        EXPECT_EQ(next(), json({{"jsonrpc", "2.0"},
                                {"id", version},
                                {"result",
                                 {{"protocolVersion", version},
                                  {"capabilities", {{"tools", {{"listChanged", false}}}}},
                                  {"serverInfo", {{"name", "stockade"}, {"version", "1.2.3"}}}}}}))
            << "Implementation.title came in 2025-06-18";
        notify("notifications/initialized", json::object());
        request(1, "ping");
        EXPECT_EQ(next(), json({{"jsonrpc", "2.0"}, {"id", 1}, {"result", json::object()}}));
    }
}

TEST_F(McpServerTest, ToolsListUnder20250326PutsTheTitleInTheAnnotations) {
    start();
    initialize("2025-03-26");
    request(1, "tools/list");
    json tools = next()["result"]["tools"];
    ASSERT_EQ(tools.size(), 5U);
    EXPECT_EQ(tools[0], json({{"name", "echo"},
                              {"description", "Returns its text."},
                              {"inputSchema",
                               {{"type", "object"},
                                {"properties", {{"text", {{"type", "string"}}}}},
                                {"required", {"text"}},
                                {"additionalProperties", false}}},
                              {"annotations",
                               {{"title", "Echo"},
                                {"readOnlyHint", true},
                                {"destructiveHint", false},
                                {"idempotentHint", true},
                                {"openWorldHint", false}}}}));
}

TEST_F(McpServerTest, ToolsListUnder20241105HasNoAnnotations) {
    start();
    initialize("2024-11-05");
    request(1, "tools/list");
    json tools = next()["result"]["tools"];
    ASSERT_EQ(tools.size(), 5U);
    for (const json& tool : tools) {
        EXPECT_FALSE(tool.contains("annotations")) << tool;
        EXPECT_FALSE(tool.contains("title")) << tool;
    }
    EXPECT_EQ(tools[1],
              json({{"name", "fail"},
                    {"description", "Always fails."},
                    {"inputSchema", {{"type", "object"}, {"additionalProperties", false}}}}));
}

TEST_F(McpServerTest, ResultsBefore20250618CarryNoStructuredContent) {
    start();
    for (const char* version : {"2025-03-26", "2024-11-05"}) {
        initialize(version);
        EXPECT_EQ(call(1, "echo", {{"text", "hi"}})["result"],
                  json({{"content", {{{"type", "text"}, {"text", "hi"}}}},
                        {"isError", false},
                        {"_meta", {{"test/echo", {{"bytes", 2}}}}}}))
            << version;
    }
}

TEST_F(McpServerTest, ProgressUnder20241105HasNoMessage) {
    start();
    initialize("2024-11-05");
    request(1, "tools/call", {{"name", "progress"}, {"_meta", {{"progressToken", 7}}}});
    const auto progress = [](json params) {
        return json({{"jsonrpc", "2.0"}, {"method", "notifications/progress"}, {"params", params}});
    };
    EXPECT_EQ(next(), progress({{"progressToken", 7}, {"progress", 1.0}, {"total", 3.0}}));
    EXPECT_EQ(next(), progress({{"progressToken", 7}, {"progress", 2.0}, {"total", 3.0}}));
    EXPECT_EQ(next(), progress({{"progressToken", 7}, {"progress", 3.0}}));
    EXPECT_EQ(next()["result"]["content"][0]["text"], "done");
    initialize("2025-03-26");
    request(2, "tools/call", {{"name", "progress"}, {"_meta", {{"progressToken", 8}}}});
    EXPECT_EQ(next()["params"]["message"], "one") << "2025-03-26 added the message";
}

TEST_F(McpServerTest, NoProgressWithoutAToken) {
    start();
    initialize();
    json reply = call(1, "progress");
    EXPECT_EQ(reply["id"], 1);
    EXPECT_EQ(reply["result"]["content"][0]["text"], "done");
}

// ---- elicitation, 2025 era: elicitation/create requests ------------------------------------

const json kElicitCapability = {{"elicitation", json::object()}};

// Checks that `message` is an elicitation/create request with one of our ids.
void expect_elicitation(const json& message) {
    EXPECT_EQ(message["jsonrpc"], "2.0");
    EXPECT_EQ(message["method"], "elicitation/create") << message;
    ASSERT_TRUE(message["id"].is_string()) << message;
    EXPECT_TRUE(message["id"].get<std::string>().starts_with("stockade-elicit-")) << message;
}

TEST_F(McpServerTest, ElicitationAcceptedGivesTheToolTheCheckedContent) {
    host_.with_ask = true;
    start();
    initialize("2025-11-25", kElicitCapability);
    request(1, "tools/call",
            {{"name", "ask"}, {"arguments", {{"message", "Allow rm -rf build?"}}}});
    json question = next();
    expect_elicitation(question);
    EXPECT_EQ(question["params"], json({{"mode", "form"},
                                        {"message", "Allow rm -rf build?"},
                                        {"requestedSchema",
                                         {{"type", "object"},
                                          {"properties",
                                           {{"decision",
                                             {{"type", "string"},
                                              {"enum", {"once", "deny"}},
                                              {"enumNames", {"Allow once", "Deny"}}}}}},
                                          {"required", {"decision"}}}}}));
    respond(question["id"], {{"action", "accept"}, {"content", {{"decision", "once"}, {"x", 1}}}});
    json reply = next();
    EXPECT_EQ(reply["id"], 1);
    EXPECT_EQ(reply["result"]["isError"], false);
    EXPECT_EQ(reply["result"]["structuredContent"],
              json({{"answers", {{{"action", "accept"}, {"content", {{"decision", "once"}}}}}}}))
        << "a property outside the schema is dropped";
}

TEST_F(McpServerTest, ElicitationDeclinedAndCancelledCarryNoContent) {
    host_.with_ask = true;
    start();
    initialize("2025-11-25", {{"elicitation", {{"form", json::object()}}}});
    request(1, "tools/call", {{"name", "ask"}});
    json question = next();
    expect_elicitation(question);
    respond(question["id"], {{"action", "decline"}, {"content", {{"decision", "once"}}}});
    EXPECT_EQ(next()["result"]["structuredContent"]["answers"],
              json({{{"action", "decline"}, {"content", nullptr}}}));
    request(2, "tools/call", {{"name", "ask"}});
    question = next();
    expect_elicitation(question);
    respond(question["id"], {{"action", "cancel"}});
    EXPECT_EQ(next()["result"]["structuredContent"]["answers"],
              json({{{"action", "cancel"}, {"content", nullptr}}}));
}

TEST_F(McpServerTest, ElicitationErrorResponseIsAnElicitError) {
    host_.with_ask = true;
    start();
    initialize("2025-11-25", kElicitCapability);
    request(1, "tools/call", {{"name", "ask"}});
    json question = next();
    expect_elicitation(question);
    send({{"jsonrpc", "2.0"},
          {"id", question["id"]},
          {"error", {{"code", -32601}, {"message", "no elicitation here"}}}});
    json reply = next();
    EXPECT_EQ(reply["result"]["isError"], true);
    EXPECT_EQ(reply["result"]["structuredContent"]["errc"], "unavailable");
    EXPECT_NE(reply["result"]["content"][0]["text"].get<std::string>().find("-32601"),
              std::string::npos);
}

TEST_F(McpServerTest, NoElicitWithoutTheFormCapability) {
    host_.with_ask = true;
    start();
    initialize("2025-11-25", json::object());
    EXPECT_EQ(call(1, "ask")["result"]["content"][0]["text"], "cannot elicit");
    initialize("2025-11-25", {{"elicitation", {{"url", json::object()}}}});
    EXPECT_EQ(call(2, "ask")["result"]["content"][0]["text"], "cannot elicit")
        << "URL mode alone is no form mode";
    initialize("2025-11-25", {{"elicitation", true}});
    EXPECT_EQ(call(3, "ask")["result"]["content"][0]["text"], "cannot elicit");
}

TEST_F(McpServerTest, Elicitation20250618HasNoMode) {
    host_.with_ask = true;
    start();
    initialize("2025-06-18", kElicitCapability);
    request(1, "tools/call", {{"name", "ask"}});
    json question = next();
    expect_elicitation(question);
    EXPECT_FALSE(question["params"].contains("mode"));
    respond(question["id"], {{"action", "accept"}, {"content", {{"decision", "deny"}}}});
    EXPECT_EQ(next()["result"]["structuredContent"]["answers"][0]["content"]["decision"], "deny");
}

TEST_F(McpServerTest, NoElicitationBefore20250618WhateverTheClientDeclares) {
    host_.with_ask = true;
    start();
    for (const char* version : {"2025-03-26", "2024-11-05"}) {
        initialize(version, kElicitCapability);
        json reply = call(version, "ask");
        EXPECT_EQ(reply["id"], version) << "no elicitation/create: the revision has none";
        EXPECT_EQ(reply["result"]["content"][0]["text"], "cannot elicit");
    }
}

TEST_F(McpServerTest, CallCancelledWhileAskingWithdrawsTheQuestionAndGetsNoResponse) {
    host_.with_ask = true;
    start();
    initialize("2025-11-25", kElicitCapability);
    request(7, "tools/call", {{"name", "ask"}});
    json question = next();
    expect_elicitation(question);
    notify("notifications/cancelled", {{"requestId", 7}});
    EXPECT_EQ(
        next(),
        json({{"jsonrpc", "2.0"},
              {"method", "notifications/cancelled"},
              {"params",
               {{"requestId", question["id"]}, {"reason", "The tool call was cancelled."}}}}));
    EXPECT_EQ(host_.wait_ask_errors(1), std::vector<std::string>{"cancelled"});
    respond(question["id"], {{"action", "accept"}, {"content", {{"decision", "once"}}}});  // late
    request(8, "ping");
    EXPECT_EQ(next()["id"], 8);
    EXPECT_TRUE(next(300ms).is_null()) << "a cancelled call must get no response";
}

TEST_F(McpServerTest, EofWhileAskingEndsTheElicitationPromptly) {
    host_.with_ask = true;
    start();
    initialize("2025-11-25", kElicitCapability);
    request(1, "tools/call", {{"name", "ask"}, {"arguments", {{"timeout_ms", 60000}}}});
    expect_elicitation(next());
    const auto before = std::chrono::steady_clock::now();
    client_out_.reset();
    ASSERT_EQ(run_.wait_for(5s), std::future_status::ready);
    EXPECT_LT(std::chrono::steady_clock::now() - before, 2s);
    EXPECT_THAT(run_.get(), IsOk());
    EXPECT_EQ(host_.wait_ask_errors(1), std::vector<std::string>{"cancelled"});
}

TEST_F(McpServerTest, ElicitationTimeoutWithdrawsTheQuestion) {
    host_.with_ask = true;
    start();
    initialize("2025-11-25", kElicitCapability);
    request(1, "tools/call", {{"name", "ask"}, {"arguments", {{"timeout_ms", 100}}}});
    json question = next();
    expect_elicitation(question);
    json withdrawn = next();
    EXPECT_EQ(withdrawn["method"], "notifications/cancelled");
    EXPECT_EQ(withdrawn["params"]["requestId"], question["id"]);
    json reply = next();
    EXPECT_EQ(reply["id"], 1);
    EXPECT_EQ(reply["result"]["structuredContent"]["errc"], "deadline-exceeded");
    respond(question["id"], {{"action", "accept"}, {"content", {{"decision", "once"}}}});  // late
    request(2, "ping");
    EXPECT_EQ(next(), json({{"jsonrpc", "2.0"}, {"id", 2}, {"result", json::object()}}));
}

TEST_F(McpServerTest, StrayAndMalformedResponsesNeverCrashTheServer) {
    host_.with_ask = true;
    start();
    initialize("2025-11-25", kElicitCapability);
    request(1, "tools/call", {{"name", "ask"}});
    json question = next();
    expect_elicitation(question);
    respond("stockade-elicit-999", {{"action", "accept"}});
    respond(5, {{"action", "accept"}});
    send_raw(R"({"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}})"
             "\n");
    send_raw(R"({"jsonrpc":"2.0","id":{"a":1},"result":{}})"
             "\n");
    send_raw(R"({"jsonrpc":"2.0","result":{}})"
             "\n");
    request(2, "ping");
    EXPECT_EQ(next(), json({{"jsonrpc", "2.0"}, {"id", 2}, {"result", json::object()}}))
        << "stray responses get no reply";
    respond(question["id"], {{"action", "maybe"}});
    json reply = next();
    EXPECT_EQ(reply["id"], 1);
    EXPECT_EQ(reply["result"]["structuredContent"]["errc"], "invalid-argument");
    respond(question["id"], {{"action", "accept"}});  // answered already: dropped
    request(3, "ping");
    EXPECT_EQ(next()["id"], 3);
}

TEST_F(McpServerTest, AcceptedContentIsCheckedAgainstTheSchema) {
    host_.with_ask = true;
    start();
    initialize("2025-11-25", kElicitCapability);
    const json bad_answers[] = {
        {{"action", "accept"}, {"content", "once"}},                    // not an object
        {{"action", "accept"}, {"content", json::object()}},            // required missing
        {{"action", "accept"}, {"content", {{"decision", "always"}}}},  // not in the enum
        {{"action", "accept"}, {"content", {{"decision", 1}}}},         // wrong type
        {{"action", 7}},                                                // action not a string
        json::array(),                                                  // not an object
    };
    int id = 1;
    for (const auto& bad : bad_answers) {
        request(id, "tools/call", {{"name", "ask"}});
        json question = next();
        expect_elicitation(question);
        respond(question["id"], bad);
        json reply = next();
        EXPECT_EQ(reply["id"], id);
        EXPECT_EQ(reply["result"]["structuredContent"]["errc"], "invalid-argument") << bad;
        ++id;
    }
    // Both a result and an error.
    request(id, "tools/call", {{"name", "ask"}});
    json question = next();
    expect_elicitation(question);
    send({{"jsonrpc", "2.0"},
          {"id", question["id"]},
          {"result", {{"action", "cancel"}}},
          {"error", {{"code", 1}, {"message", "x"}}}});
    EXPECT_EQ(next()["result"]["structuredContent"]["errc"], "invalid-argument");
}

TEST_F(McpServerTest, ABadQuestionIsRefusedUnsent) {
    host_.with_ask = true;
    start();
    initialize("2025-11-25", kElicitCapability);
    const json nested = {
        {"type", "object"},
        {"properties", {{"where", {{"type", "object"}, {"properties", json::object()}}}}}};
    json reply = call(1, "ask", {{"schema", nested}});
    EXPECT_EQ(reply["id"], 1) << "no elicitation/create for a nested form";
    EXPECT_EQ(reply["result"]["structuredContent"]["errc"], "invalid-argument");
    reply = call(2, "ask", {{"schema", {{"type", "array"}}}});
    EXPECT_EQ(reply["result"]["structuredContent"]["errc"], "invalid-argument");
    reply = call(3, "ask", {{"timeout_ms", 0}});
    EXPECT_EQ(reply["result"]["structuredContent"]["errc"], "invalid-argument");
}

TEST_F(McpServerTest, ConcurrentElicitationsGetTheirOwnAnswers) {
    host_.with_ask = true;
    start();
    initialize("2025-11-25", kElicitCapability);
    request(1, "tools/call", {{"name", "ask"}, {"arguments", {{"message", "one"}}}});
    request(2, "tools/call", {{"name", "ask"}, {"arguments", {{"message", "two"}}}});
    json a = next();
    json b = next();
    expect_elicitation(a);
    expect_elicitation(b);
    EXPECT_NE(a["id"], b["id"]);
    for (const json& q : {b, a}) {
        respond(q["id"],
                {{"action", "accept"},
                 {"content", {{"decision", q["params"]["message"] == "one" ? "once" : "deny"}}}});
    }
    std::map<int, std::string> decisions;
    for (int i = 0; i < 2; ++i) {
        json reply = next();
        decisions[reply["id"].get<int>()] =
            reply["result"]["structuredContent"]["answers"][0]["content"]["decision"];
    }
    EXPECT_EQ(decisions, (std::map<int, std::string>{{1, "once"}, {2, "deny"}}));
}

// ---- elicitation, 2026-07-28: input_required results ----------------------------------------

json modern_meta_with(json capabilities) {
    return {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
            {"io.modelcontextprotocol/clientCapabilities", std::move(capabilities)}};
}

TEST_F(McpServerTest, ModernAskIsAnInputRequiredResultAndTheRetryCompletes) {
    host_.with_ask = true;
    start();
    const json meta = modern_meta_with(kElicitCapability);
    request(1, "tools/call",
            {{"name", "ask"}, {"arguments", {{"message", "Allow?"}}}, {"_meta", meta}});
    json result = next()["result"];
    EXPECT_EQ(result["resultType"], "input_required");
    EXPECT_FALSE(result.contains("requestState"));
    EXPECT_FALSE(result.contains("content"));
    ASSERT_EQ(result["inputRequests"].size(), 1U);
    const std::string key = result["inputRequests"].begin().key();
    EXPECT_TRUE(key.starts_with("stockade-elicit-"));
    const json& input = result["inputRequests"][key];
    EXPECT_EQ(input["method"], "elicitation/create");
    EXPECT_EQ(input["params"]["mode"], "form");
    EXPECT_EQ(input["params"]["message"], "Allow?");
    EXPECT_EQ(input["params"]["requestedSchema"]["required"], json({"decision"}));
    EXPECT_EQ(result["_meta"]["io.modelcontextprotocol/serverInfo"], kServerInfo);
    EXPECT_TRUE(next(200ms).is_null()) << "one reply: the input_required result";

    request(2, "tools/call",
            {{"name", "ask"},
             {"arguments", {{"message", "Allow?"}}},
             {"inputResponses",
              {{key, {{"action", "accept"}, {"content", {{"decision", "once"}}}}},
               {"unrelated", {{"x", 1}}}}},
             {"_meta", meta}});
    json reply = next();
    EXPECT_EQ(reply["id"], 2);
    EXPECT_EQ(reply["result"]["resultType"], "complete");
    EXPECT_EQ(reply["result"]["structuredContent"]["answers"],
              json({{{"action", "accept"}, {"content", {{"decision", "once"}}}}}));

    // An answer to another question (other arguments, so another message) does not apply.
    request(
        3, "tools/call",
        {{"name", "ask"},
         {"arguments", {{"message", "Allow something else?"}}},
         {"inputResponses", {{key, {{"action", "accept"}, {"content", {{"decision", "once"}}}}}}},
         {"_meta", meta}});
    EXPECT_EQ(next()["result"]["resultType"], "input_required");
}

TEST_F(McpServerTest, ModernAskWithoutTheCapabilityCannotElicit) {
    host_.with_ask = true;
    start();
    initialize("2025-11-25", kElicitCapability);  // a legacy session does not leak into 2026
    request(1, "tools/call", {{"name", "ask"}, {"_meta", modern_meta_with(json::object())}});
    EXPECT_EQ(next()["result"]["content"][0]["text"], "cannot elicit");
}

TEST_F(McpServerTest, ModernMalformedInputResponseIsAnElicitError) {
    host_.with_ask = true;
    start();
    const json meta = modern_meta_with(kElicitCapability);
    request(1, "tools/call", {{"name", "ask"}, {"_meta", meta}});
    const std::string key = next()["result"]["inputRequests"].begin().key();
    request(2, "tools/call",
            {{"name", "ask"}, {"inputResponses", {{key, {{"action", "yes"}}}}}, {"_meta", meta}});
    EXPECT_EQ(next()["result"]["structuredContent"]["errc"], "invalid-argument");
    request(3, "tools/call", {{"name", "ask"}, {"inputResponses", "x"}, {"_meta", meta}});
    EXPECT_EQ(next()["error"]["code"], -32602);
    request(4, "tools/call", {{"name", "ask"}, {"requestState", 5}, {"_meta", meta}});
    EXPECT_EQ(next()["error"]["code"], -32602);
}

TEST_F(McpServerTest, ModernSecondQuestionCarriesTheFirstAnswerInASealedRequestState) {
    host_.with_ask = true;
    start();
    const json meta = modern_meta_with(kElicitCapability);
    const json args = {{"twice", true}};
    request(1, "tools/call", {{"name", "ask"}, {"arguments", args}, {"_meta", meta}});
    json first = next()["result"];
    const std::string key1 = first["inputRequests"].begin().key();
    const json answer1 = {{"action", "accept"}, {"content", {{"decision", "once"}}}};

    request(2, "tools/call",
            {{"name", "ask"},
             {"arguments", args},
             {"inputResponses", {{key1, answer1}}},
             {"_meta", meta}});
    json second = next()["result"];
    EXPECT_EQ(second["resultType"], "input_required");
    const std::string key2 = second["inputRequests"].begin().key();
    EXPECT_NE(key1, key2);
    EXPECT_EQ(second["inputRequests"][key2]["params"]["message"], "Really?");
    EXPECT_EQ(second["inputRequests"][key2]["params"]["requestedSchema"],
              json({{"type", "object"}, {"properties", json::object()}}));
    ASSERT_TRUE(second["requestState"].is_string());
    const std::string state = second["requestState"];

    const json answer2 = {{"action", "accept"}};
    request(3, "tools/call",
            {{"name", "ask"},
             {"arguments", args},
             {"inputResponses", {{key2, answer2}}},
             {"requestState", state},
             {"_meta", meta}});
    json done = next()["result"];
    EXPECT_EQ(done["resultType"], "complete");
    EXPECT_EQ(done["structuredContent"]["answers"],
              json({{{"action", "accept"}, {"content", {{"decision", "once"}}}},
                    {{"action", "accept"}, {"content", json::object()}}}));

    // A tampered state, or one presented with other arguments, is rejected.
    std::string tampered = state;
    tampered[tampered.size() - 3] = tampered[tampered.size() - 3] == 'a' ? 'b' : 'a';
    request(4, "tools/call",
            {{"name", "ask"},
             {"arguments", args},
             {"inputResponses", {{key2, answer2}}},
             {"requestState", tampered},
             {"_meta", meta}});
    EXPECT_EQ(next()["error"]["code"], -32602);
    request(5, "tools/call",
            {{"name", "ask"},
             {"arguments", {{"twice", true}, {"message", "other"}}},
             {"requestState", state},
             {"_meta", meta}});
    EXPECT_EQ(next()["error"]["code"], -32602);
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
