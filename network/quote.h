// A piece of client or operator text quoted for an error message. The text comes from a sandbox
// (a request line, a host) and the message goes to a model and a log: control bytes and quotes
// are escaped so that the text cannot end the message early or forge a line, and a long text is
// cut so that one request cannot fill a log.
#pragma once

#include <string>
#include <string_view>

#include <fmt/format.h>

namespace stockade::network {

inline std::string quote(std::string_view text, size_t max = 80) {
    std::string out = "\"";
    for (size_t i = 0; i < text.size(); ++i) {
        if (i == max) {
            out += "...";
            break;
        }
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20 || c >= 0x7f) {
            out += fmt::format("\\x{:02x}", c);
        } else {
            out += static_cast<char>(c);
        }
    }
    out += '"';
    return out;
}

}  // namespace stockade::network
