// Asking the user through the client on behalf of a running tools/call (docs/protocol.md §6),
// in both protocol eras:
//   2025: an elicitation/create request to the client; the call's thread waits for the
//         response, which the connection's reader hands to deliver().
//   2026-07-28: no server-to-client requests. The answer comes with the request (the client
//         retrying after an input_required result), or the question is recorded on the call,
//         the call is stopped, and input_required_reply() is what the connection sends back.
// The pure parts (params, checking an answer, the sealed requestState) are in elicitation.h.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "runner/mcp/call.h"
#include "runner/mcp/elicitation.h"
#include "runner/mcp/jsonrpc.h"
#include "runner/mcp/outbox.h"
#include "runner/mcp/tool_host.h"

namespace stockade::mcp {

class Elicitor {
public:
    // `server_info` goes in the _meta of input_required results.
    Elicitor(Outbox& out, std::size_t max_message_bytes, nlohmann::json server_info);

    // Asks the question of `request` for `call`, in the call's era. Thread: the call's.
    Result<ElicitResponse> elicit(Call& call, const ElicitRequest& request);

    // A response from the client. The answer to one of our pending elicitation/create requests
    // wakes its call; anything else (an unknown or late id) is logged and dropped.
    void deliver(jsonrpc::Response& response);

    // The answers sealed in a retried call's params.requestState (2026-07-28), checked against
    // the call's tool and arguments; kInvalidArgument when forged, expired or for another call.
    Result<nlohmann::json> open_state(std::string_view state, const std::string& tool,
                                      const nlohmann::json& arguments) const;

    // For a call that stopped because it asked a question (2026-07-28): the input_required
    // reply to send, with the answers so far sealed in its requestState. nullopt when the call
    // asked nothing.
    std::optional<std::string> input_required_reply(Call& call);

    // The connection is closing: questions waiting for an answer fail at once, later ones too.
    void close();

private:
    // A legacy elicitation/create in flight, waiting for the client's response. Guarded by mu_.
    struct Pending {
        std::condition_variable_any cv;
        bool done = false;    // the client answered
        bool closed = false;  // the connection is closing
        nlohmann::json result;
        nlohmann::json error;
    };

    Result<ElicitResponse> by_request(Call& call, const ElicitRequest& request);
    Result<ElicitResponse> by_input_required(Call& call, const ElicitRequest& request);

    Outbox& out_;
    const std::size_t max_message_bytes_;
    const nlohmann::json server_info_;
    std::mutex mu_;
    std::unordered_map<std::string, std::shared_ptr<Pending>> pending_;  // by our request id
    bool closed_ = false;                                                // guarded by mu_
    std::atomic<std::uint64_t> ids_{0};
    RequestStateSealer request_state_;  // per connection: a new process rejects old states
};

}  // namespace stockade::mcp
