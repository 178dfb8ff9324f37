// MCP elicitation (form mode), without I/O: what a client must declare, the elicitation/create
// params we send, how a client's ElicitResult is checked, and the integrity-protected
// requestState of 2026-07-28 multi round-trip requests. McpServer does the sending and waiting
// (docs/protocol.md §6).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "runner/mcp/tool_host.h"

namespace stockade::mcp {

inline constexpr std::string_view kElicitMethod = "elicitation/create";

// True when `client_capabilities.elicitation` declares form mode: an empty object (2025-06-18,
// and 2025-11-25's backwards-compatible form), or an object with "form". {"url": {}} alone
// declares URL mode only.
bool supports_form_elicitation(const nlohmann::json& client_capabilities);

// The params of elicitation/create for `request` under `protocol_version`:
//   {"mode": "form", "message": ..., "requestedSchema": {"type": "object", "properties": ...}}
// ("mode" is left out before 2025-11-25, which added it). The schema gets "type": "object" and
// "properties": {} when missing. kInvalidArgument when the schema is not a flat object of
// primitive properties (what the spec's PrimitiveSchemaDefinition allows).
Result<nlohmann::json> elicit_params(const ElicitRequest& request,
                                     std::string_view protocol_version);

// Checks a client's ElicitResult against the requestedSchema that was sent (as elicit_params
// made it). kInvalidArgument when it is malformed: action not one of accept/decline/cancel, or,
// on accept, content that is not an object, lacks a required property, or holds a value of the
// wrong type or outside its enum. Properties not in the schema are dropped; content is null
// unless the action is accept.
Result<ElicitResponse> parse_elicit_result(const nlohmann::json& result,
                                           const nlohmann::json& requested_schema);

// The inputRequests key of one question (2026-07-28): "stockade-elicit-" and a digest of the
// params, so that an answer is only ever applied to the very question it answers.
std::string input_request_key(const nlohmann::json& params);

// HMAC-SHA256 over the requestState payload, with a random per-process key: a state cannot be
// forged, and one minted by an earlier server process is rejected.
class RequestStateSealer {
public:
    RequestStateSealer();  // a fresh random key
    explicit RequestStateSealer(const std::array<unsigned char, 32>& key) : key_(key) {}

    // "v1.<hex mac>.<payload json>". The payload binds the answers to one tool and the digest of
    // its arguments, and expires after `ttl`.
    std::string seal(const std::string& tool, const nlohmann::json& arguments,
                     const nlohmann::json& answers, std::chrono::milliseconds ttl) const;
    // The answers of a state made by seal() for the same tool and arguments, not expired;
    // kInvalidArgument otherwise.
    Result<nlohmann::json> open(std::string_view state, const std::string& tool,
                                const nlohmann::json& arguments) const;

private:
    std::string mac_hex(std::string_view payload) const;

    std::array<unsigned char, 32> key_{};
};

}  // namespace stockade::mcp
