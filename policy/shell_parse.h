// A POSIX sh reader good enough for the commands agents write: it splits a command line into
// simple commands and their words and redirections, without expanding anything.
//   quotes       '...', "...", $'...' (escapes decoded), $"...", backslash, line continuation
//   separators   && || ; ;; | |& & newline
//   grouping     ( ... ), { ...; }, if/then/else/fi, while/until/do/done, for ... in ...;
//                reserved words are dropped and the commands inside kept; name() { ...; };
//                [[ ... ]] is one command whose && || < > ( ) are operands; (( ... )) runs
//                nothing and is skipped
//   nesting      $( ... ), `...`, <( ... ), >( ... ): their commands are read as well
//   redirection  [n]> >> >| < <> &> &>> >&file n>&m (a dup, no file) <<< (a string)
//                <<DELIM / <<-DELIM here-documents: the body is skipped
// Not understood, so reported as a failure (the caller treats the command as opaque):
// unbalanced quotes or parentheses, `case` statements, nesting deeper than 32 levels.
// Pure: no expansion, no globbing, no syscalls.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace stockade::policy {

struct ShellWord {
    std::string text{};       // quotes removed; $..., `...` and $(...) kept as written
    bool quoted = false;      // some part was quoted or escaped
    bool tilde = false;       // starts with an unquoted "~"
    bool expands = false;     // holds an unquoted or double-quoted $ or ` expansion
    bool assignment = false;  // NAME=value (or NAME+=value) as written, unquoted name

    friend bool operator==(const ShellWord&, const ShellWord&) = default;
};

struct Redirection {
    std::string op{};  // "<", ">", ">>", ">|", "<>", "&>", "&>>", ">&" (to a file)
    int fd = -1;       // the explicit descriptor number ("2>"), or -1
    ShellWord target{};
};

struct SimpleCommand {
    std::vector<ShellWord> words{};  // as written: assignments and wrappers included
    std::vector<Redirection> redirections{};
    // Index in `words` where the command proper starts, after leading assignments and
    // wrappers (env, timeout, sudo, ...); set by the analysis (bash_analysis.h). Equal to
    // words.size() when there is no command (only assignments or redirections).
    size_t command_start = 0;
    std::string source{};  // the text it was read from, for display
};

struct ShellParse {
    std::vector<SimpleCommand> commands{};  // in reading order; nested commands included
    bool ok = true;
    std::string error{};  // why it could not be read, when !ok
};

ShellParse parse_shell(std::string_view text);

}  // namespace stockade::policy
