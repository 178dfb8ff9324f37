#include "tests/testing/http_client.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace stockade::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

std::vector<nlohmann::json> HttpReply::messages() const {
    std::vector<nlohmann::json> out;
    const auto first = body.find_first_not_of(" \r\n\t");
    if (first != std::string::npos && body[first] == '{') {
        auto parsed = nlohmann::json::parse(body, nullptr, false);
        if (!parsed.is_discarded()) {
            out.push_back(std::move(parsed));
        }
        return out;
    }
    std::istringstream lines(body);
    for (std::string line; std::getline(lines, line);) {
        if (!line.empty() && line.back() == '\r') {
            line.pop_back();
        }
        if (line.rfind("data: ", 0) == 0 && line.size() > 6) {
            auto parsed = nlohmann::json::parse(line.substr(6), nullptr, false);
            if (!parsed.is_discarded()) {
                out.push_back(std::move(parsed));
            }
        }
    }
    return out;
}

std::string HttpReply::header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
}

HttpReply http_exchange(const std::string& socket_path, const std::string& method,
                        const std::string& target,
                        const std::vector<std::pair<std::string, std::string>>& headers,
                        const std::string& body, std::chrono::milliseconds limit) {
    HttpReply reply;
    asio::io_context ioc;
    beast::basic_stream<asio::local::stream_protocol> stream(ioc);
    stream.expires_after(limit);
    beast::flat_buffer buffer;
    bhttp::request<bhttp::string_body> request(bhttp::string_to_verb(method), target, 11);
    request.set(bhttp::field::host, "localhost");
    for (const auto& [name, value] : headers) {
        request.set(name, value);
    }
    request.keep_alive(false);
    request.body() = body;
    request.prepare_payload();
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(64 << 20);
    beast::error_code ec;
    stream.socket().connect(asio::local::stream_protocol::endpoint(socket_path), ec);
    if (!ec) {
        bhttp::write(stream, request, ec);
    }
    if (!ec) {
        bhttp::read(stream, buffer, parser, ec);
    }
    if (ec && !parser.is_header_done()) {
        reply.error = ec.message();
        return reply;
    }
    const auto& response = parser.get();
    reply.status = static_cast<int>(response.result_int());
    for (const auto& field : response) {
        std::string name(field.name_string());
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        reply.headers[name] = std::string(field.value());
    }
    reply.body = response.body();
    if (ec && ec != bhttp::error::end_of_stream) {
        reply.error = ec.message();
    }
    return reply;
}

std::vector<std::pair<std::string, std::string>> McpHttpSession::headers() const {
    std::vector<std::pair<std::string, std::string>> out = {
        {"Authorization", "Bearer " + token_},
        {"Content-Type", "application/json"},
        {"Accept", "application/json, text/event-stream"}};
    if (!id_.empty()) {
        out.emplace_back("Mcp-Session-Id", id_);
        out.emplace_back("MCP-Protocol-Version", "2025-11-25");
    }
    return out;
}

HttpReply McpHttpSession::open(const std::string& workspace) {
    auto with = headers();
    if (!workspace.empty()) {
        with.emplace_back("Stockade-Workspace", workspace);
    }
    const nlohmann::json init = {
        {"jsonrpc", "2.0"},
        {"id", next_id_++},
        {"method", "initialize"},
        {"params",
         {{"protocolVersion", "2025-11-25"},
          {"capabilities", nlohmann::json::object()},
          {"clientInfo", {{"name", "stockade-tests"}, {"version", "0"}}}}}};
    HttpReply reply = http_exchange(socket_, "POST", "/mcp", with, init.dump());
    if (reply.status != 200 || reply.header("mcp-session-id").empty()) {
        return reply;
    }
    id_ = reply.header("mcp-session-id");
    const nlohmann::json initialized = {{"jsonrpc", "2.0"},
                                        {"method", "notifications/initialized"}};
    (void)http_exchange(socket_, "POST", "/mcp", headers(), initialized.dump());
    return reply;
}

nlohmann::json McpHttpSession::call(const std::string& tool, const nlohmann::json& arguments,
                                    HttpReply* raw) {
    const int id = next_id_++;
    const nlohmann::json request = {{"jsonrpc", "2.0"},
                                    {"id", id},
                                    {"method", "tools/call"},
                                    {"params", {{"name", tool}, {"arguments", arguments}}}};
    HttpReply reply =
        http_exchange(socket_, "POST", "/mcp", headers(), request.dump(), std::chrono::seconds(90));
    nlohmann::json found;
    for (auto& message : reply.messages()) {
        if (message.value("id", -1) == id) {
            found = std::move(message);
        }
    }
    if (raw != nullptr) {
        *raw = std::move(reply);
    }
    return found;
}

void McpHttpSession::close() {
    if (!id_.empty()) {
        (void)http_exchange(socket_, "DELETE", "/mcp", headers(), "");
        id_.clear();
    }
}

}  // namespace stockade::testing
