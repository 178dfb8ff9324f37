#include "network/proxy_request.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace stockade::network {
namespace {

using ::testing::HasSubstr;
using Status = HeadParse::Status;
using Kind = ProxyRequest::Kind;

HeadParse parse_ok(std::string_view bytes) {
    HeadParse r = parse_proxy_head(bytes);
    EXPECT_EQ(r.status, Status::kDone) << r.http_status << " " << r.error;
    return r;
}

void expect_bad(std::string_view bytes, int status, std::string_view message) {
    const HeadParse r = parse_proxy_head(bytes);
    EXPECT_EQ(r.status, Status::kBad) << bytes;
    EXPECT_EQ(r.http_status, status) << bytes;
    EXPECT_THAT(r.error, HasSubstr(std::string(message))) << bytes;
}

TEST(ParseProxyHeadTest, ReadsAConnect) {
    const std::string head = "CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n";
    const HeadParse r = parse_ok(head);
    EXPECT_EQ(r.request.kind, Kind::kConnect);
    EXPECT_EQ(r.request.method, "CONNECT");
    EXPECT_EQ(r.request.target, (Authority{"pypi.org", 443, false}));
    EXPECT_EQ(r.request.origin_head, "");
    EXPECT_EQ(r.request.proxy_user, "");
    EXPECT_EQ(r.request.head_size, head.size());
}

TEST(ParseProxyHeadTest, ReadsAConnectToIpLiterals) {
    EXPECT_EQ(parse_ok("CONNECT [2001:DB8::1]:8443 HTTP/1.1\r\n\r\n").request.target,
              (Authority{"2001:db8::1", 8443, true}));
    EXPECT_EQ(parse_ok("CONNECT 93.184.216.34:443 HTTP/1.0\r\n\r\n").request.target,
              (Authority{"93.184.216.34", 443, true}));
}

TEST(ParseProxyHeadTest, CountsOnlyTheHeadWhenTunnelBytesFollow) {
    const std::string head = "CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n";
    const std::string tls = std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc", 9);
    const HeadParse r = parse_ok(head + tls);
    EXPECT_EQ(r.request.head_size, head.size());
}

TEST(ParseProxyHeadTest, RefusesAConnectWithoutAValidAuthority) {
    expect_bad("CONNECT pypi.org HTTP/1.1\r\n\r\n", 400, "a port is required");
    expect_bad("CONNECT pypi.org:0 HTTP/1.1\r\n\r\n", 400, "not a number from 1 to 65535");
    expect_bad("CONNECT ::1:443 HTTP/1.1\r\n\r\n", 400, "needs brackets");
    expect_bad("CONNECT user@pypi.org:443 HTTP/1.1\r\n\r\n", 400, "user information");
    expect_bad("CONNECT http://pypi.org/ HTTP/1.1\r\n\r\n", 400, "CONNECT");
}

TEST(ParseProxyHeadTest, NeedsMoreUntilTheHeadEnds) {
    const std::string head =
        "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n";
    for (size_t n = 0; n < head.size(); ++n) {
        const HeadParse r = parse_proxy_head(head.substr(0, n));
        EXPECT_EQ(r.status, Status::kNeedMore) << n << ": " << r.error;
    }
    EXPECT_EQ(parse_proxy_head(head).status, Status::kDone);
}

TEST(ParseProxyHeadTest, RewritesAnAbsoluteFormRequestForTheOrigin) {
    const HeadParse r = parse_ok(
        "GET http://Example.COM/simple/pkg/?a=1&b=2 HTTP/1.1\r\n"
        "Host: example.com\r\n"
        "User-Agent: pip/23\r\n"
        "Accept: */*\r\n"
        "\r\n");
    EXPECT_EQ(r.request.kind, Kind::kForward);
    EXPECT_EQ(r.request.method, "GET");
    EXPECT_EQ(r.request.target, (Authority{"example.com", 80, false}));
    EXPECT_EQ(r.request.origin_head,
              "GET /simple/pkg/?a=1&b=2 HTTP/1.1\r\n"
              "Host: example.com\r\n"
              "User-Agent: pip/23\r\n"
              "Accept: */*\r\n"
              "Connection: close\r\n"
              "\r\n");
}

TEST(ParseProxyHeadTest, MakesAnOriginFormTargetOfEveryUrlShape) {
    const std::pair<const char*, const char*> cases[] = {
        {"http://example.com", "/"},
        {"http://example.com/", "/"},
        {"http://example.com?q=1", "/?q=1"},
        {"http://example.com:8080/a/b", "/a/b"},
        {"http://example.com/a#fragment", "/a"},
        {"HTTP://example.com/x", "/x"},
    };
    for (const auto& [url, origin] : cases) {
        const HeadParse r = parse_ok(fmt::format("GET {} HTTP/1.1\r\n\r\n", url));
        EXPECT_THAT(r.request.origin_head, ::testing::StartsWith(fmt::format("GET {} ", origin)))
            << url;
    }
}

TEST(ParseProxyHeadTest, AddsAHostHeaderWhenMissing) {
    EXPECT_EQ(parse_ok("GET http://example.com/ HTTP/1.0\r\n\r\n").request.origin_head,
              "GET / HTTP/1.0\r\nHost: example.com\r\nConnection: close\r\n\r\n");
    const HeadParse port = parse_ok("GET http://example.com:8080/ HTTP/1.1\r\n\r\n");
    EXPECT_EQ(port.request.target, (Authority{"example.com", 8080, false}));
    EXPECT_EQ(port.request.origin_head,
              "GET / HTTP/1.1\r\nHost: example.com:8080\r\nConnection: close\r\n\r\n");
    const HeadParse v6 = parse_ok("GET http://[::1]:8080/ HTTP/1.1\r\n\r\n");
    EXPECT_EQ(v6.request.target, (Authority{"::1", 8080, true}));
    EXPECT_THAT(v6.request.origin_head, HasSubstr("\r\nHost: [::1]:8080\r\n"));
}

TEST(ParseProxyHeadTest, RemovesHopByHopHeaders) {
    const HeadParse r = parse_ok(
        "POST http://example.com/upload HTTP/1.1\r\n"
        "Host: example.com\r\n"
        "Proxy-Authorization: Basic dXNlcjpwdw==\r\n"
        "Proxy-Connection: keep-alive\r\n"
        "Connection: keep-alive, X-Secret-Hop\r\n"
        "Keep-Alive: timeout=5\r\n"
        "x-secret-hop: 1\r\n"
        "Content-Type: text/plain\r\n"
        "connection: Another-Hop\r\n"
        "Another-Hop: 2\r\n"
        "Content-Length: 5\r\n"
        "\r\n"
        "hello");
    EXPECT_EQ(r.request.origin_head,
              "POST /upload HTTP/1.1\r\n"
              "Host: example.com\r\n"
              "Content-Type: text/plain\r\n"
              "Content-Length: 5\r\n"
              "Connection: close\r\n"
              "\r\n");
    EXPECT_EQ(r.request.content_length, 5U);
    EXPECT_FALSE(r.request.chunked);
}

TEST(ParseProxyHeadTest, KeepsTheBodyOutOfTheHead) {
    const std::string head =
        "POST http://example.com/ HTTP/1.1\r\nHost: example.com\r\nContent-Length: 11\r\n\r\n";
    const HeadParse r = parse_ok(head + "hello world");
    EXPECT_EQ(r.request.head_size, head.size());

    // A body over Beast's default body limit (1 MiB): the head still parses.
    const HeadParse big =
        parse_ok("PUT http://example.com/ HTTP/1.1\r\nContent-Length: 10000000000\r\n\r\nxyz");
    EXPECT_EQ(big.request.content_length, 10000000000U);

    const std::string chunked =
        "POST http://example.com/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
    const HeadParse c = parse_ok(chunked + "5\r\nhello\r\n0\r\n\r\n");
    EXPECT_TRUE(c.request.chunked);
    EXPECT_EQ(c.request.head_size, chunked.size());
    EXPECT_THAT(c.request.origin_head, HasSubstr("\r\nTransfer-Encoding: chunked\r\n"));
}

TEST(ParseProxyHeadTest, CountsOnlyTheFirstHeadOfPipelinedRequests) {
    const std::string first = "GET http://example.com/a HTTP/1.1\r\nHost: example.com\r\n\r\n";
    const std::string second = "GET http://example.com/b HTTP/1.1\r\nHost: example.com\r\n\r\n";
    const HeadParse r = parse_ok(first + second);
    EXPECT_EQ(r.request.head_size, first.size());
    EXPECT_THAT(r.request.origin_head, ::testing::StartsWith("GET /a "));
}

TEST(ParseProxyHeadTest, KeepsAnyMethod) {
    for (const char* method : {"POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "PROPFIND"}) {
        const HeadParse r =
            parse_ok(fmt::format("{} http://example.com/x HTTP/1.1\r\n\r\n", method));
        EXPECT_EQ(r.request.method, method);
        EXPECT_THAT(r.request.origin_head,
                    ::testing::StartsWith(fmt::format("{} /x HTTP/1.1\r\n", method)));
    }
}

TEST(ParseProxyHeadTest, ChecksTheHostHeaderAgainstTheUrl) {
    EXPECT_EQ(parse_ok("GET http://example.com/ HTTP/1.1\r\nHost: EXAMPLE.com.:80\r\n\r\n")
                  .request.origin_head,
              "GET / HTTP/1.1\r\nHost: EXAMPLE.com.:80\r\nConnection: close\r\n\r\n");
    expect_bad("GET http://example.com/ HTTP/1.1\r\nHost: evil.example\r\n\r\n", 400,
               "the Host header names evil.example but the URL names example.com");
    expect_bad("GET http://example.com/ HTTP/1.1\r\nHost: example.com:8080\r\n\r\n", 400,
               "the Host header names example.com:8080 but the URL names example.com");
    expect_bad("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nHost: x.example\r\n\r\n",
               400, "more than one Host header");
    expect_bad("GET http://example.com/ HTTP/1.1\r\nHost: a b\r\n\r\n", 400, "the Host header");
}

TEST(ParseProxyHeadTest, RefusesWhatItDoesNotForward) {
    expect_bad("GET https://example.com/ HTTP/1.1\r\n\r\n", 400, "use CONNECT for https");
    expect_bad("GET /index.html HTTP/1.1\r\nHost: example.com\r\n\r\n", 400,
               "this is an HTTP proxy");
    expect_bad("OPTIONS * HTTP/1.1\r\n\r\n", 400, "this is an HTTP proxy");
    expect_bad("GET ftp://example.com/f HTTP/1.1\r\n\r\n", 400, "only http:// is forwarded");
    expect_bad("GET example.com HTTP/1.1\r\n\r\n", 400, "not a URL");
    expect_bad("GET http://user:pw@example.com/ HTTP/1.1\r\n\r\n", 400, "user information");
    expect_bad("GET http:///path HTTP/1.1\r\n\r\n", 400, "the host is empty");
    expect_bad("GET http://127.1/ HTTP/1.1\r\n\r\n", 400, "four decimal numbers");
    expect_bad("GET http://example.com:99999/ HTTP/1.1\r\n\r\n", 400, "1 to 65535");
}

TEST(ParseProxyHeadTest, RefusesMalformedHeads) {
    expect_bad("GET http://example.com/ HTTP/2.0\r\n\r\n", 400, "HTTP/1.0 or HTTP/1.1");
    expect_bad("GET http://example.com/ HTTP/1.2\r\n\r\n", 400, "HTTP/1.0 or HTTP/1.1");
    expect_bad("\x16\x03\x01\x02\x00\r\n\r\n", 400, "malformed request head");
    expect_bad("GET  http://example.com/ HTTP/1.1\r\n\r\n", 400, "malformed request head");
    expect_bad("GET http://example.com/ HTTP/1.1\r\nBad Header: x\r\n\r\n", 400,
               "malformed request head");

    expect_bad(
        "POST http://example.com/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400,
        "malformed request head");
    expect_bad("GET http://example.com/ HTTP/1.1\nHost: example.com\n\n", 400,
               "malformed request head");
}

TEST(ParseProxyHeadTest, UnfoldsObsoleteLineFolding) {
    EXPECT_THAT(parse_ok("GET http://example.com/ HTTP/1.1\r\nX: a\r\n  folded\r\n\r\n")
                    .request.origin_head,
                HasSubstr("\r\nX: a folded\r\n"));
}

TEST(ParseProxyHeadTest, RefusesAHeadOverTheLimit) {
    const std::string head =
        "GET http://example.com/ HTTP/1.1\r\nX-Pad: " + std::string(200, 'a') + "\r\n\r\n";
    EXPECT_EQ(parse_proxy_head(head, head.size()).status, Status::kDone);
    HeadParse r = parse_proxy_head(head, head.size() - 1);
    EXPECT_EQ(r.status, Status::kBad);
    EXPECT_EQ(r.http_status, 431);
    EXPECT_THAT(r.error, HasSubstr("longer than"));

    // An unfinished head: more is needed until it reaches the limit, then it is too long.
    const std::string endless =
        "GET http://example.com/ HTTP/1.1\r\nX-Pad: " + std::string(70 * 1024, 'a');
    EXPECT_EQ(parse_proxy_head(std::string_view(endless).substr(0, 60 * 1024)).status,
              Status::kNeedMore);
    r = parse_proxy_head(endless);
    EXPECT_EQ(r.status, Status::kBad);
    EXPECT_EQ(r.http_status, 431);
    // The body that follows a head within the limit does not count.
    EXPECT_EQ(parse_proxy_head(head + std::string(100 * 1024, 'b'), head.size()).status,
              Status::kDone);
}

TEST(ParseProxyHeadTest, ReadsBasicProxyCredentials) {
    // "user:pa:ss" splits at the first ':'.
    HeadParse r = parse_ok(
        "CONNECT pypi.org:443 HTTP/1.1\r\nProxy-Authorization: Basic dXNlcjpwYTpzcw==\r\n\r\n");
    EXPECT_EQ(r.request.proxy_user, "user");
    EXPECT_EQ(r.request.proxy_password, "pa:ss");

    r = parse_ok("CONNECT pypi.org:443 HTTP/1.1\r\nproxy-authorization: basic  Og==\r\n\r\n");
    EXPECT_EQ(r.request.proxy_user, "");  // ":" alone: both empty
    EXPECT_EQ(r.request.proxy_password, "");

    for (const char* value :
         {"Bearer abc", "Basic", "Basic !!!!", "Basic dXNlcg==" /* "user", no ':' */, "Digest x"}) {
        r = parse_ok(
            fmt::format("CONNECT pypi.org:443 HTTP/1.1\r\nProxy-Authorization: {}\r\n\r\n", value));
        EXPECT_EQ(r.request.proxy_user, "") << value;
        EXPECT_EQ(r.request.proxy_password, "") << value;
    }
    expect_bad(
        "CONNECT pypi.org:443 HTTP/1.1\r\nProxy-Authorization: Basic dXNlcjpwdw==\r\n"
        "Proxy-Authorization: Basic b3RoZXI6cHc=\r\n\r\n",
        400, "more than one Proxy-Authorization");

    const HeadParse forward = parse_ok(
        "GET http://example.com/ HTTP/1.1\r\nProxy-Authorization: Basic dXNlcjpwdw==\r\n\r\n");
    EXPECT_EQ(forward.request.proxy_user, "user");
    EXPECT_EQ(forward.request.proxy_password, "pw");
    EXPECT_THAT(forward.request.origin_head, ::testing::Not(HasSubstr("Proxy-Authorization")));
}

}  // namespace
}  // namespace stockade::network
