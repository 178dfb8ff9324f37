#include "policy/json_locate.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace stockade::policy {
namespace {

bool is_ws(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

class Locator {
public:
    Locator(std::string_view text, size_t max_depth) : text_(text), max_depth_(max_depth) {}

    std::map<std::string, size_t> run() {
        // nlohmann skips a UTF-8 byte order mark; so do we.
        walk(text_.starts_with("\xEF\xBB\xBF") ? 3 : 0, "", 0);
        return std::move(where_);
    }

private:
    size_t skip_ws(size_t pos) const {
        while (pos < text_.size() && is_ws(text_[pos])) {
            ++pos;
        }
        return pos;
    }

    // `pos` is at an opening quote; returns the offset past the closing one.
    size_t skip_string(size_t pos) const {
        for (++pos; pos < text_.size(); ++pos) {
            if (text_[pos] == '\\') {
                ++pos;
            } else if (text_[pos] == '"') {
                return pos + 1;
            }
        }
        return text_.size();
    }

    size_t walk(size_t pos, const std::string& pointer, size_t depth) {
        pos = skip_ws(pos);
        if (pos >= text_.size()) {
            return pos;
        }
        const bool record = depth <= max_depth_;
        if (record) {
            where_[pointer] = pos;
        }
        const char c = text_[pos];
        if (c == '"') {
            return skip_string(pos);
        }
        if (c == '{' || c == '[') {
            const char close = c == '{' ? '}' : ']';
            size_t index = 0;
            pos = skip_ws(pos + 1);
            while (pos < text_.size() && text_[pos] != close) {
                std::string child;
                if (c == '{') {
                    const size_t key_end = skip_string(pos);
                    if (record) {
                        // The key is valid JSON, so nlohmann decodes its escapes for us.
                        child = json_pointer_append(
                            pointer, nlohmann::json::parse(text_.substr(pos, key_end - pos))
                                         .get<std::string>());
                    }
                    pos = skip_ws(key_end) + 1;  // past ':'
                } else if (record) {
                    child = json_pointer_append(pointer, std::to_string(index++));
                }
                pos = skip_ws(walk(pos, child, depth + 1));
                if (pos < text_.size() && text_[pos] == ',') {
                    pos = skip_ws(pos + 1);
                }
            }
            return pos + 1;
        }
        while (pos < text_.size() && !is_ws(text_[pos]) && text_[pos] != ',' && text_[pos] != ']' &&
               text_[pos] != '}') {
            ++pos;
        }
        return pos;
    }

    std::string_view text_;
    size_t max_depth_;
    std::map<std::string, size_t> where_;
};

}  // namespace

TextPosition position_of(std::string_view text, size_t offset) {
    TextPosition out;
    offset = std::min(offset, text.size());
    for (size_t i = 0; i < offset; ++i) {
        if (text[i] == '\n') {
            ++out.line;
            out.column = 1;
        } else {
            ++out.column;
        }
    }
    return out;
}

std::optional<size_t> too_deep(std::string_view text, size_t max_depth) {
    size_t depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') {
                ++i;
            } else if (c == '"') {
                in_string = false;
            }
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max_depth) {
                return i;
            }
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return std::nullopt;
}

std::string json_pointer_append(std::string_view pointer, std::string_view key) {
    std::string out(pointer);
    out += '/';
    for (char c : key) {
        if (c == '~') {
            out += "~0";
        } else if (c == '/') {
            out += "~1";
        } else {
            out += c;
        }
    }
    return out;
}

std::map<std::string, size_t> locate_values(std::string_view valid_json, size_t max_depth) {
    return Locator(valid_json, max_depth).run();
}

}  // namespace stockade::policy
