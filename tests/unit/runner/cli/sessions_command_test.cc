#include "runner/cli/sessions_command.h"

#include <chrono>
#include <limits>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade::runner {
namespace {

using std::chrono::seconds;
using testing::HasErrc;
using ::testing::HasSubstr;
using testing::IsOk;

ServerAddress tcp(std::string host, std::string port, std::string prefix = "") {
    return ServerAddress{.host = std::move(host), .port = std::move(port), .prefix = prefix};
}

TEST(ParseServerUrlTest, AcceptsHttpUrlsAndWhatServeHttpWasGiven) {
    const std::vector<std::pair<std::string, ServerAddress>> cases = {
        {"http://127.0.0.1:8787", tcp("127.0.0.1", "8787")},
        {"http://127.0.0.1:8787/", tcp("127.0.0.1", "8787")},
        {"HTTP://localhost:08080", tcp("localhost", "8080")},
        {"http://stockade.internal", tcp("stockade.internal", "80")},
        {"127.0.0.1:8787", tcp("127.0.0.1", "8787")},
        {"http://[::1]:8787", tcp("::1", "8787")},
        {"[::1]:9", tcp("::1", "9")},
        {"  http://127.0.0.1:1\n", tcp("127.0.0.1", "1")},
        {"http://gw.example:8443/stockade/", tcp("gw.example", "8443", "/stockade")},
    };
    for (const auto& [text, want] : cases) {
        auto got = parse_server_url(text);
        ASSERT_THAT(got, IsOk()) << text;
        EXPECT_EQ(*got, want) << text;
    }
}

TEST(ParseServerUrlTest, DropsTheMcpPathThatServePrints) {
    auto got = parse_server_url("http://127.0.0.1:8787/mcp");
    ASSERT_THAT(got, IsOk());
    EXPECT_EQ(*got, tcp("127.0.0.1", "8787"));
    got = parse_server_url("http://gw:80/tenants/mcp/");
    ASSERT_THAT(got, IsOk());
    EXPECT_EQ(*got, tcp("gw", "80", "/tenants"));
}

TEST(ParseServerUrlTest, AcceptsUnixSockets) {
    auto got = parse_server_url("unix:/run/stockade.sock");
    ASSERT_THAT(got, IsOk());
    EXPECT_EQ(*got, (ServerAddress{.unix_socket = true, .socket_path = "/run/stockade.sock"}));
    got = parse_server_url("unix:///tmp/s.sock");
    ASSERT_THAT(got, IsOk());
    EXPECT_EQ(got->socket_path, "/tmp/s.sock");
    EXPECT_EQ(got->url(), "unix:/tmp/s.sock");
    EXPECT_EQ(got->host_header(), "localhost");
}

TEST(ParseServerUrlTest, RefusesWhatItCannotConnectToWithTheReason) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"https://127.0.0.1:8787", "plain HTTP"},
        {"ftp://x:1", "give http://HOST:PORT or unix:/PATH"},
        {"http://:8787", "the host is empty"},
        {"http://127.0.0.1:", "the port after ':' is empty"},
        {"http://127.0.0.1:0", "1 to 65535"},
        {"http://127.0.0.1:65536", "1 to 65535"},
        {"http://127.0.0.1:80a", "1 to 65535"},
        {"http://127.0.0.1:123456", "1 to 65535"},
        {"http://::1:8787", "brackets"},
        {"http://[::1:8787", "'[' without ']'"},
        {"http://[]:1", "IPv6 address"},
        {"http://u:p@127.0.0.1:1", "--admin-token-file"},
        {"http://h st:1", "letters, digits"},
        {"http://127.0.0.1:1/?x=1", "query"},
        {"unix:", "socket's path"},
        {"unix:/" + std::string(200, 'a'), "at most 107 bytes"},
        {"", "the host is empty"},
    };
    for (const auto& [text, why] : cases) {
        auto got = parse_server_url(text);
        EXPECT_THAT(got, HasErrc(Errc::kInvalidArgument)) << text;
        if (!got) {
            EXPECT_THAT(got.error().message, HasSubstr(why)) << text;
        }
    }
}

TEST(ServerAddressTest, UrlAndHostHeaderBracketIpv6) {
    const ServerAddress v6 = tcp("::1", "8787", "/p");
    EXPECT_EQ(v6.url(), "http://[::1]:8787/p");
    EXPECT_EQ(v6.host_header(), "[::1]:8787");
    EXPECT_EQ(tcp("localhost", "80").host_header(), "localhost:80");
}

TEST(AdminTokenFromTextTest, TakesTheFirstLineTrimmed) {
    auto got = admin_token_from_text("  abc123 \r\nsecond line\n");
    ASSERT_THAT(got, IsOk());
    EXPECT_EQ(*got, "abc123");
}

TEST(AdminTokenFromTextTest, RefusesEmptyHashFilesAndBlanks) {
    EXPECT_THAT(admin_token_from_text(""), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(admin_token_from_text("\nabc\n"), HasErrc(Errc::kInvalidArgument));
    auto hash_file = admin_token_from_text("# the operator\n0123abcd\n");
    ASSERT_THAT(hash_file, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(hash_file.error().message, HasSubstr("hash file"));
    EXPECT_THAT(admin_token_from_text("ab cd"), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(admin_token_from_text("ab\x1b[2Jcd"), HasErrc(Errc::kInvalidArgument));
}

TEST(FormatDurationTest, ShowsTheTwoLargestUnits) {
    const std::vector<std::pair<long, std::string>> cases = {
        {-5, "0s"},           {0, "0s"},         {1, "1s"},        {59, "59s"},
        {60, "1m00s"},        {192, "3m12s"},    {3599, "59m59s"}, {3600, "1h00m"},
        {7500, "2h05m"},      {86399, "23h59m"}, {86400, "1d00h"}, {273600, "3d04h"},
        {8640000, "100d00h"},
    };
    for (const auto& [s, want] : cases) {
        EXPECT_EQ(format_duration(seconds(s)), want) << s;
    }
}

TEST(ParseSessionsTest, ReadsTheServersBody) {
    auto rows = parse_sessions(R"({"sessions":[
        {"id":"aa","tenant":"alpha","log_id":"s-0123456789ab","age_seconds":192,
         "idle_seconds":4,"calls":1,"calls_made":7},
        {"id":"bb","tenant":"beta","age_seconds":5,"idle_seconds":5,"calls":0}]})");
    ASSERT_THAT(rows, IsOk());
    EXPECT_EQ(*rows, (std::vector<SessionRow>{
                         {.id = "aa",
                          .tenant = "alpha",
                          .log_id = "s-0123456789ab",
                          .age = seconds(192),
                          .idle = seconds(4),
                          .calls_made = 7,
                          .running = 1},
                         {.id = "bb", .tenant = "beta", .age = seconds(5), .idle = seconds(5)},
                     }))
        << "an older server's row has no log_id or calls_made";
}

TEST(ParseSessionsTest, ToleratesMissingAndOddFields) {
    auto rows = parse_sessions(R"({"sessions":[
        {"id":7,"age_seconds":-3,"idle_seconds":1.9,"calls":"many","extra":{"x":[1]}},
        {"age_seconds":1e300,"idle_seconds":null,"calls":-1},
        {"age_seconds":18446744073709551615,"calls":2.5}],"next":null})");
    ASSERT_THAT(rows, IsOk());
    const auto kMax = seconds(std::numeric_limits<seconds::rep>::max());
    EXPECT_EQ(*rows, (std::vector<SessionRow>{
                         {.idle = seconds(1)},
                         {.age = kMax},
                         {.age = kMax, .running = 2},
                     }));
    EXPECT_EQ(format_duration(kMax), "106751991167300d15h");
}

TEST(ParseSessionsTest, RefusesWhatIsNotASessionList) {
    const std::vector<std::string> bodies = {
        "",
        "<html>Bad gateway</html>",
        "{\"sessions\":[",
        "[]",
        "{}",
        "{\"sessions\":{}}",
        "{\"sessions\":[1]}",
        "null",
        std::string(100000, '[') + std::string(100000, ']'),
    };
    for (const std::string& body : bodies) {
        EXPECT_THAT(parse_sessions(body), HasErrc(Errc::kInvalidArgument)) << body.substr(0, 40);
    }
}

TEST(FormatSessionsTableTest, AlignsAndSortsByTenantThenAge) {
    const std::vector<SessionRow> rows = {
        {.id = "b2", .tenant = "beta", .age = seconds(5), .idle = seconds(5)},
        {.id = "a-old",
         .tenant = "alpha",
         .log_id = "s-00000000000a",
         .age = seconds(7500),
         .idle = seconds(61),
         .calls_made = 12},
        {.id = "a-new",
         .tenant = "alpha",
         .log_id = "s-00000000000b",
         .age = seconds(192),
         .idle = seconds(4),
         .calls_made = 6,
         .running = 2},
    };
    EXPECT_EQ(format_sessions_table(rows),
              "ID     TENANT  LOG             AGE    IDLE   CALLS  RUNNING\n"
              "a-new  alpha   s-00000000000b  3m12s  4s     6      2\n"
              "a-old  alpha   s-00000000000a  2h05m  1m01s  12     0\n"
              "b2     beta    -               5s     5s     0      0\n");
}

TEST(FormatSessionsTableTest, EmptyForNoSessions) {
    EXPECT_EQ(format_sessions_table({}), "");
}

TEST(FormatSessionsTableTest, ShowsTheServersStringsAsPrintableText) {
    const std::vector<SessionRow> rows = {
        {.id = "x\x1b]0;pwned\x07", .tenant = "t\nu", .log_id = "s\x1b[2J", .age = seconds(1)},
    };
    EXPECT_EQ(format_sessions_table(rows),
              "ID           TENANT  LOG    AGE  IDLE  CALLS  RUNNING\n"
              "x?]0;pwned?  t?u     s?[2J  1s   0s    0      0\n");
}

TEST(FormatSessionsTableTest, FromAJsonBody) {
    auto rows = parse_sessions(
        R"({"sessions":[{"id":"f00d","tenant":"alpha","log_id":"s-5ee5","age_seconds":3600,)"
        R"("idle_seconds":59,"calls":1,"calls_made":6}]})");
    ASSERT_THAT(rows, IsOk());
    EXPECT_EQ(format_sessions_table(*rows),
              "ID    TENANT  LOG     AGE    IDLE  CALLS  RUNNING\n"
              "f00d  alpha   s-5ee5  1h00m  59s   6      1\n")
        << "a session that made 6 calls, one of them running now";
}

}  // namespace
}  // namespace stockade::runner
