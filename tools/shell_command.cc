#include "tools/shell_command.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <tuple>

#include "tools/similar.h"

namespace stockade::tools {
namespace {

bool is_plain_char(char c) {
    const auto u = static_cast<unsigned char>(c);
    return std::isalnum(u) != 0 || std::string_view("_-./:=@%+,").find(c) != std::string_view::npos;
}

bool is_name_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

bool is_name_char(char c) {
    return is_name_start(c) || (c >= '0' && c <= '9');
}

// NAME=value (an environment assignment in front of a command).
bool is_assignment(std::string_view word) {
    const size_t eq = word.find('=');
    if (eq == std::string_view::npos || eq == 0 || !is_name_start(word[0])) {
        return false;
    }
    return std::all_of(word.begin(), word.begin() + static_cast<std::ptrdiff_t>(eq), is_name_char);
}

std::string_view base_name(std::string_view path) {
    const size_t slash = path.rfind('/');
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

template <size_t N>
bool one_of(std::string_view word, const std::array<std::string_view, N>& set) {
    return std::find(set.begin(), set.end(), word) != set.end();
}

constexpr std::array<std::string_view, 65> kBuiltins = {
    "alias",    "bg",       "bind",    "break",    "builtin", "caller", "cd",      "command",
    "compgen",  "complete", "compopt", "continue", "declare", "dirs",   "disown",  "echo",
    "enable",   "eval",     "exec",    "exit",     "export",  "false",  "fc",      "fg",
    "getopts",  "hash",     "help",    "history",  "jobs",    "kill",   "let",     "local",
    "logout",   "mapfile",  "popd",    "printf",   "pushd",   "pwd",    "read",    "readarray",
    "readonly", "return",   "set",     "shift",    "shopt",   "source", "suspend", "test",
    "times",    "trap",     "true",    "type",     "typeset", "ulimit", "umask",   "unalias",
    "unset",    "wait",     ".",       ":",        "[",       "[[",     "]]",      "!",
    "coproc",
};

constexpr std::array<std::string_view, 18> kKeywords = {
    "if",    "then",  "else", "elif", "fi", "case",     "esac", "for", "select",
    "while", "until", "do",   "done", "in", "function", "time", "{",   "}",
};

// Words before the program that belong to the shell's grammar, not to a command.
constexpr std::array<std::string_view, 10> kLeadingKeywords = {
    "!", "{", "then", "do", "else", "elif", "if", "while", "until", "time",
};

struct Wrapper {
    std::string_view name;
    std::string_view value_options;  // space-separated short/long options that take a value
    bool positional = false;         // one positional argument before the command (timeout)
};

constexpr std::array<Wrapper, 10> kWrappers = {{
    {"sudo", " -u -g -C -D -h -p -r -t -U ", false},
    {"doas", " -u -C ", false},
    {"env", " -u -C -S --unset --chdir --split-string ", false},
    {"nohup", " ", false},
    {"command", " ", false},
    {"exec", " -a ", false},
    {"nice", " -n --adjustment ", false},
    {"stdbuf", " -i -o -e ", false},
    {"timeout", " -s -k --signal --kill-after ", true},
    {"xargs", " -I -n -P -d -E -L -s -a ", false},
}};

const Wrapper* find_wrapper(std::string_view word) {
    for (const Wrapper& w : kWrappers) {
        if (w.name == word) {
            return &w;
        }
    }
    return nullptr;
}

// Index of the program word in a simple command, or words.size() when there is none.
size_t program_index(const std::vector<std::string>& words) {
    size_t i = 0;
    while (i < words.size()) {
        const std::string& w = words[i];
        if (is_assignment(w) || one_of(w, kLeadingKeywords)) {
            ++i;
            continue;
        }
        const Wrapper* wrapper = find_wrapper(base_name(w));
        if (wrapper == nullptr) {
            return i;
        }
        ++i;
        bool positional = wrapper->positional;
        while (i < words.size()) {
            const std::string& opt = words[i];
            if (opt == "--") {
                ++i;
                break;
            }
            if (opt.size() > 1 && opt[0] == '-') {
                const bool takes_value =
                    opt.find('=') == std::string::npos &&
                    wrapper->value_options.find(" " + opt + " ") != std::string_view::npos;
                i += takes_value ? 2 : 1;
                continue;
            }
            if (is_assignment(opt) && wrapper->name == "env") {
                ++i;
                continue;
            }
            if (positional) {
                positional = false;
                ++i;
                continue;
            }
            break;
        }
    }
    return words.size();
}

// Builtins that are also standalone programs behaving the same for plain words: a command
// such as `true` or `echo done` needs no shell (and saves bash's start-up, ~1 ms).
constexpr std::array<std::string_view, 6> kAlsoPrograms = {
    "echo", "false", "printf", "pwd", "test", "true",
};
}  // namespace

std::string_view shell_kind_name(ShellKind kind) noexcept {
    return kind == ShellKind::kDirect ? "direct" : "bash";
}

bool is_shell_builtin(std::string_view word) {
    return one_of(word, kBuiltins) || one_of(word, kKeywords);
}

ShellPlan plan_command(std::string_view command) {
    ShellPlan plan;
    std::vector<std::string> words;
    std::string word;
    bool plain = true;
    for (char c : command) {
        if (c == ' ' || c == '\t') {
            if (!word.empty()) {
                words.push_back(std::move(word));
                word.clear();
            }
        } else if (is_plain_char(c)) {
            word += c;
        } else {
            plain = false;
            break;
        }
    }
    if (!word.empty()) {
        words.push_back(std::move(word));
    }
    if (plain && !words.empty() &&
        (!is_shell_builtin(words[0]) || one_of(words[0], kAlsoPrograms)) &&
        words[0].find('=') == std::string::npos) {
        plan.kind = ShellKind::kDirect;
        plan.argv = std::move(words);
        return plan;
    }
    plan.kind = ShellKind::kBash;
    plan.argv = {"/bin/bash", "-c", std::string(command)};
    return plan;
}

LexedCommand lex_command(std::string_view command) {
    const std::string_view s = command;
    LexedCommand out;
    std::vector<std::string> current;
    std::string word;
    bool in_word = false;
    bool separated = false;
    // Here-documents whose bodies start after the next newline: {delimiter, strip tabs}.
    std::vector<std::pair<std::string, bool>> heredocs;
    bool heredoc_word_next = false;
    bool heredoc_strip = false;

    const auto flush_word = [&] {
        if (!in_word) {
            return;
        }
        if (heredoc_word_next) {
            heredocs.emplace_back(word, heredoc_strip);
            heredoc_word_next = false;
        } else {
            current.push_back(std::move(word));
        }
        word.clear();
        in_word = false;
    };
    const auto end_command = [&] {
        flush_word();
        if (!current.empty()) {
            out.commands.push_back(std::move(current));
            current.clear();
        }
    };
    const auto separator = [&] {
        end_command();
        separated = true;
    };

    const size_t n = s.size();
    size_t i = 0;
    while (i < n) {
        const char c = s[i];
        const char next = i + 1 < n ? s[i + 1] : '\0';
        if (c == '\\') {
            if (next == '\n') {
                i += 2;
                continue;
            }
            if (i + 1 < n) {
                word += next;
                in_word = true;
            }
            i += 2;
            continue;
        }
        if (c == '\'') {
            const size_t close = s.find('\'', i + 1);
            const size_t end = close == std::string_view::npos ? n : close;
            word.append(s.substr(i + 1, end - i - 1));
            in_word = true;
            i = end + 1;
            continue;
        }
        if (c == '"') {
            ++i;
            while (i < n && s[i] != '"') {
                if (s[i] == '\\' && i + 1 < n &&
                    std::string_view("\"\\$`\n").find(s[i + 1]) != std::string_view::npos) {
                    if (s[i + 1] != '\n') {
                        word += s[i + 1];
                    }
                    i += 2;
                    continue;
                }
                word += s[i];
                ++i;
            }
            in_word = true;
            ++i;
            continue;
        }
        if (c == '$' && next == '(') {
            separator();
            i += 2;
            continue;
        }
        if (c == '#' && !in_word) {
            while (i < n && s[i] != '\n') {
                ++i;
            }
            continue;
        }
        if (c == ' ' || c == '\t') {
            flush_word();
            ++i;
            continue;
        }
        if (c == '\n') {
            separator();
            ++i;
            // Skip the bodies of the here-documents opened on the line that just ended.
            for (const auto& [delimiter, strip] : heredocs) {
                while (i < n) {
                    const size_t eol = s.find('\n', i);
                    const size_t end = eol == std::string_view::npos ? n : eol;
                    std::string_view line = s.substr(i, end - i);
                    if (strip) {
                        while (line.starts_with('\t')) {
                            line.remove_prefix(1);
                        }
                    }
                    i = end == n ? n : end + 1;
                    if (line == delimiter) {
                        break;
                    }
                }
            }
            heredocs.clear();
            continue;
        }
        if (c == ';' || c == '(' || c == ')' || c == '`' || c == '|') {
            separator();
            ++i;
            continue;
        }
        if (c == '&') {
            if (next == '>') {  // &> and &>> redirect both streams
                flush_word();
                ++i;
                continue;
            }
            if (i > 0 && (s[i - 1] == '>' || s[i - 1] == '<')) {  // >&2, <&0
                ++i;
                continue;
            }
            separator();
            ++i;
            continue;
        }
        if (c == '<' || c == '>') {
            flush_word();
            if (c == '<' && next == '<' && (i + 2 >= n || s[i + 2] != '<')) {
                heredoc_word_next = true;
                heredoc_strip = i + 2 < n && s[i + 2] == '-';
                i += heredoc_strip ? 3 : 2;
                continue;
            }
            ++i;
            continue;
        }
        word += c;
        in_word = true;
        ++i;
    }
    end_command();
    out.compound = separated || out.commands.size() > 1;
    return out;
}

std::string program_of(const std::vector<std::string>& words) {
    const size_t at = program_index(words);
    return at < words.size() ? std::string(base_name(words[at])) : std::string();
}

std::string first_program_word(std::string_view command) {
    const LexedCommand lexed = lex_command(command);
    if (lexed.commands.empty()) {
        return {};
    }
    const std::vector<std::string>& words = lexed.commands.front();
    const size_t at = program_index(words);
    return at < words.size() ? words[at] : std::string();
}

std::string simple_program(std::string_view command) {
    const LexedCommand lexed = lex_command(command);
    if (lexed.compound || lexed.commands.size() != 1) {
        return {};
    }
    return program_of(lexed.commands.front());
}

SemanticStatus semantic_status(std::string_view command, std::optional<int> exit_code,
                               std::optional<int> signal) {
    if (signal) {
        return {.status = "signal", .message = ""};
    }
    if (exit_code && *exit_code == 0) {
        return {.status = "ok", .message = ""};
    }
    if (exit_code && *exit_code == 1) {
        const std::string program = simple_program(command);
        constexpr std::array<std::string_view, 5> kGreps = {"grep", "egrep", "fgrep", "rg",
                                                            "zgrep"};
        if (one_of(program, kGreps)) {
            return {.status = "ok", .message = "No matches found"};
        }
        if (program == "diff" || program == "cmp") {
            return {.status = "ok", .message = "Files differ"};
        }
        if (program == "test" || program == "[" || program == "[[") {
            return {.status = "ok", .message = "Condition is false"};
        }
        if (program == "find") {
            return {.status = "ok", .message = "Some paths could not be read"};
        }
    }
    return {.status = "error", .message = ""};
}

std::optional<std::string> bash_spawn_failure(std::string_view rendered_output,
                                              std::string_view program) {
    std::string_view line = rendered_output;
    while (!line.empty() && (line.back() == '\n' || line.back() == ' ' || line.back() == '\r')) {
        line.remove_suffix(1);
    }
    if (line.empty() || line.find('\n') != std::string_view::npos || program.empty()) {
        return std::nullopt;
    }
    const size_t colon = line.find(": ");
    if (colon == std::string_view::npos) {
        return std::nullopt;
    }
    const std::string_view shell = line.substr(0, colon);
    if (shell != "bash" && !shell.ends_with("/bash")) {
        return std::nullopt;
    }
    line.remove_prefix(colon + 2);
    if (line.starts_with("line ")) {
        size_t k = 5;
        while (k < line.size() && std::isdigit(static_cast<unsigned char>(line[k])) != 0) {
            ++k;
        }
        if (k == 5 || line.substr(k, 2) != ": ") {
            return std::nullopt;
        }
        line.remove_prefix(k + 2);
    }
    if (!line.starts_with(program) || line.substr(program.size(), 2) != ": ") {
        return std::nullopt;
    }
    const std::string_view reason = line.substr(program.size() + 2);
    if (reason.empty()) {
        return std::nullopt;
    }
    return std::string(reason);
}

std::optional<std::string> suggest_command(std::string_view word,
                                           const std::vector<std::string>& commands) {
    if (word.empty() || word.find('/') != std::string_view::npos ||
        std::find(commands.begin(), commands.end(), word) != commands.end()) {
        return std::nullopt;
    }
    const size_t max_distance = word.size() <= 4 ? 1 : 2;
    std::optional<std::string> best;
    std::tuple<size_t, int, int> best_key{SIZE_MAX, 0, 0};
    for (const std::string& c : commands) {
        const size_t len_diff =
            c.size() > word.size() ? c.size() - word.size() : word.size() - c.size();
        if (len_diff > max_distance || levenshtein(c, word, max_distance + 1) > max_distance + 1) {
            continue;
        }
        const size_t d = osa_distance(word, c);
        if (d > max_distance) {
            continue;
        }
        const std::tuple<size_t, int, int> key{d, c.front() == word.front() ? 0 : 1,
                                               c.size() == word.size() ? 0 : 1};
        // Candidates come sorted, so the first of equal keys is the alphabetically first.
        if (!best || key < best_key) {
            best = c;
            best_key = key;
        }
    }
    return best;
}

}  // namespace stockade::tools
