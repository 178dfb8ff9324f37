// A client of `stockade serve --http unix:/PATH` for the security and integration suites: one
// HTTP/1.1 exchange per connection (Boost.Beast), and the MCP session calls the tenant suites
// make with it. Bounded: every exchange has a deadline.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace stockade::testing {

struct HttpReply {
    int status = 0;                              // 0: no answer (the error says why)
    std::map<std::string, std::string> headers;  // names in lower case
    std::string body;
    std::string error;  // connect/read failure

    // The JSON-RPC messages of the body: one JSON object, or the `data:` lines of an SSE stream.
    [[nodiscard]] std::vector<nlohmann::json> messages() const;
    [[nodiscard]] std::string header(const std::string& lower_name) const;
};

// One request over the unix socket `socket_path`.
HttpReply http_exchange(const std::string& socket_path, const std::string& method,
                        const std::string& target,
                        const std::vector<std::pair<std::string, std::string>>& headers,
                        const std::string& body,
                        std::chrono::milliseconds limit = std::chrono::seconds(60));

// An MCP session of one tenant (2025-11-25 handshake), over a unix socket.
class McpHttpSession {
public:
    McpHttpSession(std::string socket_path, std::string token)
        : socket_(std::move(socket_path)), token_(std::move(token)) {}

    // initialize (with Stockade-Workspace: `workspace` unless empty) and, when it succeeded,
    // notifications/initialized. Returns initialize's reply; id() is set on success.
    HttpReply open(const std::string& workspace = "");
    // tools/call; the response message (or null, with the reply in *raw when given).
    nlohmann::json call(const std::string& tool, const nlohmann::json& arguments,
                        HttpReply* raw = nullptr);
    // DELETE /mcp; the session is closed either way.
    void close();

    [[nodiscard]] const std::string& id() const { return id_; }

private:
    std::vector<std::pair<std::string, std::string>> headers() const;

    std::string socket_;
    std::string token_;
    std::string id_;
    int next_id_ = 1;
};

}  // namespace stockade::testing
