// JSON-RPC 2.0 as MCP uses it: pure decoding of one message and encoding of replies. No I/O.
//
// MCP narrows JSON-RPC: request ids are strings or integers (never null), params are objects,
// and batches (top-level arrays) were removed in protocol 2025-06-18, so an array is an
// Invalid Request here. Decoding never throws: nlohmann_json exceptions stop at this edge and
// become a DecodeFailure carrying the JSON-RPC error to send back.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

namespace stockade::mcp::jsonrpc {

// Standard JSON-RPC 2.0 codes, plus the MCP-defined codes of protocol 2026-07-28 (which
// reserves -32020..-32099 for the MCP specification).
enum class ErrorCode : int {
    kParseError = -32700,
    kInvalidRequest = -32600,
    kMethodNotFound = -32601,
    kInvalidParams = -32602,
    kInternalError = -32603,
    kHeaderMismatch = -32020,  // Streamable HTTP: an Mcp-* header disagrees with the body
    kMissingRequiredClientCapability = -32021,
    kUnsupportedProtocolVersion = -32022,
};

// Messages nested deeper than this are rejected before parsing (bounds recursion everywhere a
// json value is walked later).
inline constexpr std::size_t kMaxNestingDepth = 128;

struct Request {
    nlohmann::json id;  // a string or an integer, echoed back verbatim
    std::string method;
    nlohmann::json params;  // an object, an array, or null when absent
};

struct Notification {
    std::string method;
    nlohmann::json params;  // an object, an array, or null when absent
};

// A response from the peer (the client answering a request of ours).
struct Response {
    nlohmann::json id;
    nlohmann::json result;  // null when the response is an error
    nlohmann::json error;   // null when the response is a result
};

using Message = std::variant<Request, Notification, Response>;

// What to answer when a line is not a valid message. `id` is the request id when it could be
// read, else null.
struct DecodeFailure {
    ErrorCode code = ErrorCode::kInvalidRequest;
    std::string message;
    nlohmann::json id;
};

using Decoded = std::variant<Message, DecodeFailure>;

// Decodes one message (one line of the stdio transport, without its newline).
Decoded decode(std::string_view text) noexcept;

// True for a valid MCP request id: a string or an integer.
bool is_valid_id(const nlohmann::json& id) noexcept;

// A stable text form of an id: the string itself, or the integer in decimal. Two ids that
// differ only in type ("7" and 7) give the same text; use id_key() to tell them apart.
std::string id_text(const nlohmann::json& id);
// A key that distinguishes every valid id (its JSON serialisation).
std::string id_key(const nlohmann::json& id);

// Encoders. Each returns one JSON text without a newline and without raw newlines inside it;
// invalid UTF-8 in strings is replaced with U+FFFD instead of throwing.
std::string encode_result(const nlohmann::json& id, nlohmann::json result);
// A null `id` means the request's id could not be read: the reply then has no "id" member, as
// MCP's JSONRPCErrorResponse allows (JSON-RPC 2.0 itself would send "id": null).
std::string encode_error(const nlohmann::json& id, ErrorCode code, std::string_view message,
                         const nlohmann::json& data = nullptr);
std::string encode_notification(std::string_view method, nlohmann::json params);

// Serialises any value the way the encoders do.
std::string dump(const nlohmann::json& value);

}  // namespace stockade::mcp::jsonrpc
