#include "policy/command_args.h"

#include <algorithm>

namespace stockade::policy {
namespace {

bool listed(std::string_view name, std::initializer_list<std::string_view> names) {
    for (std::string_view candidate : names) {
        if (candidate == name) {
            return true;
        }
    }
    return false;
}

// A value cut out of a larger word ("--output=~/x", "-n5") keeps what can be known of it.
ShellWord part_of(const ShellWord& word, std::string_view text) {
    return ShellWord{.text = std::string(text),
                     .quoted = word.quoted,
                     .tilde = text.starts_with('~'),
                     .expands = word.expands,
                     .assignment = false};
}

}  // namespace

std::string_view program_name(std::string_view word) {
    const size_t slash = word.rfind('/');
    return slash == std::string_view::npos ? word : word.substr(slash + 1);
}

const ShellWord* CommandArgs::value(std::initializer_list<std::string_view> names) const {
    const ShellWord* found = nullptr;
    for (const auto& [name, word] : values) {
        if (listed(name, names)) {
            found = &word;
        }
    }
    return found;
}

bool CommandArgs::has_long(std::string_view name) const {
    for (const std::string& flag : long_flags) {
        if (flag == name) {
            return true;
        }
    }
    return false;
}

CommandArgs parse_args(std::span<const ShellWord> args, std::string_view short_with_value,
                       std::initializer_list<std::string_view> long_with_value) {
    CommandArgs out;
    bool options_done = false;
    for (size_t i = 0; i < args.size(); ++i) {
        const ShellWord& word = args[i];
        const std::string_view text = word.text;
        if (options_done || text.size() < 2 || text.front() != '-') {
            out.positional.push_back(word);
            continue;
        }
        if (text == "--") {
            options_done = true;
            continue;
        }
        if (text.starts_with("--")) {
            const size_t equals = text.find('=');
            if (equals != std::string_view::npos) {
                out.values.emplace_back(std::string(text.substr(0, equals)),
                                        part_of(word, text.substr(equals + 1)));
            } else if (listed(text, long_with_value) && i + 1 < args.size()) {
                out.values.emplace_back(std::string(text), args[++i]);
            } else {
                out.long_flags.emplace_back(text);
            }
            continue;
        }
        for (size_t j = 1; j < text.size(); ++j) {
            const char letter = text[j];
            if (short_with_value.find(letter) == std::string_view::npos) {
                out.short_flags += letter;
                continue;
            }
            const std::string name{'-', letter};
            if (j + 1 < text.size()) {
                out.values.emplace_back(name, part_of(word, text.substr(j + 1)));
            } else if (i + 1 < args.size()) {
                out.values.emplace_back(name, args[++i]);
            }
            break;
        }
    }
    return out;
}

size_t git_subcommand_index(std::span<const ShellWord> argv) {
    size_t i = 1;
    while (i < argv.size()) {
        const std::string_view text = argv[i].text;
        if (text.size() < 2 || text.front() != '-') {
            break;
        }
        const bool takes_value = listed(text, {"-C", "-c", "--git-dir", "--work-tree",
                                               "--namespace", "--super-prefix", "--config-env"});
        i += takes_value ? 2 : 1;
    }
    return std::min(i, argv.size());
}

}  // namespace stockade::policy
