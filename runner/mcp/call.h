// One tools/call from its arrival to its response, shared by the connection's reader (which
// creates it, and cancels it), the call pool (which runs it) and the elicitor (which asks the
// user on its behalf).
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/mcp/protocol.h"

namespace stockade::mcp {

struct Call {
    nlohmann::json id;
    std::string key;  // jsonrpc::id_key(id): the pool's key
    std::string name;
    nlohmann::json arguments;
    std::size_t bytes = 0;  // the request's size as it arrived (the pool bounds the sum)
    RequestProtocol protocol;
    std::stop_source stop;
    std::atomic<bool> cancelled_by_client{false};  // notifications/cancelled, not EOF

    std::mutex progress_mu;
    std::optional<double> last_progress;  // guarded by progress_mu
    bool finished = false;                // guarded by progress_mu

    // 2026-07-28 multi round-trip requests (set by the reader before the call is queued).
    nlohmann::json input_responses;  // params.inputResponses: object or null
    nlohmann::json carried_answers = nlohmann::json::object();  // from a verified requestState
    std::mutex elicit_mu;
    nlohmann::json used_answers = nlohmann::json::object();  // guarded: applied this round
    nlohmann::json input_requests;  // guarded by elicit_mu: to send back, or null
};

}  // namespace stockade::mcp
