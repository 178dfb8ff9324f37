#include "images/entry_path.h"

#include <fmt/format.h>

namespace stockade::images {

std::string quote_entry_name(std::string_view name) {
    constexpr std::size_t kShown = 200;
    std::string out = "\"";
    for (std::size_t i = 0; i < name.size() && i < kShown; ++i) {
        const auto c = static_cast<unsigned char>(name[i]);
        if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
            out += fmt::format("\\x{:02x}", c);
        } else {
            out += static_cast<char>(c);
        }
    }
    out += name.size() > kShown ? "\"..." : "\"";
    return out;
}

Result<std::string> normalize_entry_path(std::string_view name) {
    auto refuse = [&](std::string_view what) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("entry {}: {}; {}", quote_entry_name(name), what, kEntryRemedy)};
    };
    if (name.empty()) {
        return refuse("the name is empty");
    }
    if (name.find('\0') != std::string_view::npos) {
        return refuse("the name holds a NUL byte");
    }
    if (name.size() > kMaxEntryPathBytes) {
        return refuse(fmt::format("the name is longer than {} bytes", kMaxEntryPathBytes));
    }
    std::string out;
    out.reserve(name.size());
    std::size_t start = 0;
    while (start <= name.size()) {
        std::size_t slash = name.find('/', start);
        if (slash == std::string_view::npos) {
            slash = name.size();
        }
        const std::string_view part = name.substr(start, slash - start);
        start = slash + 1;
        if (part.empty() || part == ".") {
            continue;
        }
        if (part == "..") {
            return refuse("the name has a \"..\" component, which could leave the image's root");
        }
        if (part.size() > kMaxEntryNameBytes) {
            return refuse(
                fmt::format("a component of the name is longer than {} bytes", kMaxEntryNameBytes));
        }
        if (!out.empty()) {
            out += '/';
        }
        out += part;
    }
    return out;
}

}  // namespace stockade::images
