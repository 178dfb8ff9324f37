// Fuzzes the MCP stdio framing and JSON-RPC decoding: no crash, no exception, every request id
// valid, every reply we would send one parseable line, and no framed line over the cap or
// holding a newline.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "runner/mcp/jsonrpc.h"
#include "runner/mcp/line_framer.h"

namespace {

namespace jsonrpc = stockade::mcp::jsonrpc;

void check_line(const std::string& line) {
    if (line.find('\n') != std::string::npos) {
        std::abort();
    }
    auto reparsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (reparsed.is_discarded()) {
        std::abort();
    }
}

void check_decode(std::string_view text) {
    auto decoded = jsonrpc::decode(text);
    if (auto* failure = std::get_if<jsonrpc::DecodeFailure>(&decoded)) {
        if (!failure->id.is_null() && !jsonrpc::is_valid_id(failure->id)) {
            std::abort();
        }
        check_line(jsonrpc::encode_error(failure->id, failure->code, failure->message));
        return;
    }
    const auto& message = std::get<jsonrpc::Message>(decoded);
    if (const auto* request = std::get_if<jsonrpc::Request>(&message)) {
        if (!jsonrpc::is_valid_id(request->id)) {
            std::abort();
        }
        check_line(jsonrpc::encode_result(request->id, request->params));
        (void)jsonrpc::id_text(request->id);
    } else if (const auto* notification = std::get_if<jsonrpc::Notification>(&message)) {
        check_line(jsonrpc::encode_notification(notification->method, notification->params));
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    check_decode(text);

    // Frame the same bytes with a small cap, split at a data-dependent point.
    constexpr std::size_t kCap = 64;
    stockade::mcp::LineFramer framer(kCap);
    std::vector<stockade::mcp::FramedLine> lines;
    const std::size_t split = size == 0 ? 0 : data[0] % (size + 1);
    framer.feed(text.substr(0, split), lines);
    framer.feed(text.substr(split), lines);
    framer.finish(lines);
    for (const auto& line : lines) {
        if (line.text.size() > kCap || line.text.find('\n') != std::string::npos ||
            (line.oversized && !line.text.empty())) {
            std::abort();
        }
        if (!line.oversized) {
            check_decode(line.text);
        }
    }
    return 0;
}
