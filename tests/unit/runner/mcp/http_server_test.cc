#include "runner/mcp/http_server.h"

#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>

#include "common/unique_fd.h"
#include "runner/mcp/http_rules.h"
#include "runner/mcp/oauth.h"
#include "tests/testing/fd_leak_checker.h"
#include "tests/testing/jwt_signer.h"
#include "tests/testing/matchers.h"

namespace stockade::mcp {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using testing::IsOk;

// What the tool hosts of every session share: the calls started and stopped.
struct Calls {
    std::mutex mu;
    std::condition_variable cv;
    std::size_t started = 0;
    std::size_t stopped = 0;

    // Waits until `count` calls have started (false after 5 s).
    bool wait_started(std::size_t count) {
        std::unique_lock lock(mu);
        return cv.wait_for(lock, 5s, [&] { return started >= count; });
    }
};

// Tools: block (runs until its stop token is requested, as a command runs until its process
// group is killed) and nap (returns after arguments.ms milliseconds).
class Host final : public ToolHost {
public:
    explicit Host(Calls& calls, std::string log_id = {})
        : calls_(calls), log_id_(std::move(log_id)) {}

    [[nodiscard]] std::string event_log_id() const override { return log_id_; }

    std::vector<ToolInfo> list_tools() override {
        return {ToolInfo{.name = "block",
                         .title = "Block",
                         .description = "Runs until stopped.",
                         .input_schema = json::object(),
                         .output_schema = nullptr,
                         .annotations = {}},
                ToolInfo{.name = "nap",
                         .title = "Nap",
                         .description = "Returns after a while.",
                         .input_schema = {{"type", "object"}, {"additionalProperties", true}},
                         .output_schema = nullptr,
                         .annotations = {}}};
    }

    ToolCallResult call_tool(const std::string& name, const json& arguments,
                             const CallInfo& info) override {
        {
            std::lock_guard lock(calls_.mu);
            ++calls_.started;
        }
        calls_.cv.notify_all();
        std::mutex m;
        std::condition_variable_any wait_cv;
        std::unique_lock lock(m);
        if (name == "nap") {
            wait_cv.wait_for(lock, info.stop, std::chrono::milliseconds(arguments.value("ms", 0)),
                             [] { return false; });
        } else {
            wait_cv.wait(lock, info.stop, [] { return false; });
        }
        if (info.stop.stop_requested()) {
            std::lock_guard calls_lock(calls_.mu);
            ++calls_.stopped;
        }
        return {.text = name + " done",
                .is_error = false,
                .meta = nullptr,
                .structured = nullptr,
                .unknown_tool = false};
    }

private:
    Calls& calls_;
    std::string log_id_;
};

// Tenants "t" (token "token-t", and no token at all unless `anonymous` is false: what --no-auth
// serves) and "o" (token "token-o"); the operator's token is "admin".
class Backend final : public HttpBackend {
public:
    const HttpTenant* authenticate(const std::optional<std::string>& token) override {
        if (!token) {
            return anonymous ? &tenant : nullptr;
        }
        if (*token == "token-t") {
            return &tenant;
        }
        return *token == "token-o" ? &other : nullptr;
    }
    const HttpTenant* tenant_named(std::string_view name) override {
        if (name == "t") {
            return &tenant;
        }
        return name == "o" ? &other : nullptr;
    }
    bool is_admin(const std::optional<std::string>& token) override { return token == "admin"; }
    Result<std::unique_ptr<ToolHost>> open_session(const HttpTenant& /*tenant*/,
                                                   const std::string& /*session_id*/,
                                                   const SessionRequest& /*request*/) override {
        return std::unique_ptr<ToolHost>(std::make_unique<Host>(calls, log_id));
    }
    // What a backend may add to the server (serve --pod's): set before start(), but `stop`.
    std::string ready() override { return ready_text; }
    std::optional<std::string> unavailable() override { return unavailable_reason; }
    std::string metrics() override { return "backend_metric 1\n"; }
    std::optional<AdminReply> admin(std::string_view method, std::string_view path,
                                    const std::string& body,
                                    const ServerActivity& /*activity*/) override {
        if (path != "/admin/echo") {
            return std::nullopt;
        }
        return AdminReply{
            .status = 201, .body = std::string(method) + " " + body, .content_type = "text/plain"};
    }
    std::vector<std::string> admin_endpoints() override { return {"POST /admin/echo"}; }
    std::optional<std::string> stop_reason(const ServerActivity& activity) override {
        {
            std::lock_guard lock(activity_mu);
            activities.push_back(activity);
        }
        return stop ? std::optional<std::string>("the test is done") : std::nullopt;
    }
    // What stop_reason was told, in order.
    std::vector<ServerActivity> seen() {
        std::lock_guard lock(activity_mu);
        return activities;
    }

    std::string log_id;  // what each session's host names as its event log
    std::string ready_text = "ready";
    std::optional<std::string> unavailable_reason;
    std::atomic<bool> stop{false};
    std::mutex activity_mu;
    std::vector<ServerActivity> activities;  // guarded by activity_mu
    HttpTenant tenant{.name = "t"};
    HttpTenant other{.name = "o"};
    bool anonymous = true;
    Calls calls;
};

struct Reply {
    int status = 0;  // 0: no response (closed, or nothing within the time limit)
    std::map<std::string, std::string> headers;  // names in lower case
    std::string body;                            // de-chunked

    [[nodiscard]] std::string header(const std::string& name) const {
        auto it = headers.find(name);
        return it == headers.end() ? std::string() : it->second;
    }
};

// One HTTP/1.1 connection to the server, written and read by hand: what a client sends and
// receives, byte for byte.
class Client {
public:
    explicit Client(const std::string& endpoint) {
        const auto colon = endpoint.rfind(':');
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(static_cast<std::uint16_t>(std::stoi(endpoint.substr(colon + 1))));
        ::inet_pton(AF_INET, endpoint.substr(0, colon).c_str(), &address.sin_addr);
        fd_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        connected_ = fd_.get() >= 0 && ::connect(fd_.get(), reinterpret_cast<sockaddr*>(&address),
                                                 sizeof address) == 0;
    }

    [[nodiscard]] bool connected() const { return connected_; }

    void send(const std::string& method, const std::string& body,
              const std::map<std::string, std::string>& headers,
              const std::string& target = "/mcp") {
        ASSERT_TRUE(try_send(method, body, headers, target)) << "the server closed the connection";
    }

    // The same; false when the connection is closed (the request may not have left whole).
    bool try_send(const std::string& method, const std::string& body,
                  const std::map<std::string, std::string>& headers, const std::string& target) {
        std::string text = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
        for (const auto& [name, value] : headers) {
            text += name + ": " + value + "\r\n";
        }
        if (method == "POST") {
            text += "Content-Type: application/json\r\n";
        }
        text += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
        std::string_view rest = text;
        while (!rest.empty()) {
            const ssize_t n = ::send(fd_.get(), rest.data(), rest.size(), MSG_NOSIGNAL);
            if (n <= 0) {
                return false;
            }
            rest.remove_prefix(static_cast<std::size_t>(n));
        }
        return true;
    }

    // The next whole response: its body up to its Content-Length, its last chunk, or the end
    // of the connection.
    Reply read(std::chrono::milliseconds limit = 10s) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        Reply reply;
        std::size_t head_end = std::string::npos;
        while ((head_end = buffer_.find("\r\n\r\n")) == std::string::npos) {
            if (!fill(deadline)) {
                return reply;
            }
        }
        std::string head = buffer_.substr(0, head_end);
        buffer_.erase(0, head_end + 4);
        reply.status = std::stoi(head.substr(head.find(' ') + 1, 3));
        std::size_t at = head.find("\r\n");
        while (at != std::string::npos) {
            const std::size_t next = head.find("\r\n", at + 2);
            const std::string line =
                head.substr(at + 2, next == std::string::npos ? std::string::npos : next - at - 2);
            const auto colon = line.find(':');
            std::string name = line.substr(0, colon);
            std::transform(name.begin(), name.end(), name.begin(),
                           [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
            reply.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
            at = next;
        }
        if (reply.header("transfer-encoding") == "chunked") {
            for (;;) {
                std::size_t line_end = std::string::npos;
                while ((line_end = buffer_.find("\r\n")) == std::string::npos) {
                    if (!fill(deadline)) {
                        return reply;
                    }
                }
                const std::size_t size = std::stoul(buffer_.substr(0, line_end), nullptr, 16);
                while (buffer_.size() < line_end + 2 + size + 2) {
                    if (!fill(deadline)) {
                        return reply;
                    }
                }
                reply.body += buffer_.substr(line_end + 2, size);
                buffer_.erase(0, line_end + 2 + size + 2);
                if (size == 0) {
                    return reply;
                }
            }
        }
        if (reply.headers.contains("content-length")) {
            const std::size_t size = std::stoul(reply.header("content-length"));
            while (buffer_.size() < size) {
                if (!fill(deadline)) {
                    return reply;
                }
            }
            reply.body = buffer_.substr(0, size);
            buffer_.erase(0, size);
            return reply;
        }
        while (fill(deadline)) {
        }
        reply.body = std::exchange(buffer_, {});
        return reply;
    }

    // Reads until `text` has come (false at the time limit or the end of the connection).
    bool read_until(const std::string& text, std::chrono::milliseconds limit = 5s) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (buffer_.find(text) == std::string::npos) {
            if (!fill(deadline)) {
                return false;
            }
        }
        return true;
    }

private:
    bool fill(std::chrono::steady_clock::time_point deadline) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left <= 0ms) {
            return false;
        }
        pollfd pfd{.fd = fd_.get(), .events = POLLIN, .revents = 0};
        if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) {
            return false;
        }
        char chunk[16384];
        const ssize_t n = ::recv(fd_.get(), chunk, sizeof chunk, 0);
        if (n <= 0) {
            return false;
        }
        buffer_.append(chunk, static_cast<std::size_t>(n));
        return true;
    }

    UniqueFd fd_;
    bool connected_ = false;
    std::string buffer_;
};

// The JSON-RPC messages of an SSE body (its events' data), in order; priming events (no data)
// are left out.
std::vector<json> sse_messages(const std::string& body) {
    std::vector<json> out;
    std::size_t at = 0;
    while ((at = body.find("data: ", at)) != std::string::npos) {
        const std::size_t end = body.find('\n', at);
        const std::string data = body.substr(at + 6, end - at - 6);
        if (!data.empty()) {
            out.push_back(json::parse(data));
        }
        at = end;
    }
    return out;
}

const std::map<std::string, std::string> kBoth = {
    {"Accept", "application/json, text/event-stream"}};
const std::map<std::string, std::string> kJsonOnly = {{"Accept", "application/json"}};

json rpc(const json& id, const std::string& method, json params) {
    return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

json initialize_request(const std::string& version) {
    return rpc(0, "initialize",
               {{"protocolVersion", version},
                {"capabilities", json::object()},
                {"clientInfo", {{"name", "test"}, {"version", "0"}}}});
}

json modern_meta() {
    return {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
            {"io.modelcontextprotocol/clientCapabilities", json::object()}};
}

// A real HttpServer on a loopback port, with the tool hosts above, run on a thread of its own.
class HttpServerTest : public ::testing::Test {
protected:
    // Starts the server; `drain`: how long running calls may finish after stop(); `auth`: bearer
    // tokens are checked.
    void start(std::chrono::seconds drain = 1s, bool auth = false) {
        HttpOptions options;
        options.listen = "127.0.0.1:0";
        options.auth = auth;
        options.drain = drain;
        options.drain_reserve = drain_reserve_;
        options.token_header = token_header_;
        options.oauth = oauth_;
        options.io_threads = 2;
        server_.emplace(backend_, options);
        ASSERT_THAT(server_->listen(), IsOk());
        run_ = std::thread([this] { status_ = server_->run(); });
    }

    void TearDown() override {
        if (server_) {
            stop();
            wait_stopped();
            server_.reset();
        }
    }

    void stop() {
        if (!stopping_.exchange(true)) {
            stop_asked_ = std::chrono::steady_clock::now();
            server_->request_stop();
        }
    }

    // Joins the server's thread; how long after stop() it ran.
    std::chrono::milliseconds wait_stopped() {
        if (run_.joinable()) {
            run_.join();
            ran_after_stop_ = std::chrono::duration_cast<std::chrono::milliseconds>(
                std::chrono::steady_clock::now() - stop_asked_);
            EXPECT_THAT(status_, IsOk());
        }
        return ran_after_stop_;
    }

    [[nodiscard]] std::string endpoint() const { return server_->endpoint(); }

    // A new session under `version` (with `headers`, e.g. a token): its Mcp-Session-Id.
    std::string open_session(const std::string& version = "2025-11-25",
                             std::map<std::string, std::string> headers = {}) {
        Client client(endpoint());
        EXPECT_TRUE(client.connected());
        headers.insert(kJsonOnly.begin(), kJsonOnly.end());
        client.send("POST", initialize_request(version).dump(), headers);
        Reply reply = client.read();
        EXPECT_EQ(reply.status, 200) << reply.body;
        EXPECT_EQ(json::parse(reply.body)["result"]["protocolVersion"], version);
        return reply.header("mcp-session-id");
    }

    // Waits until the session's calls, running or waiting, number `count` (/admin/sessions).
    void wait_calls(std::size_t count) {
        for (int i = 0; i < 500; ++i) {
            Client admin(endpoint());
            admin.send("GET", "", {}, "/admin/sessions");
            const Reply reply = admin.read();
            const json sessions = json::parse(reply.body, nullptr, false);
            if (reply.status == 200 && sessions.contains("sessions") &&
                sessions["sessions"].size() == 1 && sessions["sessions"][0]["calls"] == count) {
                return;
            }
            std::this_thread::sleep_for(10ms);
        }
        ADD_FAILURE() << "the session never had " << count << " calls";
    }

    // Waits until the server says it is draining (/readyz 503).
    void wait_draining() {
        for (int i = 0; i < 200; ++i) {
            // A probe the listener closes on (refused, or reset from its backlog) or answers
            // with 503 finds it draining.
            Client probe(endpoint());
            if (!probe.connected() || !probe.try_send("GET", "", {}, "/readyz") ||
                probe.read().status != 200) {
                return;
            }
            std::this_thread::sleep_for(10ms);
        }
        ADD_FAILURE() << "the server never started draining";
    }

    // Set before start(): HttpOptions::drain_reserve, token_header and oauth.
    std::chrono::milliseconds drain_reserve_{0};
    bool token_header_ = false;
    std::shared_ptr<ResourceServer> oauth_;
    testing::FdLeakChecker fd_leak_checker_;
    Backend backend_;
    std::optional<HttpServer> server_;
    std::thread run_;
    Status status_;
    std::atomic<bool> stopping_{false};
    std::chrono::steady_clock::time_point stop_asked_;
    std::chrono::milliseconds ran_after_stop_{0};
};

// The error that answers a call the drain stopped, after a drain that gave calls `drain` seconds.
void expect_shutdown_error(const json& message, const json& id, const std::string& drain = "1") {
    EXPECT_EQ(message["jsonrpc"], "2.0");
    EXPECT_EQ(message["id"], id) << message;
    EXPECT_EQ(message["error"]["code"], -32603) << message;
    const std::string text = message["error"]["message"].get<std::string>();
    EXPECT_NE(text.find("shutting down"), std::string::npos) << text;
    EXPECT_NE(
        text.find("was still running when the " + drain + " s given to running calls ran out"),
        std::string::npos)
        << text;
    EXPECT_NE(text.find("Retry it in a new session once the server is back"), std::string::npos)
        << text;
}

TEST_F(HttpServerTest, DrainStopsACallStillRunningAndAnswersItOnItsStream) {
    start();
    const std::string session = open_session();
    Client client(endpoint());
    client.send("POST", rpc(7, "tools/call", {{"name", "block"}}).dump(),
                {{"Accept", "application/json, text/event-stream"}, {"Mcp-Session-Id", session}});
    ASSERT_TRUE(backend_.calls.wait_started(1));
    stop();
    Reply reply = client.read();
    ASSERT_EQ(reply.status, 200);
    EXPECT_EQ(reply.header("content-type"), "text/event-stream");
    const std::vector<json> messages = sse_messages(reply.body);
    ASSERT_EQ(messages.size(), 1U) << reply.body;
    expect_shutdown_error(messages[0], 7);
    EXPECT_EQ(backend_.calls.stopped, 1U) << "the call was stopped, not left to run";
    EXPECT_LT(wait_stopped(), 6s);
}

TEST_F(HttpServerTest, DrainAnswersAJsonOnlyCallWithTheErrorAsItsResponse) {
    start();
    const std::string session = open_session();
    Client client(endpoint());
    client.send("POST", rpc("j", "tools/call", {{"name", "block"}}).dump(),
                {{"Accept", "application/json"}, {"Mcp-Session-Id", session}});
    ASSERT_TRUE(backend_.calls.wait_started(1));
    stop();
    Reply reply = client.read();
    EXPECT_EQ(reply.status, 200) << "a 2025 client reads a JSON-RPC error in a 200";
    EXPECT_EQ(reply.header("content-type"), "application/json");
    expect_shutdown_error(json::parse(reply.body), "j");
    EXPECT_EQ(backend_.calls.stopped, 1U);
}

TEST_F(HttpServerTest, DrainAnswersAStatelessCallWith503) {
    start();
    Client sse(endpoint());
    Client plain(endpoint());
    const std::map<std::string, std::string> modern = {{"MCP-Protocol-Version", "2026-07-28"},
                                                       {"Mcp-Method", "tools/call"},
                                                       {"Mcp-Name", "block"}};
    auto with = [&](const std::map<std::string, std::string>& accept) {
        std::map<std::string, std::string> headers = modern;
        headers.insert(accept.begin(), accept.end());
        return headers;
    };
    sse.send("POST", rpc(1, "tools/call", {{"name", "block"}, {"_meta", modern_meta()}}).dump(),
             with(kBoth));
    plain.send("POST", rpc(2, "tools/call", {{"name", "block"}, {"_meta", modern_meta()}}).dump(),
               with(kJsonOnly));
    ASSERT_TRUE(backend_.calls.wait_started(2));
    stop();
    Reply streamed = sse.read();
    ASSERT_EQ(streamed.status, 200);
    const std::vector<json> messages = sse_messages(streamed.body);
    ASSERT_EQ(messages.size(), 1U) << streamed.body;
    expect_shutdown_error(messages[0], 1);
    Reply reply = plain.read();
    EXPECT_EQ(reply.status, 503);
    EXPECT_EQ(reply.header("retry-after"), "5");
    expect_shutdown_error(json::parse(reply.body), 2);
    EXPECT_EQ(backend_.calls.stopped, 2U);
}

TEST_F(HttpServerTest, DrainAnswersACallStillWaitingToRunToo) {
    backend_.tenant.max_calls = 1;
    start();
    const std::string session = open_session();
    Client running(endpoint());
    Client waiting(endpoint());
    const std::map<std::string, std::string> headers = {{"Accept", "application/json"},
                                                        {"Mcp-Session-Id", session}};
    running.send("POST", rpc(1, "tools/call", {{"name", "block"}}).dump(), headers);
    ASSERT_TRUE(backend_.calls.wait_started(1));
    waiting.send("POST", rpc(2, "tools/call", {{"name", "block"}}).dump(), headers);
    wait_calls(2);
    stop();
    expect_shutdown_error(json::parse(running.read().body), 1);
    expect_shutdown_error(json::parse(waiting.read().body), 2);
    EXPECT_EQ(backend_.calls.started, 1U) << "the waiting call never ran";
}

TEST_F(HttpServerTest, ACallThatEndsWithinTheDrainGetsItsResult) {
    start(10s);
    const std::string session = open_session();
    Client client(endpoint());
    client.send("POST",
                rpc(3, "tools/call", {{"name", "nap"}, {"arguments", {{"ms", 300}}}}).dump(),
                {{"Accept", "application/json"}, {"Mcp-Session-Id", session}});
    ASSERT_TRUE(backend_.calls.wait_started(1));
    stop();
    Reply reply = client.read();
    ASSERT_EQ(reply.status, 200);
    const json message = json::parse(reply.body);
    EXPECT_EQ(message["result"]["content"][0]["text"], "nap done") << message;
    EXPECT_EQ(backend_.calls.stopped, 0U);
    EXPECT_LT(wait_stopped(), 5s) << "the drain ends when the last call does";
}

TEST_F(HttpServerTest, NewSessionsAndCallsWhileDrainingAreRefusedWith503) {
    start(3s);
    const std::string session = open_session();
    // Connections opened before the drain: the listener closes when it begins.
    Client call_client(endpoint());
    Client init_client(endpoint());
    Client modern_client(endpoint());
    Client list_client(endpoint());
    Client running(endpoint());
    running.send("POST", rpc(1, "tools/call", {{"name", "block"}}).dump(),
                 {{"Accept", "application/json"}, {"Mcp-Session-Id", session}});
    ASSERT_TRUE(backend_.calls.wait_started(1));
    stop();
    wait_draining();
    bool closed = false;
    for (int i = 0; i < 100 && !closed; ++i) {
        closed = !Client(endpoint()).connected();
        std::this_thread::sleep_for(10ms);
    }
    EXPECT_TRUE(closed) << "the listener is closed";

    call_client.send("POST", rpc(2, "tools/call", {{"name", "nap"}}).dump(),
                     {{"Accept", "application/json"}, {"Mcp-Session-Id", session}});
    Reply refused = call_client.read();
    EXPECT_EQ(refused.status, 503);
    EXPECT_EQ(refused.header("retry-after"), "5");
    EXPECT_EQ(refused.header("connection"), "close");
    const json error = json::parse(refused.body);
    EXPECT_EQ(error["id"], 2);
    EXPECT_EQ(error["error"]["code"], -32603);
    EXPECT_EQ(error["error"]["message"],
              "Stockade is shutting down and takes no new sessions or tool calls. Retry in a new "
              "session once the server is back, or on another server.");

    init_client.send("POST", initialize_request("2025-11-25").dump(), kJsonOnly);
    EXPECT_EQ(init_client.read().status, 503);
    modern_client.send("POST", rpc(3, "tools/list", {{"_meta", modern_meta()}}).dump(),
                       {{"Accept", "application/json"},
                        {"MCP-Protocol-Version", "2026-07-28"},
                        {"Mcp-Method", "tools/list"}});
    EXPECT_EQ(modern_client.read().status, 503);
    // What is not new work is still served in a session that is draining.
    list_client.send("POST", rpc(4, "tools/list", json::object()).dump(),
                     {{"Accept", "application/json"}, {"Mcp-Session-Id", session}});
    Reply listed = list_client.read();
    EXPECT_EQ(listed.status, 200);
    EXPECT_EQ(json::parse(listed.body)["result"]["tools"].size(), 2U);

    expect_shutdown_error(json::parse(running.read().body), 1, "3");
}

TEST_F(HttpServerTest, ADrainWithAReserveIsOverWithinTheDrainAndGivesCallsTheRest) {
    drain_reserve_ = 1500ms;
    start(3s);
    const std::string session = open_session();
    Client client(endpoint());
    client.send("POST", rpc(1, "tools/call", {{"name", "block"}}).dump(),
                {{"Accept", "application/json"}, {"Mcp-Session-Id", session}});
    ASSERT_TRUE(backend_.calls.wait_started(1));
    stop();
    expect_shutdown_error(json::parse(client.read().body), 1, "1.5");
    const auto ran = wait_stopped();
    EXPECT_GE(ran, 1500ms) << "calls had their share";
    EXPECT_LT(ran, 3s) << "the whole drain is within --drain";
}

TEST_F(HttpServerTest, TheServerDrainsAndStopsWhenItsBackendSaysWhy) {
    start(1s);
    const std::string session = open_session();
    Client client(endpoint());
    client.send("POST", rpc(1, "tools/call", {{"name", "block"}}).dump(),
                {{"Accept", "application/json"}, {"Mcp-Session-Id", session}});
    ASSERT_TRUE(backend_.calls.wait_started(1));
    stop_asked_ = std::chrono::steady_clock::now();
    backend_.stop = true;
    expect_shutdown_error(json::parse(client.read().body), 1);
    run_.join();  // run() returned without stop()
    EXPECT_THAT(status_, IsOk());
    EXPECT_LT(std::chrono::steady_clock::now() - stop_asked_, 5s);
    const std::vector<ServerActivity> seen = backend_.seen();
    ASSERT_FALSE(seen.empty());
    EXPECT_EQ(seen.back().sessions, 1U);
    EXPECT_FALSE(seen.back().draining);
}

// ---- protocol revisions over HTTP --------------------------------------------------------

TEST_F(HttpServerTest, OlderRevisionsInTheProtocolVersionHeaderAreServed) {
    start();
    for (const std::string version : {"2025-03-26", "2024-11-05"}) {
        const std::string session = open_session(version);
        Client client(endpoint());
        client.send("POST", rpc(1, "tools/list", json::object()).dump(),
                    {{"Accept", "application/json"},
                     {"Mcp-Session-Id", session},
                     {"MCP-Protocol-Version", version}});
        Reply reply = client.read();
        EXPECT_EQ(reply.status, 200) << version << ": " << reply.body;
        EXPECT_EQ(json::parse(reply.body)["result"]["tools"].size(), 2U) << version;
    }
    const std::string session = open_session();
    Client client(endpoint());
    client.send("POST", rpc(1, "tools/list", json::object()).dump(),
                {{"Accept", "application/json"},
                 {"Mcp-Session-Id", session},
                 {"MCP-Protocol-Version", "2024-10-07"}});
    Reply refused = client.read();
    EXPECT_EQ(refused.status, 400) << "a revision we do not serve";
    EXPECT_EQ(json::parse(refused.body)["error"]["message"],
              "Unsupported MCP-Protocol-Version \"2024-10-07\".");
}

TEST_F(HttpServerTest, StreamsBegin20251125WithAPrimingEventAndEarlierRevisionsWithoutOne) {
    start();
    for (const std::string version : {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}) {
        const std::string session = open_session(version);
        Client client(endpoint());
        client.send(
            "POST", rpc(1, "tools/call", {{"name", "nap"}}).dump(),
            {{"Accept", "application/json, text/event-stream"}, {"Mcp-Session-Id", session}});
        Reply reply = client.read();
        ASSERT_EQ(reply.status, 200) << version;
        const bool primed = reply.body.starts_with("id: ") &&
                            reply.body.find("\nretry: 1000\ndata: \n\n") != std::string::npos;
        EXPECT_EQ(primed, version == "2025-11-25") << version << ":\n" << reply.body;
        const bool empty_data = reply.body.find("data: \n") != std::string::npos;
        EXPECT_EQ(empty_data, version == "2025-11-25") << version << ":\n" << reply.body;
        ASSERT_EQ(sse_messages(reply.body).size(), 1U) << reply.body;
        EXPECT_EQ(sse_messages(reply.body)[0]["result"]["content"][0]["text"], "nap done");
    }
}

// ---- routing, authentication and the session lifecycle -----------------------------------

// One request on a connection of its own: its response.
Reply exchange(const std::string& endpoint, const std::string& method, const std::string& body,
               const std::map<std::string, std::string>& headers,
               const std::string& target = "/mcp") {
    Client client(endpoint);
    EXPECT_TRUE(client.connected());
    client.send(method, body, headers, target);
    return client.read();
}

std::map<std::string, std::string> with_token(const std::string& token,
                                              std::map<std::string, std::string> headers) {
    headers["Authorization"] = "Bearer " + token;
    return headers;
}

std::map<std::string, std::string> in_session(const std::string& session,
                                              std::map<std::string, std::string> headers) {
    headers["Mcp-Session-Id"] = session;
    return headers;
}

const std::string kToolsList = rpc(5, "tools/list", json::object()).dump();

TEST_F(HttpServerTest, ARequestWithoutAValidTokenIsRefusedWith401) {
    backend_.anonymous = false;
    start(1s, /*auth=*/true);
    Reply missing =
        exchange(endpoint(), "POST", initialize_request("2025-11-25").dump(), kJsonOnly);
    EXPECT_EQ(missing.status, 401);
    EXPECT_EQ(missing.header("www-authenticate"), R"(Bearer realm="stockade")");
    EXPECT_EQ(missing.body,
              "This server needs a bearer token: send Authorization: Bearer TOKEN.\n");
    Reply wrong = exchange(endpoint(), "POST", initialize_request("2025-11-25").dump(),
                           with_token("nobody", kJsonOnly));
    EXPECT_EQ(wrong.status, 401);
    EXPECT_EQ(wrong.header("www-authenticate"),
              R"(Bearer realm="stockade", error="invalid_token")");
    Reply malformed = exchange(endpoint(), "POST", initialize_request("2025-11-25").dump(),
                               {{"Accept", "application/json"}, {"Authorization", "Basic eDp5"}});
    EXPECT_EQ(malformed.status, 401) << "not a bearer token";
    EXPECT_EQ(open_session("2025-11-25", with_token("token-t", {})).size(), 64U);
}

TEST_F(HttpServerTest, MetricsAndAdminEndpointsAreTheOperatorsOnly) {
    start(1s, /*auth=*/true);
    const std::string session = open_session("2025-11-25", with_token("token-t", {}));
    for (const std::string target : {"/metrics", "/admin/sessions"}) {
        EXPECT_EQ(exchange(endpoint(), "GET", "", {}, target).status, 401) << target;
        EXPECT_EQ(exchange(endpoint(), "GET", "", with_token("token-t", {}), target).status, 401)
            << "a tenant's token is not the operator's: " << target;
    }
    EXPECT_EQ(
        exchange(endpoint(), "DELETE", "", with_token("token-t", {}), "/admin/sessions/" + session)
            .status,
        401);
    Reply metrics = exchange(endpoint(), "GET", "", with_token("admin", {}), "/metrics");
    ASSERT_EQ(metrics.status, 200);
    EXPECT_EQ(metrics.header("content-type"), "text/plain; version=0.0.4");
    EXPECT_NE(metrics.body.find("stockade_sessions{tenant=\"t\"} 1\n"), std::string::npos)
        << metrics.body;
    EXPECT_NE(metrics.body.find("stockade_sessions_opened_total{tenant=\"t\",result=\"ok\"} 1\n"),
              std::string::npos);
    EXPECT_NE(metrics.body.find("stockade_http_requests_total{method=\"GET\",status=\"401\"} 4\n"),
              std::string::npos)
        << metrics.body;
    Reply sessions = exchange(endpoint(), "GET", "", with_token("admin", {}), "/admin/sessions");
    ASSERT_EQ(sessions.status, 200);
    const json listed = json::parse(sessions.body);
    ASSERT_EQ(listed["sessions"].size(), 1U);
    EXPECT_EQ(listed["sessions"][0]["id"], session);
    EXPECT_EQ(listed["sessions"][0]["tenant"], "t");
}

TEST_F(HttpServerTest, InitializeAndTheSessionListNameTheEventLogAndCountCallsMade) {
    backend_.log_id = "s-0123456789ab";
    start();
    Reply opened = exchange(endpoint(), "POST", initialize_request("2025-11-25").dump(), kJsonOnly);
    ASSERT_EQ(opened.status, 200);
    EXPECT_EQ(json::parse(opened.body)["result"]["_meta"]["dev.stockade/session"]["event_log_id"],
              "s-0123456789ab")
        << opened.body;
    const std::string session = opened.header("mcp-session-id");
    for (int i = 0; i < 3; ++i) {
        Reply done = exchange(
            endpoint(), "POST",
            rpc(10 + i, "tools/call", {{"name", "nap"}, {"arguments", {{"ms", 0}}}}).dump(),
            in_session(session, kJsonOnly));
        ASSERT_EQ(done.status, 200) << done.body;
    }
    Reply listed = exchange(endpoint(), "GET", "", {}, "/admin/sessions");
    ASSERT_EQ(listed.status, 200) << listed.body;
    const json sessions = json::parse(listed.body)["sessions"];
    ASSERT_EQ(sessions.size(), 1U) << listed.body;
    EXPECT_EQ(sessions[0]["log_id"], "s-0123456789ab");
    EXPECT_EQ(sessions[0]["calls_made"], 3) << "every call made, not only those running";
    EXPECT_EQ(sessions[0]["calls"], 0) << "none running now";
}

TEST_F(HttpServerTest, InitializeOpensASessionThatLaterRequestsFind) {
    start();
    Reply opened = exchange(endpoint(), "POST", initialize_request("2025-11-25").dump(), kJsonOnly);
    ASSERT_EQ(opened.status, 200);
    const std::string session = opened.header("mcp-session-id");
    EXPECT_TRUE(http::is_session_id(session)) << session;
    Reply listed = exchange(endpoint(), "POST", kToolsList, in_session(session, kJsonOnly));
    EXPECT_EQ(listed.status, 200) << listed.body;
    EXPECT_EQ(json::parse(listed.body)["result"]["tools"].size(), 2U);
    EXPECT_EQ(listed.header("mcp-session-id"), "") << "only initialize names the session";
    Reply no_session = exchange(endpoint(), "POST", kToolsList, kJsonOnly);
    EXPECT_EQ(no_session.status, 400);
    EXPECT_NE(no_session.body.find("no Mcp-Session-Id header"), std::string::npos);
    EXPECT_NE(exchange(endpoint(), "POST", initialize_request("2025-11-25").dump(), kJsonOnly)
                  .header("mcp-session-id"),
              session)
        << "each initialize opens a session of its own";
}

TEST_F(HttpServerTest, AnotherTenantsSessionIdIsNotFoundLikeAnUnknownOne) {
    start(1s, /*auth=*/true);
    const std::string session = open_session("2025-11-25", with_token("token-t", {}));
    ASSERT_EQ(session.size(), 64U);
    const std::string unknown = http::new_session_id();
    Reply theirs = exchange(endpoint(), "POST", kToolsList,
                            in_session(session, with_token("token-o", kJsonOnly)));
    Reply nobodys = exchange(endpoint(), "POST", kToolsList,
                             in_session(unknown, with_token("token-o", kJsonOnly)));
    EXPECT_EQ(theirs.status, 404);
    EXPECT_EQ(json::parse(theirs.body),
              json::parse(R"({"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":
                  "Session not found: it ended, or never existed. Start a new one with initialize."}})"));
    EXPECT_EQ(theirs.body, nobodys.body) << "nothing tells that the session exists";
    EXPECT_EQ(theirs.status, nobodys.status);

    const auto sse = in_session(session, with_token("token-o", {{"Accept", "text/event-stream"}}));
    Reply get = exchange(endpoint(), "GET", "", sse);
    EXPECT_EQ(get.status, 404);
    EXPECT_EQ(get.body, "Session not found.\n");
    Reply removed =
        exchange(endpoint(), "DELETE", "", in_session(session, with_token("token-o", {})));
    EXPECT_EQ(removed.status, 404);
    EXPECT_EQ(removed.body, "Session not found.\n");

    Reply owner = exchange(endpoint(), "POST", kToolsList,
                           in_session(session, with_token("token-t", kJsonOnly)));
    EXPECT_EQ(owner.status, 200) << "the other tenant's DELETE did not end it: " << owner.body;
}

TEST_F(HttpServerTest, DeleteEndsTheSession) {
    start();
    const std::string session = open_session();
    EXPECT_EQ(exchange(endpoint(), "DELETE", "", in_session(session, {})).status, 204);
    Reply after = exchange(endpoint(), "POST", kToolsList, in_session(session, kJsonOnly));
    EXPECT_EQ(after.status, 404);
    EXPECT_EQ(exchange(endpoint(), "DELETE", "", in_session(session, {})).status, 404);
}

TEST_F(HttpServerTest, TheOperatorEndsASessionAndAnswersItsRunningCall) {
    start();
    const std::string session = open_session();
    Client client(endpoint());
    client.send("POST", rpc(9, "tools/call", {{"name", "block"}}).dump(),
                in_session(session, kJsonOnly));
    ASSERT_TRUE(backend_.calls.wait_started(1));
    Reply ended = exchange(endpoint(), "DELETE", "", {}, "/admin/sessions/" + session);
    EXPECT_EQ(ended.status, 202);
    const json answer = json::parse(client.read().body);
    EXPECT_EQ(answer["id"], 9);
    EXPECT_NE(answer["error"]["message"].get<std::string>().find("The operator ended this session"),
              std::string::npos)
        << answer;
    EXPECT_EQ(exchange(endpoint(), "DELETE", "", {}, "/admin/sessions/" + session).status, 404);
}

TEST_F(HttpServerTest, AnIdleSessionIsReapedAfterItsIdleTtl) {
    backend_.tenant.idle_ttl = 1s;
    start();
    const std::string session = open_session();
    // The reaper looks every second: the session goes between 1 and 3 s from its last use.
    Reply found = exchange(endpoint(), "POST", kToolsList, in_session(session, kJsonOnly));
    ASSERT_EQ(found.status, 200) << "not reaped while in use";
    const auto used = std::chrono::steady_clock::now();
    bool listed = true;
    while (listed && std::chrono::steady_clock::now() - used < 5s) {
        std::this_thread::sleep_for(100ms);
        Reply admin = exchange(endpoint(), "GET", "", {}, "/admin/sessions");
        listed = !json::parse(admin.body)["sessions"].empty();
    }
    EXPECT_GE(std::chrono::steady_clock::now() - used, 1s) << "not before its idle TTL";
    Reply after = exchange(endpoint(), "POST", kToolsList, in_session(session, kJsonOnly));
    EXPECT_EQ(after.status, 404) << "reaped";
}

TEST_F(HttpServerTest, ASessionEndsAtItsMaxLifetimeAndItsRunningCallIsAnswered) {
    backend_.tenant.max_lifetime = 1s;
    start();
    const std::string session = open_session();
    Client client(endpoint());
    client.send("POST", rpc(4, "tools/call", {{"name", "block"}}).dump(),
                in_session(session, kJsonOnly));
    ASSERT_TRUE(backend_.calls.wait_started(1));
    Reply reply = client.read(5s);
    ASSERT_EQ(reply.status, 200);
    const json answer = json::parse(reply.body);
    EXPECT_EQ(answer["id"], 4);
    EXPECT_EQ(answer["error"]["code"], -32603);
    EXPECT_NE(answer["error"]["message"].get<std::string>().find(
                  "This session reached its maximum lifetime (1 s) while this call was running"),
              std::string::npos)
        << answer;
    EXPECT_EQ(backend_.calls.stopped, 1U);
    EXPECT_EQ(exchange(endpoint(), "POST", kToolsList, in_session(session, kJsonOnly)).status, 404);
}

TEST_F(HttpServerTest, TheBackendIsToldOfSessionsAndOfTheLatestRequestATokenLetIn) {
    backend_.anonymous = false;
    start(1s, /*auth=*/true);
    const auto started = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(1100ms);
    const auto before = backend_.seen();
    ASSERT_FALSE(before.empty());
    EXPECT_LE(before.back().last_request, started) << "nothing came yet: the server's start";
    EXPECT_EQ(before.back().sessions, 0U);
    EXPECT_EQ(exchange(endpoint(), "GET", "", {}, "/readyz").status, 200);
    EXPECT_EQ(exchange(endpoint(), "POST", kToolsList, with_token("nobody", kJsonOnly)).status,
              401);
    std::this_thread::sleep_for(1100ms);
    EXPECT_LE(backend_.seen().back().last_request, started)
        << "neither a probe nor a refused token is a tenant's request";
    const auto opened = std::chrono::steady_clock::now();
    const std::string session = open_session("2025-11-25", with_token("token-t", {}));
    std::this_thread::sleep_for(1100ms);
    const ServerActivity after = backend_.seen().back();
    EXPECT_GE(after.last_request, opened);
    EXPECT_EQ(after.sessions, 1U);
    EXPECT_GE(after.now, after.last_request);
}

TEST_F(HttpServerTest, ABackendThatCannotServeYetRefusesMcpWith503WhateverTheToken) {
    backend_.anonymous = false;
    backend_.unavailable_reason = "Not bound yet; bind me first.";
    backend_.ready_text = "ready, unbound";
    start(1s, /*auth=*/true);
    for (const auto& headers : {kJsonOnly, with_token("token-t", kJsonOnly)}) {
        Reply refused =
            exchange(endpoint(), "POST", initialize_request("2025-11-25").dump(), headers);
        EXPECT_EQ(refused.status, 503);
        EXPECT_EQ(refused.body, "Not bound yet; bind me first.\n");
        EXPECT_EQ(refused.header("retry-after"), "5");
    }
    Reply ready = exchange(endpoint(), "GET", "", {}, "/readyz");
    EXPECT_EQ(ready.status, 200);
    EXPECT_EQ(ready.body, "ready, unbound\n");
    EXPECT_EQ(exchange(endpoint(), "GET", "", with_token("admin", {}), "/admin/sessions").status,
              200)
        << "the operator's endpoints are served";
}

TEST_F(HttpServerTest, TheStockadeTokenHeaderCarriesTheTokenWhenTheServerTakesIt) {
    backend_.anonymous = false;
    token_header_ = true;
    start(1s, /*auth=*/true);
    EXPECT_EQ(open_session("2025-11-25", {{"Stockade-Token", "token-t"}}).size(), 64U);
    EXPECT_EQ(open_session("2025-11-25", {{"Stockade-Token", " token-t "}}).size(), 64U)
        << "the spaces around a header value are not the token";
    EXPECT_EQ(open_session("2025-11-25", with_token("token-t", {})).size(), 64U)
        << "Authorization still works";
    Reply ours_first = exchange(
        endpoint(), "POST", initialize_request("2025-11-25").dump(),
        with_token("token-t", {{"Accept", "application/json"}, {"Stockade-Token", "nobody"}}));
    EXPECT_EQ(ours_first.status, 401) << "Stockade-Token wins over Authorization";
    Reply empty = exchange(endpoint(), "POST", initialize_request("2025-11-25").dump(),
                           {{"Accept", "application/json"}, {"Stockade-Token", ""}});
    EXPECT_EQ(empty.status, 401);
    Reply missing =
        exchange(endpoint(), "POST", initialize_request("2025-11-25").dump(), kJsonOnly);
    EXPECT_EQ(missing.status, 401);
    EXPECT_EQ(missing.body,
              "This server needs a bearer token: send Authorization: Bearer TOKEN, or "
              "Stockade-Token: TOKEN.\n");
    EXPECT_EQ(exchange(endpoint(), "GET", "", {{"Stockade-Token", "admin"}}, "/metrics").status,
              200)
        << "the operator's token too";
}

TEST_F(HttpServerTest, TheStockadeTokenHeaderIsNoTokenUnlessTheServerTakesIt) {
    backend_.anonymous = false;
    start(1s, /*auth=*/true);
    Reply refused = exchange(endpoint(), "POST", initialize_request("2025-11-25").dump(),
                             {{"Accept", "application/json"}, {"Stockade-Token", "token-t"}});
    EXPECT_EQ(refused.status, 401);
    EXPECT_EQ(refused.body,
              "This server needs a bearer token: send Authorization: Bearer TOKEN.\n");
}

TEST_F(HttpServerTest, TheBackendsOwnAdminEndpointsAreTheOperatorsOnly) {
    start(1s, /*auth=*/true);
    EXPECT_EQ(exchange(endpoint(), "POST", "hi", with_token("token-t", {}), "/admin/echo").status,
              401);
    Reply echoed = exchange(endpoint(), "POST", "hi", with_token("admin", {}), "/admin/echo");
    EXPECT_EQ(echoed.status, 201);
    EXPECT_EQ(echoed.header("content-type"), "text/plain");
    EXPECT_EQ(echoed.body, "POST hi");
    Reply unknown = exchange(endpoint(), "GET", "", with_token("admin", {}), "/admin/other");
    EXPECT_EQ(unknown.status, 404);
    EXPECT_EQ(unknown.body,
              "Not found. Operator endpoints: GET /metrics, GET /admin/sessions, DELETE "
              "/admin/sessions/ID, POST /admin/sessions/ID/rewind, POST /admin/echo.\n");
    Reply metrics = exchange(endpoint(), "GET", "", with_token("admin", {}), "/metrics");
    EXPECT_NE(metrics.body.find("\nbackend_metric 1\n"), std::string::npos) << metrics.body;
}

TEST_F(HttpServerTest, ATenantsSessionsAreBoundedByMaxSessions) {
    backend_.tenant.max_sessions = 1;
    start();
    (void)open_session();
    Reply refused =
        exchange(endpoint(), "POST", initialize_request("2025-11-25").dump(), kJsonOnly);
    EXPECT_EQ(refused.status, 429);
    EXPECT_EQ(refused.header("retry-after"), "10");
    EXPECT_NE(refused.body.find("This tenant has 1 sessions open, its limit."), std::string::npos)
        << refused.body;
}

// ---- serve --oauth -----------------------------------------------------------------------------

// The server as an OAuth resource server for https://mcp.example.com/acme/mcp, over a JWKS of an
// RSA key made by openssl (tests/testing/jwt_signer.h).
class OAuthServerTest : public HttpServerTest {
protected:
    static void SetUpTestSuite() {
        dir_ =
            new std::string(std::filesystem::temp_directory_path() / "stockade-http-oauth-XXXXXX");
        if (::mkdtemp(dir_->data()) != nullptr) {
            key_ = testing::TestKey::generate(testing::TestKey::Kind::kRsa2048, *dir_, "k1", why_);
        }
    }

    static void TearDownTestSuite() {
        std::error_code ignored;
        std::filesystem::remove_all(*dir_, ignored);
        delete dir_;
    }

    void SetUp() override {
        if (!key_) {
            GTEST_SKIP() << *why_;
        }
        const std::string jwks = *dir_ + "/jwks.json";
        std::ofstream(jwks) << json{{"keys", {key_->jwk()}}}.dump();
        auto server =
            ResourceServer::open(OAuthConfig{.issuer = "https://auth.example.com",
                                             .resource = "https://mcp.example.com/acme/mcp",
                                             .audience = "https://mcp.example.com/acme/mcp",
                                             .jwks_file = jwks,
                                             .authorization_servers = {"https://auth.example.com"},
                                             .scopes_supported = {"mcp:tools"},
                                             .required_scope = "mcp:tools"});
        ASSERT_THAT(server, IsOk());
        oauth_ = std::move(server).value();
        backend_.anonymous = false;
        start(1s, /*auth=*/true);
    }

    // An access token of `tenant`, changed by `edit`.
    static std::string token(const std::string& tenant,
                             const std::function<void(json&)>& edit = {}) {
        const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
        json claims = {{"iss", "https://auth.example.com"},
                       {"aud", "https://mcp.example.com/acme/mcp"},
                       {"exp", now + 300},
                       {"sub", "alice"},
                       {"jti", "j1"},
                       {"stockade_tenant", tenant},
                       {"scope", "mcp:tools"}};
        if (edit) {
            edit(claims);
        }
        return key_->token(claims);
    }

    static constexpr const char* kMetadataUrl =
        "https://mcp.example.com/.well-known/oauth-protected-resource/acme/mcp";

    static inline std::string* dir_ = nullptr;
    static inline std::string* why_ = new std::string("no temporary directory");
    static inline std::optional<testing::TestKey> key_;
};

TEST_F(OAuthServerTest, TheMetadataIsServedWithoutATokenAtEachWellKnownPath) {
    for (const std::string path :
         {"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp",
          "/.well-known/oauth-protected-resource/acme/mcp"}) {
        Reply reply = exchange(endpoint(), "GET", "", {}, path);
        EXPECT_EQ(reply.status, 200) << path;
        EXPECT_EQ(reply.header("content-type"), "application/json");
        EXPECT_EQ(json::parse(reply.body),
                  json::parse(R"({"resource": "https://mcp.example.com/acme/mcp",
                                  "authorization_servers": ["https://auth.example.com"],
                                  "scopes_supported": ["mcp:tools"],
                                  "bearer_methods_supported": ["header"]})"));
    }
    EXPECT_EQ(
        exchange(endpoint(), "POST", "{}", {}, "/.well-known/oauth-protected-resource").status,
        405);
    EXPECT_EQ(exchange(endpoint(), "GET", "", {}, "/.well-known/oauth-protected-resource/x").status,
              404);
}

TEST_F(OAuthServerTest, ARequestWithoutATokenIsToldWhereTheMetadataIs) {
    const std::string challenge =
        std::string(R"(Bearer resource_metadata=")") + kMetadataUrl + R"(", scope="mcp:tools")";
    Reply missing =
        exchange(endpoint(), "POST", initialize_request("2025-11-25").dump(), kJsonOnly);
    EXPECT_EQ(missing.status, 401);
    EXPECT_EQ(missing.header("www-authenticate"), challenge);
    EXPECT_THAT(missing.body, ::testing::HasSubstr("needs an OAuth access token"));
    Reply basic = exchange(endpoint(), "POST", initialize_request("2025-11-25").dump(),
                           {{"Accept", "application/json"}, {"Authorization", "Basic eDp5"}});
    EXPECT_EQ(basic.status, 401) << "another scheme is no token";
    EXPECT_EQ(basic.header("www-authenticate"), challenge);
    Reply get = exchange(endpoint(), "GET", "", {{"Accept", "text/event-stream"}});
    EXPECT_EQ(get.status, 401);
    EXPECT_EQ(get.header("www-authenticate"), challenge);
}

TEST_F(OAuthServerTest, AnAccessTokenOpensASessionOfTheTenantItNames) {
    const std::string session = open_session("2025-11-25", with_token(token("t"), {}));
    ASSERT_EQ(session.size(), 64U);
    Reply listed = exchange(endpoint(), "POST", kToolsList,
                            in_session(session, with_token(token("t"), kJsonOnly)));
    EXPECT_EQ(listed.status, 200) << listed.body;
    Reply other = exchange(endpoint(), "POST", kToolsList,
                           in_session(session, with_token(token("o"), kJsonOnly)));
    EXPECT_EQ(other.status, 404) << "another tenant's token does not find it";
    Reply sessions = exchange(endpoint(), "GET", "", with_token("admin", {}), "/admin/sessions");
    EXPECT_EQ(json::parse(sessions.body)["sessions"][0]["tenant"], "t");
}

TEST_F(OAuthServerTest, RefusedTokensGet401AndATokenWithoutTheScopeGets403) {
    auto refused = [&](const std::string& bearer) {
        return exchange(endpoint(), "POST", initialize_request("2025-11-25").dump(),
                        with_token(bearer, kJsonOnly));
    };
    const auto challenge = [](const std::string& error, const std::string& description) {
        return std::string(R"(Bearer resource_metadata=")") + kMetadataUrl + R"(", error=")" +
               error + R"(", error_description=")" + description + R"(", scope="mcp:tools")";
    };
    Reply expired = refused(token("t", [](json& c) { c["exp"] = 1'000'000'000; }));
    EXPECT_EQ(expired.status, 401);
    EXPECT_EQ(expired.header("www-authenticate"),
              challenge("invalid_token", "the token has expired"));
    Reply audience = refused(token("t", [](json& c) { c["aud"] = "https://mcp.example.com/mcp"; }));
    EXPECT_EQ(audience.status, 401);
    EXPECT_EQ(audience.header("www-authenticate"),
              challenge("invalid_token",
                        "the token was not issued for this server (aud does not name it)"));
    Reply unknown = refused(token("nobody"));
    EXPECT_EQ(unknown.status, 401);
    EXPECT_EQ(
        unknown.header("www-authenticate"),
        challenge("invalid_token", "the tenant the token names is not a tenant of this server"));
    Reply garbage = refused("not-a-jwt");
    EXPECT_EQ(garbage.status, 401);
    Reply scope = refused(token("t", [](json& c) { c["scope"] = "profile"; }));
    EXPECT_EQ(scope.status, 403);
    EXPECT_EQ(scope.header("www-authenticate"),
              challenge("insufficient_scope", "the token does not grant the scope mcp:tools"));
    EXPECT_THAT(scope.body, ::testing::HasSubstr("does not grant the scope mcp:tools"));
}

TEST_F(OAuthServerTest, TheOperatorsEndpointsKeepTheOperatorsToken) {
    Reply access = exchange(endpoint(), "GET", "", with_token(token("t"), {}), "/metrics");
    EXPECT_EQ(access.status, 401) << "an access token is no operator's token";
    EXPECT_EQ(access.header("www-authenticate"),
              R"(Bearer realm="stockade", error="invalid_token")");
    EXPECT_EQ(exchange(endpoint(), "GET", "", with_token("admin", {}), "/metrics").status, 200);
}

}  // namespace
}  // namespace stockade::mcp
