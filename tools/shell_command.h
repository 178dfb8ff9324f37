// What the `bash` tool knows about a command line before and after it runs, without running a
// shell: whether it can be executed directly (plain words) or needs /bin/bash -c; the program a
// simple command runs (for "Did you mean …?" and semantic exit codes); which exit codes of
// which programs are not failures (grep 1 = no matches, …); and the destructive patterns the
// result warns about (rm -rf, git push --force, DROP TABLE, …). Pure: no I/O.
//
// The lexer here is deliberately small: quotes, backslashes and the operators that separate
// commands. It is advisory (warnings, hints), never a security boundary: the sandbox is.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stockade::tools {

enum class ShellKind : uint8_t {
    kDirect,  // argv = the command's words, executed without a shell
    kBash,    // argv = {"/bin/bash", "-c", command}
};
std::string_view shell_kind_name(ShellKind kind) noexcept;  // "direct", "bash"

struct ShellPlan {
    ShellKind kind = ShellKind::kBash;
    std::vector<std::string> argv{};
};

// Direct when the command is made only of plain words (letters, digits and `_-./:=@%+,`,
// separated by spaces or tabs: no quotes, `$`, globs, redirections, operators, `~`, backslash
// or newline) and its first word is neither a shell builtin or keyword nor contains '='.
ShellPlan plan_command(std::string_view command);
// bash builtins and reserved words ("cd", "export", "if", "[[", ".", ...).
bool is_shell_builtin(std::string_view word);

// The simple commands of a command line, each as its words (quotes removed), split at
// `|`, `||`, `&&`, `;`, `&`, newlines, parentheses, `$(` and backquotes. Redirection operators
// end a word; their targets stay in as words.
struct LexedCommand {
    std::vector<std::vector<std::string>> commands{};
    bool compound = false;  // more than one simple command, or any separator at all
};
LexedCommand lex_command(std::string_view command);

// The program a simple command runs: its first word after environment assignments (NAME=…)
// and reserved words, with wrappers skipped (env, sudo, nohup, time, command, exec, nice),
// reduced to its base name ("/usr/bin/grep" → "grep"). Empty when there is none.
std::string program_of(const std::vector<std::string>& words);
// The program word of the command's first simple command as written ("./build.sh", "npmm"),
// after assignments, reserved words and wrappers; "" when there is none.
std::string first_program_word(std::string_view command);
// program_of the command when it is a single simple command (no pipes or separators), else "".
std::string simple_program(std::string_view command);

// semantic_status/semantic_message of terminal-tools-foundations: "ok" on exit 0 and on the
// informational exit 1 of grep/rg/egrep/fgrep ("No matches found"), diff/cmp ("Files differ"),
// test/[/[[ ("Condition is false") and find ("Some paths could not be read") when the command
// is a single simple command running that program; "signal" when a signal ended it; "error"
// otherwise.
struct SemanticStatus {
    std::string status{};   // "ok" | "error" | "signal"
    std::string message{};  // "" when there is nothing to say
};
SemanticStatus semantic_status(std::string_view command, std::optional<int> exit_code,
                               std::optional<int> signal);

// bash's own report that the command's program does not exist, when that is the whole output
// of a command that exited 127: "/bin/bash: line 1: npmm: command not found" (also "bash: …"
// and without "line N: "). Returns the reason after "<program>: " ("command not found", "No
// such file or directory", "Permission denied") when the line names `program`, else nullopt.
std::optional<std::string> bash_spawn_failure(std::string_view rendered_output,
                                              std::string_view program);

// The executable on PATH most like `word` (a typo): edit distance 1 (a transposition counts as
// one) for words up to 4 characters, 2 for longer ones; ties prefer the same first letter, then
// the same length, then the alphabetically first. nullopt when nothing is close, or when
// `word` itself is on PATH.
std::optional<std::string> suggest_command(std::string_view word,
                                           const std::vector<std::string>& commands);

}  // namespace stockade::tools
