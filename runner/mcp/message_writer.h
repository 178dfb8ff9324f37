// The output side of one MCP connection over stdio: messages from any thread go out as whole
// lines, in the order they were sent. A closed output is an EPIPE, never a SIGPIPE.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <utility>

#include "runner/mcp/outbox.h"

namespace stockade::mcp {

class MessageWriter final : public Outbox {
public:
    // `fd` stays the caller's. `on_broken` runs once, the first time a write fails for good
    // (the client went away); later sends are dropped.
    MessageWriter(int fd, std::function<void()> on_broken);

    // Writes `line` and a newline. Blocks while the peer is not reading.
    void send(std::string line);

    // Every message goes to the one output; the end of a request without one writes nothing.
    void post(std::string message, const Route& /*route*/) override {
        if (!message.empty()) {
            send(std::move(message));
        }
    }

private:
    const int fd_;
    const bool is_socket_;  // MSG_NOSIGNAL there; SIGPIPE blocked around pipe writes
    std::function<void()> on_broken_;
    std::mutex mu_;
    bool broken_ = false;  // guarded by mu_
};

}  // namespace stockade::mcp
