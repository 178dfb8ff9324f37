// McpServer: the MCP stdio front-end. Reads newline-delimited JSON-RPC from one fd and hands
// each message to a Connection (runner/mcp/connection.h), which answers on another fd. Nothing
// but protocol is written to the output fd; logs go through spdlog (stderr).
//
//   stockade::mcp::McpServer server(host);
//   Status s = server.run(STDIN_FILENO, STDOUT_FILENO);  // returns at EOF
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "common/result.h"
#include "common/unique_fd.h"
#include "runner/mcp/connection.h"
#include "runner/mcp/tool_host.h"

namespace stockade::mcp {

class McpServer {
public:
    explicit McpServer(ToolHost& host, ServerOptions options = {});
    ~McpServer();
    McpServer(const McpServer&) = delete;
    McpServer& operator=(const McpServer&) = delete;

    // Serves one connection until EOF on in_fd, a broken out_fd, or request_stop(). Then it
    // requests stop on every call in flight, waits for them, and returns. The fds stay open
    // (the caller owns them). A closed output is an EPIPE, never a SIGPIPE: SIGPIPE is blocked
    // around each write, in the writing thread only. An error means reading in_fd failed.
    Status run(int in_fd, int out_fd);

    // Makes run() return as at EOF. Async-signal-safe; the server stays stopped.
    void request_stop() noexcept;

private:
    ToolHost& host_;
    ServerOptions options_;
    UniqueFd stop_fd_;  // eventfd: readable once request_stop() was called
};

}  // namespace stockade::mcp
