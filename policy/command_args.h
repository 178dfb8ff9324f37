// Reading the arguments of one simple command: options (with the ones that take a value),
// positionals, and the git subcommand. Shared by the request derivation and the destructive
// warnings; best effort, as every program parses its own arguments.
#pragma once

#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/shell_parse.h"

namespace stockade::policy {

// "/usr/bin/curl" → "curl".
std::string_view program_name(std::string_view word);

struct CommandArgs {
    std::vector<ShellWord> positional;
    // Options that took a value, by the name as written ("-o", "--output"), in order.
    std::vector<std::pair<std::string, ShellWord>> values;
    std::string short_flags;              // every short option letter seen (clusters split)
    std::vector<std::string> long_flags;  // "--force", as written, without values

    // The value of the last of `names` given, or nullptr.
    [[nodiscard]] const ShellWord* value(std::initializer_list<std::string_view> names) const;
    [[nodiscard]] bool has_value(std::initializer_list<std::string_view> names) const {
        return value(names) != nullptr;
    }
    [[nodiscard]] bool has_short(char letter) const {
        return short_flags.find(letter) != std::string::npos;
    }
    [[nodiscard]] bool has_long(std::string_view name) const;
};

// getopt_long-style: "-abc" is a cluster; a letter of `short_with_value` takes the rest of
// its cluster or the next word; "--name=value", or "--name value" for the names listed; "--"
// ends the options; "-" is a positional.
CommandArgs parse_args(std::span<const ShellWord> args, std::string_view short_with_value,
                       std::initializer_list<std::string_view> long_with_value = {});

// Index in argv of git's subcommand (after -C DIR, -c K=V, --git-dir ... ), or argv.size().
size_t git_subcommand_index(std::span<const ShellWord> argv);

}  // namespace stockade::policy
