// Text helpers the image code shares (references, challenges, auth files). Internal to images/.
#pragma once

#include <string>
#include <string_view>

namespace stockade::images {

// `text` with A-Z made a-z and every other byte as it is: hosts, schemes, parameter names,
// which registries and RFC 7235 compare without regard to ASCII case.
inline std::string ascii_lower(std::string_view text) {
    std::string out(text);
    for (char& c : out) {
        if (c >= 'A' && c <= 'Z') {
            c = static_cast<char>(c - 'A' + 'a');
        }
    }
    return out;
}

}  // namespace stockade::images
