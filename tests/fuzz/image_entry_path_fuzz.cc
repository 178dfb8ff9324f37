// Fuzzes normalize_entry_path, the name check every archive entry of an image passes before the
// layer writer resolves it beneath the root: no crash; an accepted name is relative, holds no
// NUL, no empty, "." or ".." component, no component over 255 bytes and is at most 4096 bytes;
// it spells the input's non-empty, non-"." components back in order; and it is a fixed point.
// A refusal is kInvalidArgument and names the entry.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "images/entry_path.h"

namespace {

// The input's components but empty and "." ones, or nothing if one is "..".
std::vector<std::string_view> kept_components(std::string_view text, bool& has_dotdot) {
    std::vector<std::string_view> parts;
    has_dotdot = false;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t slash = text.find('/', start);
        if (slash == std::string_view::npos) {
            slash = text.size();
        }
        const std::string_view part = text.substr(start, slash - start);
        start = slash + 1;
        has_dotdot = has_dotdot || part == "..";
        if (!part.empty() && part != ".") {
            parts.push_back(part);
        }
    }
    return parts;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const auto normalized = stockade::images::normalize_entry_path(text);
    bool has_dotdot = false;
    const std::vector<std::string_view> parts = kept_components(text, has_dotdot);
    if (!normalized) {
        if (normalized.error().code != stockade::Errc::kInvalidArgument ||
            normalized.error().message.find("entry \"") != 0) {
            std::abort();
        }
        return 0;
    }
    const std::string& path = *normalized;
    if (has_dotdot || text.empty() || text.size() > stockade::images::kMaxEntryPathBytes ||
        text.find('\0') != std::string_view::npos || path.size() > text.size() ||
        (!path.empty() && (path.front() == '/' || path.back() == '/'))) {
        std::abort();
    }
    std::string joined;
    for (const std::string_view part : parts) {
        if (part.size() > stockade::images::kMaxEntryNameBytes) {
            std::abort();
        }
        joined += (joined.empty() ? "" : "/") + std::string(part);
    }
    if (joined != path || path.find("//") != std::string::npos) {
        std::abort();
    }
    if (!path.empty()) {
        const auto again = stockade::images::normalize_entry_path(path);
        if (!again || *again != path) {
            std::abort();
        }
    }
    return 0;
}
