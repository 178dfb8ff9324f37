// A piece of untrusted text quoted for an error message: a field of an image manifest, a
// reference typed by a user, a registry's header. Control bytes, quotes and bytes past ASCII are
// escaped so that the text cannot end the message early or forge a log line, and a long text is
// cut so that one document cannot fill a log. The network proxy quotes what a sandbox sends
// (a request line, a host) with it too.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace stockade {

inline std::string quote(std::string_view text, std::size_t max = 80) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out = "\"";
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (i == max) {
            out += "...";
            break;
        }
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20 || c >= 0x7f) {
            out += "\\x";
            out += kHex[c >> 4U];
            out += kHex[c & 0x0FU];
        } else {
            out += static_cast<char>(c);
        }
    }
    out += '"';
    return out;
}

}  // namespace stockade
