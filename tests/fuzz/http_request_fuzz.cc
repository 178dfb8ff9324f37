// Fuzzes what serve --http does with the bytes of one request before it reaches a session
// (untrusted, from the network): Beast's request parser with the server's limits, then every
// header rule the server applies (Host, Origin, Accept, Authorization, Last-Event-ID,
// Mcp-Session-Id, and the 2026-07-28 Mcp-* headers against the decoded body). No crash; a
// bearer token has no white space; an event id parses back to itself; a header rule never
// accepts a message that failed to decode.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "runner/mcp/http_rules.h"
#include "runner/mcp/jsonrpc.h"

namespace {

namespace bhttp = boost::beast::http;
namespace rules = stockade::mcp::http;

std::string_view field(const bhttp::request<bhttp::string_body>& request, std::string_view name) {
    auto it = request.find(boost::beast::string_view(name.data(), name.size()));
    return it == request.end() ? std::string_view()
                               : std::string_view(it->value().data(), it->value().size());
}

void check_headers(const bhttp::request<bhttp::string_body>& request) {
    for (bool loopback : {true, false}) {
        const rules::HostRules host_rules{
            .loopback = loopback, .hosts = {"mcp.internal:8080"}, .origins = {"https://a.b"}};
        (void)rules::host_allowed(field(request, "Host"), host_rules);
        (void)rules::origin_allowed(field(request, "Origin"), host_rules);
    }
    (void)rules::parse_accept(field(request, "Accept"));
    if (auto token = rules::bearer_token(field(request, "Authorization"))) {
        if (token->empty() || token->find_first_of(" \t\r\n") != std::string::npos) {
            std::abort();
        }
    }
    if (auto id = rules::parse_event_id(field(request, "Last-Event-ID"))) {
        auto again = rules::parse_event_id(rules::event_id(*id));
        if (!again || again->stream != id->stream || again->seq != id->seq) {
            std::abort();
        }
    }
    (void)rules::is_session_id(rules::trim_ows(field(request, "Mcp-Session-Id")));
    auto decoded = stockade::mcp::jsonrpc::decode(request.body());
    auto* message = std::get_if<stockade::mcp::jsonrpc::Message>(&decoded);
    if (message == nullptr) {
        return;
    }
    if (auto* rpc = std::get_if<stockade::mcp::jsonrpc::Request>(message)) {
        auto optional = [&](std::string_view name) -> std::optional<std::string_view> {
            auto it = request.find(boost::beast::string_view(name.data(), name.size()));
            if (it == request.end()) {
                return std::nullopt;
            }
            return std::string_view(it->value().data(), it->value().size());
        };
        auto mismatch =
            rules::modern_header_mismatch(optional("MCP-Protocol-Version"), optional("Mcp-Method"),
                                          optional("Mcp-Name"), "2026-07-28", *rpc);
        if (!mismatch && optional("Mcp-Method") == std::nullopt) {
            std::abort();  // a missing Mcp-Method is always a mismatch
        }
        (void)rules::request_name(*rpc);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    bhttp::request_parser<bhttp::string_body> parser;
    parser.header_limit(16 << 10);
    parser.body_limit(1 << 20);
    parser.eager(true);
    boost::beast::error_code ec;
    parser.put(boost::asio::buffer(data, size), ec);
    if (!ec && parser.is_done()) {
        check_headers(parser.get());
    }
    return 0;
}
