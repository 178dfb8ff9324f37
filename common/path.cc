#include "common/path.h"

namespace stockade {

void append_normalised_components(std::string_view path, std::vector<std::string_view>& parts) {
    size_t start = 0;
    while (start <= path.size()) {
        size_t slash = path.find('/', start);
        if (slash == std::string_view::npos) {
            slash = path.size();
        }
        const std::string_view part = path.substr(start, slash - start);
        if (part == "..") {
            if (!parts.empty()) {
                parts.pop_back();
            }
        } else if (!part.empty() && part != ".") {
            parts.push_back(part);
        }
        start = slash + 1;
    }
}

std::string join_absolute(const std::vector<std::string_view>& parts, size_t from) {
    std::string out;
    for (size_t i = from; i < parts.size(); ++i) {
        out += '/';
        out += parts[i];
    }
    return out.empty() ? "/" : out;
}

std::vector<std::string> split_path_list(std::string_view list) {
    std::vector<std::string> out;
    size_t start = 0;
    for (;;) {
        const size_t colon = list.find(':', start);
        out.emplace_back(
            list.substr(start, colon == std::string_view::npos ? colon : colon - start));
        if (colon == std::string_view::npos) {
            return out;
        }
        start = colon + 1;
    }
}

}  // namespace stockade
