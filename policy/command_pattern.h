// Command specifiers of Bash/Process/process.execute rules, in Claude Code's syntax:
//   Bash(npm run lint)      exactly that command
//   Bash(npm run test:*)    a prefix at a word boundary: "npm run test", "npm run test -- x",
//                           not "npm run testing" (a prefix ending in punctuation, such as
//                           "curl https://x.io/:*", may continue within its last word)
//   Bash(git * main)        "*" matches any run of characters, spaces included; a trailing
//                           " *" also matches the command without arguments ("ls *" ⊇ "ls")
// Whitespace runs count as one space. Commands are matched as the analysis normalises them
// (bash_analysis.h): words without their quotes, joined by single spaces.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stockade::policy {

// Trims and collapses every run of blanks (space, tab, newline) to one space.
std::string normalise_command_text(std::string_view text);

// True when `text` matches `pattern`, where "*" matches any run of characters (nothing else
// is special). Linear-time backtracking; used for commands, hosts and git subcommands.
bool wildcard_match(std::string_view pattern, std::string_view text);

class CommandPattern {
public:
    enum class Kind : uint8_t { kAny, kExact, kPrefix, kWildcard };

    // An empty specifier or "*" matches every command.
    static CommandPattern compile(std::string_view specifier);

    [[nodiscard]] bool matches(std::string_view command) const;
    [[nodiscard]] Kind kind() const { return kind_; }
    [[nodiscard]] const std::string& text() const { return text_; }
    // The first word when the pattern starts with a literal word, else "": lets the policy
    // skip rules about other programs without running the matcher.
    [[nodiscard]] const std::string& first_word() const { return first_word_; }

private:
    Kind kind_ = Kind::kAny;
    std::string text_;  // kExact: the command; kPrefix: the prefix; kWildcard: pattern
    std::string bare_;  // kWildcard ending in " *": the command without arguments
    std::string first_word_;
};

}  // namespace stockade::policy
