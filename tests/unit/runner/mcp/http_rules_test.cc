#include "runner/mcp/http_rules.h"

#include <set>
#include <string>

#include <gtest/gtest.h>

namespace stockade::mcp::http {
namespace {

jsonrpc::Request request(std::string method, nlohmann::json params = nullptr) {
    return jsonrpc::Request{.id = 1, .method = std::move(method), .params = std::move(params)};
}

TEST(HostAllowed, LoopbackBindAnswersOnlyToLoopbackNames) {
    const HostRules rules{.loopback = true, .hosts = {}, .origins = {}};
    for (const char* host :
         {"localhost", "localhost:8080", "127.0.0.1", "127.0.0.1:3000", "127.1.2.3:9", "[::1]",
          "[::1]:8080", "LOCALHOST:80", " localhost:1 "}) {
        EXPECT_TRUE(host_allowed(host, rules)) << host;
    }
    for (const char* host : {"", "evil.example.com", "evil.example.com:8080", "127.0.0.1.evil.com",
                             "localhost.evil.com", "128.0.0.1", "[::2]:80", "127.0.0.1:80:80",
                             "127.0.0.1:port", "[::1", "10.0.0.1"}) {
        EXPECT_FALSE(host_allowed(host, rules)) << host;
    }
}

TEST(HostAllowed, ListedHostsAndNonLoopbackBinds) {
    const HostRules listed{.loopback = true, .hosts = {"mcp.internal:8080"}, .origins = {}};
    EXPECT_TRUE(host_allowed("mcp.internal:8080", listed));
    EXPECT_TRUE(host_allowed("MCP.internal:8080", listed));
    EXPECT_FALSE(host_allowed("mcp.internal:8081", listed));
    const HostRules open{.loopback = false, .hosts = {}, .origins = {}};
    EXPECT_TRUE(host_allowed("anything.example.com", open));
}

TEST(OriginAllowed, LoopbackOriginsOnLoopbackOnly) {
    const HostRules loopback{.loopback = true, .hosts = {}, .origins = {}};
    EXPECT_TRUE(origin_allowed("", loopback));  // agents send none
    EXPECT_TRUE(origin_allowed("http://localhost:8080", loopback));
    EXPECT_TRUE(origin_allowed("https://127.0.0.1", loopback));
    EXPECT_TRUE(origin_allowed("http://[::1]:3000/", loopback));
    EXPECT_FALSE(origin_allowed("http://evil.example.com", loopback));
    EXPECT_FALSE(origin_allowed("null", loopback));
    EXPECT_FALSE(origin_allowed("file://localhost", loopback));
    EXPECT_FALSE(origin_allowed("http://localhost.evil.com", loopback));

    const HostRules remote{.loopback = false, .hosts = {}, .origins = {"https://app.example.com"}};
    EXPECT_TRUE(origin_allowed("", remote));
    EXPECT_TRUE(origin_allowed("https://app.example.com", remote));
    EXPECT_TRUE(origin_allowed("https://APP.example.com/", remote));
    EXPECT_FALSE(origin_allowed("http://localhost:8080", remote));
    EXPECT_FALSE(origin_allowed("https://app.example.com.evil.com", remote));
}

TEST(ParseAccept, BothTypesWildcardsAndRefusals) {
    auto both = parse_accept("application/json, text/event-stream");
    EXPECT_TRUE(both.json && both.event_stream);
    auto none = parse_accept("");
    EXPECT_TRUE(none.json && none.event_stream);
    auto any = parse_accept("*/*");
    EXPECT_TRUE(any.json && any.event_stream);
    auto json_only = parse_accept("application/json;q=0.9");
    EXPECT_TRUE(json_only.json);
    EXPECT_FALSE(json_only.event_stream);
    auto refused = parse_accept("text/event-stream;q=0, application/json");
    EXPECT_TRUE(refused.json);
    EXPECT_FALSE(refused.event_stream);
    auto html = parse_accept("text/html");
    EXPECT_FALSE(html.json || html.event_stream);
}

TEST(BearerToken, SchemeAndToken) {
    EXPECT_EQ(bearer_token("Bearer abc.def-1"), "abc.def-1");
    EXPECT_EQ(bearer_token("bearer   abc  "), "abc");
    EXPECT_EQ(bearer_token("BEARER\tabc"), "abc");
    EXPECT_FALSE(bearer_token("Basic dXNlcjpwYXNz").has_value());
    EXPECT_FALSE(bearer_token("Bearer").has_value());
    EXPECT_FALSE(bearer_token("Bearer ").has_value());
    EXPECT_FALSE(bearer_token("Bearerabc").has_value());
    EXPECT_FALSE(bearer_token("Bearer a b").has_value());
    EXPECT_FALSE(bearer_token(std::string("Bearer a\x01", 9)).has_value());
}

TEST(ModernHeaders, MustRepeatTheBody) {
    const auto list = request("tools/list");
    EXPECT_FALSE(
        modern_header_mismatch("2026-07-28", "tools/list", std::nullopt, "2026-07-28", list));
    EXPECT_FALSE(
        modern_header_mismatch(" 2026-07-28 ", "\ttools/list ", std::nullopt, "2026-07-28", list));
    auto missing_version =
        modern_header_mismatch(std::nullopt, "tools/list", std::nullopt, "2026-07-28", list);
    ASSERT_TRUE(missing_version);
    EXPECT_NE(missing_version->find("MCP-Protocol-Version"), std::string::npos);
    auto wrong_version =
        modern_header_mismatch("2025-11-25", "tools/list", std::nullopt, "2026-07-28", list);
    ASSERT_TRUE(wrong_version);
    EXPECT_NE(wrong_version->find("2025-11-25"), std::string::npos);
    EXPECT_TRUE(
        modern_header_mismatch("2026-07-28", std::nullopt, std::nullopt, "2026-07-28", list));
    EXPECT_TRUE(
        modern_header_mismatch("2026-07-28", "prompts/list", std::nullopt, "2026-07-28", list));
    EXPECT_TRUE(
        modern_header_mismatch("2026-07-28", "Tools/List", std::nullopt, "2026-07-28", list));

    const auto call =
        request("tools/call", {{"name", "bash"}, {"arguments", nlohmann::json::object()}});
    EXPECT_FALSE(modern_header_mismatch("2026-07-28", "tools/call", " bash ", "2026-07-28", call));
    auto wrong_name =
        modern_header_mismatch("2026-07-28", "tools/call", "read", "2026-07-28", call);
    ASSERT_TRUE(wrong_name);
    EXPECT_NE(wrong_name->find("Mcp-Name"), std::string::npos);
    EXPECT_TRUE(
        modern_header_mismatch("2026-07-28", "tools/call", std::nullopt, "2026-07-28", call));
    const auto read = request("resources/read", {{"uri", "file:///a"}});
    EXPECT_FALSE(
        modern_header_mismatch("2026-07-28", "resources/read", "file:///a", "2026-07-28", read));
}

TEST(RequestName, NameOrUriByMethod) {
    EXPECT_EQ(request_name(request("tools/call", {{"name", "grep"}})), "grep");
    EXPECT_EQ(request_name(request("prompts/get", {{"name", "p"}})), "p");
    EXPECT_EQ(request_name(request("resources/read", {{"uri", "u"}})), "u");
    EXPECT_FALSE(request_name(request("tools/list")).has_value());
    EXPECT_FALSE(request_name(request("tools/call", {{"name", 3}})).has_value());
}

TEST(ErrorStatus, ModernMapsCodesLegacyAnswers200) {
    EXPECT_EQ(error_status(-32601, true), 404U);
    EXPECT_EQ(error_status(-32602, true), 400U);
    EXPECT_EQ(error_status(-32600, true), 400U);
    EXPECT_EQ(error_status(-32700, true), 400U);
    EXPECT_EQ(error_status(-32020, true), 400U);
    EXPECT_EQ(error_status(-32021, true), 400U);
    EXPECT_EQ(error_status(-32022, true), 400U);
    EXPECT_EQ(error_status(-32603, true), 500U);
    EXPECT_EQ(error_status(42, true), 200U);
    EXPECT_EQ(error_status(-32601, false), 200U);
    EXPECT_EQ(error_status(-32603, false), 200U);
}

TEST(SessionId, UnguessableAndChecked) {
    std::set<std::string> seen;
    for (int i = 0; i < 100; ++i) {
        std::string id = new_session_id();
        EXPECT_TRUE(is_session_id(id)) << id;
        EXPECT_TRUE(seen.insert(id).second);
    }
    EXPECT_FALSE(is_session_id(""));
    EXPECT_FALSE(is_session_id(std::string(63, 'a')));
    EXPECT_FALSE(is_session_id(std::string(64, 'A')));
    EXPECT_FALSE(is_session_id(std::string(64, 'g')));
    EXPECT_FALSE(is_session_id(std::string(63, 'a') + "/"));
}

TEST(SseEvent, FramesOneMessage) {
    EXPECT_EQ(sse_event("3-1", R"({"a":1})"), "id: 3-1\ndata: {\"a\":1}\n\n");
    EXPECT_EQ(sse_event("3-0", "", 1000), "id: 3-0\nretry: 1000\ndata: \n\n");
    // A raw newline becomes a second data line, never the end of the event.
    EXPECT_EQ(sse_event("1-2", "a\nb"), "id: 1-2\ndata: a\ndata: b\n\n");
}

TEST(EventId, RoundTripsAndRejectsJunk) {
    EXPECT_EQ(event_id({7, 42}), "7-42");
    auto parsed = parse_event_id(" 7-42 ");
    ASSERT_TRUE(parsed);
    EXPECT_EQ(parsed->stream, 7U);
    EXPECT_EQ(parsed->seq, 42U);
    for (const char* bad : {"", "7", "-1", "7-", "a-1", "1-b", "1-2-3", "99999999999999999999-1"}) {
        EXPECT_FALSE(parse_event_id(bad).has_value()) << bad;
    }
}

}  // namespace
}  // namespace stockade::mcp::http
