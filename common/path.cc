#include "common/path.h"

namespace stockade {

void append_normalised_components(std::string_view path, std::vector<std::string_view>& parts) {
    for (std::string_view part : split(path, '/')) {
        if (part == "..") {
            if (!parts.empty()) {
                parts.pop_back();
            }
        } else if (!part.empty() && part != ".") {
            parts.push_back(part);
        }
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

std::vector<std::string_view> split(std::string_view text, char sep) {
    std::vector<std::string_view> out;
    for (;;) {
        const size_t at = text.find(sep);
        out.push_back(text.substr(0, at));
        if (at == std::string_view::npos) {
            return out;
        }
        text.remove_prefix(at + 1);
    }
}

std::vector<std::string_view> path_components(std::string_view path) {
    std::vector<std::string_view> out;
    for (std::string_view part : split(path, '/')) {
        if (!part.empty()) {
            out.push_back(part);
        }
    }
    return out;
}

std::vector<std::string> split_path_list(std::string_view list) {
    std::vector<std::string> out;
    for (std::string_view entry : split(list, ':')) {
        out.emplace_back(entry);
    }
    return out;
}

std::string_view parent_of(std::string_view relative) {
    const size_t slash = relative.rfind('/');
    return slash == std::string_view::npos ? std::string_view() : relative.substr(0, slash);
}

}  // namespace stockade
