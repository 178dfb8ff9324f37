// Where the messages of one MCP connection go. The stdio front end writes them all to its one
// output, in order; the HTTP front end routes each to the response stream of the client request
// it belongs to (its response, the progress of a call, a question a call asks the user).
#pragma once

#include <string>

namespace stockade::mcp {

struct Route {
    // jsonrpc::id_key of the client request the message belongs to; empty for none.
    std::string request;
    // The request's last message: its response, or, when the message is empty, the end of a
    // request that gets no response (a cancelled call).
    bool last = false;
};

class Outbox {
public:
    virtual ~Outbox() = default;
    // One whole JSON-RPC message (or an empty one, see Route::last). Thread-safe; messages
    // leave in the order post() was called.
    virtual void post(std::string message, const Route& route) = 0;
};

}  // namespace stockade::mcp
