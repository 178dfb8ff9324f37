#include "policy/command_pattern.h"

#include "policy/star_match.h"

namespace stockade::policy {
namespace {

bool is_blank(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

}  // namespace

std::string normalise_command_text(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    bool pending_space = false;
    for (char c : text) {
        if (is_blank(c)) {
            pending_space = !out.empty();
            continue;
        }
        if (pending_space) {
            out += ' ';
            pending_space = false;
        }
        out += c;
    }
    return out;
}

bool wildcard_match(std::string_view pattern, std::string_view text) {
    return star_match(pattern, text, [](std::string_view pat, size_t p, char c, size_t& next) {
        next = p + 1;
        return pat[p] == c;
    });
}

CommandPattern CommandPattern::compile(std::string_view specifier) {
    CommandPattern out;
    std::string text = normalise_command_text(specifier);
    if (text.empty() || text == "*") {
        return out;
    }
    // The legacy prefix form "cmd:*" is "cmd *" with an optional tail.
    if (text.ends_with(":*")) {
        text.resize(text.size() - 2);
        while (!text.empty() && text.back() == ' ') {
            text.pop_back();
        }
        if (text.empty()) {
            return out;  // ":*" alone: any command
        }
        if (text.find('*') == std::string::npos) {
            out.kind_ = Kind::kPrefix;
        } else {
            text += " *";
        }
    }
    if (out.kind_ != Kind::kPrefix) {
        if (text.find('*') == std::string::npos) {
            out.kind_ = Kind::kExact;
        } else {
            out.kind_ = Kind::kWildcard;
            if (text.ends_with(" *")) {
                out.bare_ = text.substr(0, text.size() - 2);
            }
        }
    }
    out.text_ = std::move(text);
    const size_t space = out.text_.find(' ');
    const std::string_view whole = out.text_;
    const std::string_view first = whole.substr(0, space);
    if (first.find('*') == std::string_view::npos &&
        (space != std::string::npos || out.kind_ != Kind::kWildcard)) {
        out.first_word_ = first;
    }
    return out;
}

bool CommandPattern::matches(std::string_view command) const {
    switch (kind_) {
        case Kind::kAny:
            return true;
        case Kind::kExact:
            return command == text_;
        case Kind::kPrefix: {
            // Most prefixes name another program: the first byte rejects them cheaply.
            if (command.empty() || command.front() != text_.front() ||
                !command.starts_with(text_)) {
                return false;
            }
            // "npm run test:*" stops at a word boundary (not "npm run testing"); a prefix that
            // ends in punctuation ("curl https://x.io/:*") continues into the same word.
            const char last = text_.back();
            const bool word_char = (last >= 'a' && last <= 'z') || (last >= 'A' && last <= 'Z') ||
                                   (last >= '0' && last <= '9') || last == '_';
            return !word_char || command.size() == text_.size() || command[text_.size()] == ' ';
        }
        case Kind::kWildcard:
            return wildcard_match(text_, command) ||
                   (!bare_.empty() && wildcard_match(bare_, command));
    }
    return false;
}

}  // namespace stockade::policy
