// McpServer: the MCP stdio front-end. Reads newline-delimited JSON-RPC from one fd, answers on
// another, and runs tools/call on a bounded pool of worker threads over a ToolHost.
//
// It answers both protocol eras (docs/protocol.md): `initialize` (2025-11-25, 2025-06-18) and
// the stateless per-request `_meta` of 2026-07-28 with `server/discover`. A tool call can ask
// the user through the client (CallInfo::elicit): an elicitation/create request in the 2025
// era, an input_required result under 2026-07-28. Nothing but protocol is written to the output
// fd; logs go through spdlog (stderr).
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
#include "common/version.h"
#include "runner/mcp/tool_host.h"

namespace stockade::mcp {

struct ServerOptions {
    std::string name = "stockade";  // serverInfo
    std::string title = "Stockade";
    std::string version = std::string(kVersion);
    std::string instructions;  // sent when not empty
    // A line longer than this is answered with -32600 and discarded without being buffered;
    // a reply longer than this is replaced (a tool result by an isError result).
    std::size_t max_message_bytes = std::size_t{8} << 20;
    std::size_t max_concurrent_calls = 8;  // tools/call running at once; later ones wait
    std::size_t max_pending_calls = 256;   // running + waiting; past it a call fails (isError)
    // The requests of the calls running and waiting, as they arrived: past it a call fails
    // (isError), so that waiting calls cannot hold an unbounded amount of memory.
    std::size_t max_pending_bytes = std::size_t{64} << 20;
    // ttlMs of 2026-07-28 cacheable results (tools/list, server/discover).
    std::chrono::milliseconds cache_ttl{0};
};

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
    class Connection;

    ToolHost& host_;
    ServerOptions options_;
    UniqueFd stop_fd_;  // eventfd: readable once request_stop() was called
};

}  // namespace stockade::mcp
