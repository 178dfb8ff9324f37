// Connection: one MCP conversation with one client, whatever carries it. The front end (stdio:
// McpServer; HTTP: runner/mcp/http_server.h) delivers each message the client sends; the
// connection answers requests, runs tools/call on a bounded pool of threads over a ToolHost,
// and posts every message for the client to an Outbox, with the request it belongs to.
//
// It answers both protocol eras (docs/protocol.md): `initialize` (2025-11-25, 2025-06-18) and
// the stateless per-request `_meta` of 2026-07-28 with `server/discover`. A tool call can ask
// the user through the client (CallInfo::elicit): an elicitation/create request in the 2025
// era, an input_required result under 2026-07-28.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "common/version.h"
#include "runner/mcp/jsonrpc.h"
#include "runner/mcp/outbox.h"
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
    // Added to each call's log lines: who the calls are for ("tenant=alpha session=1f2e…",
    // serve --http), so that a log collector can follow one tenant's session.
    std::string log_context;
};

class Connection {
public:
    // `host`, `options` and `out` must outlive the connection.
    Connection(ToolHost& host, const ServerOptions& options, Outbox& out);
    ~Connection();  // shutdown()
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    // One message from the client, as it arrived (JSON-RPC text). Thread: one caller at a time,
    // in the order the client sent them. Never blocks on a tool: calls run on the pool.
    void deliver(std::string_view text);
    // The same, already decoded (the HTTP front end reads a message before delivering it);
    // `bytes`: its size as it arrived.
    void deliver(jsonrpc::Message message, std::size_t bytes);
    // A message over ServerOptions::max_message_bytes, discarded unread.
    void reject_oversized();

    // tools/call running or waiting.
    [[nodiscard]] std::size_t calls() const;

    // Requests stop on every call and waits for them; questions waiting for the user fail;
    // later messages are ignored. A stopped call gets no response (the client went away, or
    // ended the session itself). Idempotent: only the first shutdown counts.
    void shutdown();
    // The same, for a connection the server ends while its client is still there (serve --http
    // draining, the operator ending a session): each call it stops, running or waiting, is
    // answered with JSON-RPC error -32603 and `message` (what happened and what to do next)
    // rather than never. A call the client cancelled still gets no response.
    void shutdown_answering(std::string message);

private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace stockade::mcp
