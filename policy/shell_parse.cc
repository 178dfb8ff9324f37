#include "policy/shell_parse.h"

#include <array>
#include <utility>

#include "common/parse.h"

namespace stockade::policy {
namespace {

constexpr int kMaxDepth = 32;

bool is_blank(char c) {
    return c == ' ' || c == '\t' || c == '\r';
}

// Characters that end an unquoted word.
bool is_meta(char c) {
    return is_blank(c) || c == '\n' || c == ';' || c == '&' || c == '|' || c == '(' || c == ')' ||
           c == '<' || c == '>';
}

bool is_name_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

bool is_name_char(char c) {
    return is_name_start(c) || (c >= '0' && c <= '9');
}

bool all_digits(std::string_view text) {
    if (text.empty()) {
        return false;
    }
    for (char c : text) {
        if (c < '0' || c > '9') {
            return false;
        }
    }
    return true;
}

// NAME=... or NAME+=... at the start of the raw word.
bool raw_assignment(std::string_view raw) {
    if (raw.empty() || !is_name_start(raw.front())) {
        return false;
    }
    size_t i = 1;
    while (i < raw.size() && is_name_char(raw[i])) {
        ++i;
    }
    if (i < raw.size() && raw[i] == '+') {
        ++i;
    }
    return i < raw.size() && raw[i] == '=';
}

// Reserved words that only group or steer commands: dropped where a command would start.
constexpr std::array<std::string_view, 12> kDropped = {
    "{", "}", "!", "if", "then", "else", "elif", "fi", "do", "done", "while", "until"};

struct PendingHeredoc {
    std::string delimiter;
    bool strip_tabs = false;
};

// The command being read.
struct Builder {
    SimpleCommand command;
    size_t start = 0;
    bool skip_words = false;  // a for/select header: its words are a list, not a command
    bool skip_next = false;   // the name after `function`
    bool in_test = false;     // inside [[ ... ]], where && || < > ( ) are operands
};

class Parser {
public:
    Parser(std::string_view text, int depth, std::vector<SimpleCommand>& out)
        : s_(text), depth_(depth), out_(out) {}

    // Reads commands until `close` (')') or, when close is 0, the end of the text. On success
    // the position is just past the closing parenthesis.
    bool parse_list(char close) {
        Builder b{.command = {}, .start = pos_};
        while (true) {
            skip_blanks();
            if (pos_ >= s_.size()) {
                finish(b);
                return close == 0 || fail("unbalanced parentheses: a \")\" is missing");
            }
            const char c = s_[pos_];
            const char next = peek(1);
            if (b.in_test &&
                (c == '&' || c == '|' || c == '<' || c == '>' || c == '(' || c == ')')) {
                const size_t len = (c == '&' || c == '|') && next == c ? 2 : 1;
                b.command.words.push_back(ShellWord{.text = std::string(s_.substr(pos_, len))});
                pos_ += len;
                continue;
            }
            if (c == '(' && next == '(' && b.command.words.empty()) {
                if (!skip_arithmetic()) {  // (( expr )): arithmetic, runs nothing
                    return false;
                }
                continue;
            }
            if (c == '#') {
                while (pos_ < s_.size() && s_[pos_] != '\n') {
                    ++pos_;
                }
                continue;
            }
            if (c == '\n') {
                finish(b);
                ++pos_;
                skip_heredoc_bodies();
                b.start = pos_;
                continue;
            }
            if (c == ';' || c == '|' || (c == '&' && next != '>')) {
                finish(b);
                pos_ +=
                    (next == c || (c == '|' && next == '&') || (c == ';' && next == '&')) ? 2 : 1;
                b.start = pos_;
                continue;
            }
            if (c == ')') {
                if (close != ')') {
                    return fail("unbalanced parentheses: \")\" without \"(\"");
                }
                finish(b);
                ++pos_;
                return true;
            }
            if (c == '(') {
                if (!open_paren(b)) {
                    return false;
                }
                continue;
            }
            if ((c == '<' || c == '>') && next != '(') {
                if (!redirect(b, -1)) {
                    return false;
                }
                continue;
            }
            if (c == '&') {  // "&>" or "&>>"
                if (!redirect(b, -1)) {
                    return false;
                }
                continue;
            }
            ShellWord word;
            const size_t word_start = pos_;
            if (!lex_word(word)) {
                return false;
            }
            const std::string_view raw = s_.substr(word_start, pos_ - word_start);
            if (all_digits(raw) && pos_ < s_.size() && (s_[pos_] == '<' || s_[pos_] == '>')) {
                int fd = 0;
                for (char d : raw.substr(0, 4)) {
                    fd = fd * 10 + (d - '0');
                }
                if (!redirect(b, fd)) {
                    return false;
                }
                continue;
            }
            if (!add_word(b, std::move(word))) {
                return false;
            }
        }
    }

    const std::string& error() const { return error_; }

private:
    char peek(size_t ahead) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }

    bool fail(std::string_view why) {
        if (error_.empty()) {
            error_ = why;
        }
        return false;
    }

    bool enter() {
        if (++depth_ > kMaxDepth) {
            return fail("nested too deeply");
        }
        return true;
    }

    void skip_blanks() {
        while (pos_ < s_.size()) {
            if (is_blank(s_[pos_])) {
                ++pos_;
            } else if (s_[pos_] == '\\' && peek(1) == '\n') {
                pos_ += 2;
            } else {
                break;
            }
        }
    }

    void finish(Builder& b) {
        SimpleCommand& cmd = b.command;
        if (!cmd.words.empty() || !cmd.redirections.empty()) {
            std::string_view source = s_.substr(b.start, std::min(pos_, s_.size()) - b.start);
            while (!source.empty() && (is_blank(source.front()) || source.front() == '\n')) {
                source.remove_prefix(1);
            }
            while (!source.empty() && (is_blank(source.back()) || source.back() == '\n')) {
                source.remove_suffix(1);
            }
            cmd.source = source;
            out_.push_back(std::move(cmd));
        }
        b.command = {};
        b.skip_words = false;
        b.skip_next = false;
        b.in_test = false;
    }

    // `pos_` is at "((": skips to the matching "))".
    bool skip_arithmetic() {
        int depth = 0;
        for (; pos_ < s_.size(); ++pos_) {
            if (s_[pos_] == '(') {
                ++depth;
            } else if (s_[pos_] == ')' && --depth == 0) {
                ++pos_;
                return true;
            }
        }
        return fail("unterminated ((");
    }

    bool add_word(Builder& b, ShellWord word) {
        if (b.skip_words) {
            return true;
        }
        if (b.skip_next) {
            b.skip_next = false;
            return true;
        }
        if (b.command.words.empty() && !word.quoted) {
            for (std::string_view dropped : kDropped) {
                if (word.text == dropped) {
                    return true;
                }
            }
            if (word.text == "for" || word.text == "select") {
                b.skip_words = true;
                return true;
            }
            if (word.text == "function") {
                b.skip_next = true;
                return true;
            }
            if (word.text == "case") {
                return fail("case statements are not analysed");
            }
            b.in_test = word.text == "[[";
        } else if (b.in_test && !word.quoted && word.text == "]]") {
            b.in_test = false;
        }
        b.command.words.push_back(std::move(word));
        return true;
    }

    // "(": a subshell where a command starts; "name()" a function definition (the body
    // follows as a group); "name=(a b)" an array assignment.
    bool open_paren(Builder& b) {
        std::vector<SimpleCommand>& words = b.command.words.empty() ? out_ : scratch_;
        if (!b.command.words.empty()) {
            const ShellWord& last = b.command.words.back();
            if (peek(1) == ')' && b.command.words.size() == 1) {
                pos_ += 2;
                b.command.words.clear();
                return true;
            }
            if (!(last.assignment && last.text.ends_with('='))) {
                return fail("unexpected \"(\"");
            }
        }
        ++pos_;
        if (!enter()) {
            return false;
        }
        Parser inner(s_, depth_, words);
        inner.pos_ = pos_;
        if (!inner.parse_list(')')) {
            return fail(inner.error_);
        }
        pos_ = inner.pos_;
        --depth_;
        scratch_.clear();
        return true;
    }

    bool redirect(Builder& b, int fd) {
        // Longest first, so "<<-" is not read as "<<" then "-".
        static constexpr std::array<std::string_view, 12> kOps = {
            "&>>", "&>", "<<<", "<<-", "<<", "<>", "<&", "<", ">>", ">&", ">|", ">"};
        std::string_view op;
        for (std::string_view candidate : kOps) {
            if (s_.substr(pos_).starts_with(candidate)) {
                op = candidate;
                break;
            }
        }
        if (op.empty()) {
            return fail("unexpected character");
        }
        pos_ += op.size();
        skip_blanks();
        if (pos_ >= s_.size() || is_meta(s_[pos_])) {
            return fail("a redirection without a target");
        }
        ShellWord target;
        if (!lex_word(target)) {
            return false;
        }
        if (op == "<<" || op == "<<-") {
            heredocs_.push_back({target.text, op == "<<-"});
            return true;
        }
        if (op == "<<<") {
            return true;
        }
        if ((op == ">&" || op == "<&") && (all_digits(target.text) || target.text == "-")) {
            return true;  // a descriptor duplication, not a file
        }
        if (op == "<&") {
            return true;
        }
        b.command.redirections.push_back({std::string(op), fd, std::move(target)});
        return true;
    }

    // After a newline: each pending here-document's body runs to its delimiter line.
    void skip_heredoc_bodies() {
        for (const PendingHeredoc& doc : heredocs_) {
            while (pos_ < s_.size()) {
                size_t end = s_.find('\n', pos_);
                if (end == std::string_view::npos) {
                    end = s_.size();
                }
                std::string_view line = s_.substr(pos_, end - pos_);
                if (doc.strip_tabs) {
                    while (!line.empty() && line.front() == '\t') {
                        line.remove_prefix(1);
                    }
                }
                pos_ = std::min(end + 1, s_.size());
                if (line == doc.delimiter) {
                    break;
                }
            }
        }
        heredocs_.clear();
    }

    bool lex_word(ShellWord& w) {
        const size_t start = pos_;
        while (pos_ < s_.size()) {
            const char c = s_[pos_];
            if (is_meta(c)) {
                if ((c == '<' || c == '>') && pos_ == start && peek(1) == '(') {
                    if (!nested_list(w, 2)) {  // process substitution
                        return false;
                    }
                    continue;
                }
                break;
            }
            switch (c) {
                case '\\':
                    if (peek(1) == '\n') {
                        pos_ += 2;
                    } else if (pos_ + 1 < s_.size()) {
                        w.text += s_[pos_ + 1];
                        w.quoted = true;
                        pos_ += 2;
                    } else {
                        w.text += '\\';
                        ++pos_;
                    }
                    break;
                case '\'': {
                    const size_t end = s_.find('\'', pos_ + 1);
                    if (end == std::string_view::npos) {
                        return fail("unterminated single quote");
                    }
                    w.text += s_.substr(pos_ + 1, end - pos_ - 1);
                    w.quoted = true;
                    pos_ = end + 1;
                    break;
                }
                case '"':
                    if (!lex_double_quoted(w)) {
                        return false;
                    }
                    break;
                case '$':
                    if (!lex_dollar(w, false)) {
                        return false;
                    }
                    break;
                case '`':
                    if (!lex_backquote(w)) {
                        return false;
                    }
                    break;
                case '~':
                    if (pos_ == start) {
                        w.tilde = true;
                    }
                    w.text += c;
                    ++pos_;
                    break;
                default:
                    w.text += c;
                    ++pos_;
                    break;
            }
        }
        if (pos_ == start) {
            return fail("unexpected character");
        }
        w.assignment = raw_assignment(s_.substr(start, pos_ - start));
        return true;
    }

    bool lex_double_quoted(ShellWord& w) {
        w.quoted = true;
        ++pos_;
        while (pos_ < s_.size()) {
            const char c = s_[pos_];
            if (c == '"') {
                ++pos_;
                return true;
            }
            if (c == '\\') {
                const char next = peek(1);
                if (next == '$' || next == '`' || next == '"' || next == '\\' || next == '\n') {
                    if (next != '\n') {
                        w.text += next;
                    }
                    pos_ += 2;
                } else {
                    w.text += c;
                    ++pos_;
                }
            } else if (c == '$') {
                if (!lex_dollar(w, true)) {
                    return false;
                }
            } else if (c == '`') {
                if (!lex_backquote(w)) {
                    return false;
                }
            } else {
                w.text += c;
                ++pos_;
            }
        }
        return fail("unterminated double quote");
    }

    bool lex_ansi_c(ShellWord& w) {
        w.quoted = true;
        pos_ += 2;
        while (pos_ < s_.size()) {
            const char c = s_[pos_];
            if (c == '\'') {
                ++pos_;
                return true;
            }
            if (c != '\\' || pos_ + 1 >= s_.size()) {
                w.text += c;
                ++pos_;
                continue;
            }
            const char e = s_[pos_ + 1];
            pos_ += 2;
            switch (e) {
                case 'n':
                    w.text += '\n';
                    break;
                case 't':
                    w.text += '\t';
                    break;
                case 'r':
                    w.text += '\r';
                    break;
                case 'a':
                    w.text += '\a';
                    break;
                case 'b':
                    w.text += '\b';
                    break;
                case 'e':
                case 'E':
                    w.text += '\x1b';
                    break;
                case 'f':
                    w.text += '\f';
                    break;
                case 'v':
                    w.text += '\v';
                    break;
                case 'x': {
                    int value = 0;
                    int digits = 0;
                    while (digits < 2 && pos_ < s_.size() && hex_digit_value(s_[pos_]) >= 0) {
                        value = value * 16 + hex_digit_value(s_[pos_++]);
                        ++digits;
                    }
                    w.text += digits > 0 ? static_cast<char>(value) : 'x';
                    break;
                }
                default:
                    if (e >= '0' && e <= '7') {
                        int value = e - '0';
                        for (int i = 0;
                             i < 2 && pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '7'; ++i) {
                            value = value * 8 + (s_[pos_++] - '0');
                        }
                        w.text += static_cast<char>(value & 0xff);
                    } else if (e == '\\' || e == '\'' || e == '"' || e == '?') {
                        w.text += e;
                    } else {
                        w.text += '\\';
                        w.text += e;
                    }
                    break;
            }
        }
        return fail("unterminated $'...' quote");
    }

    // `pos_` is at "$".
    bool lex_dollar(ShellWord& w, bool in_double_quotes) {
        const char next = peek(1);
        if (next == '\'' && !in_double_quotes) {
            return lex_ansi_c(w);
        }
        if (next == '"' && !in_double_quotes) {
            ++pos_;
            return lex_double_quoted(w);
        }
        const size_t start = pos_;
        w.expands = true;
        if (next == '(' && peek(2) == '(') {
            // Arithmetic: balanced parentheses, nothing executes.
            int depth = 0;
            for (pos_ += 1; pos_ < s_.size(); ++pos_) {
                if (s_[pos_] == '(') {
                    ++depth;
                } else if (s_[pos_] == ')' && --depth == 0) {
                    ++pos_;
                    w.text += s_.substr(start, pos_ - start);
                    return true;
                }
            }
            return fail("unterminated $((");
        }
        if (next == '(') {
            return nested_list(w, 2);
        }
        if (next == '{') {
            // ${...}: may hold quotes and command substitutions (${x:-$(cmd)}).
            if (!enter()) {
                return false;
            }
            pos_ += 2;
            int depth = 1;
            ShellWord scratch;
            while (pos_ < s_.size()) {
                const char c = s_[pos_];
                if (c == '}') {
                    if (--depth == 0) {
                        ++pos_;
                        --depth_;
                        w.text += s_.substr(start, pos_ - start);
                        return true;
                    }
                    ++pos_;
                } else if (c == '{') {
                    ++depth;
                    ++pos_;
                } else if (c == '\\') {
                    pos_ += 2;
                } else if (c == '\'' && !in_double_quotes) {
                    const size_t end = s_.find('\'', pos_ + 1);
                    if (end == std::string_view::npos) {
                        return fail("unterminated single quote");
                    }
                    pos_ = end + 1;
                } else if (c == '"') {
                    if (!lex_double_quoted(scratch)) {
                        return false;
                    }
                } else if (c == '$') {
                    if (!lex_dollar(scratch, true)) {
                        return false;
                    }
                } else if (c == '`') {
                    if (!lex_backquote(scratch)) {
                        return false;
                    }
                } else {
                    ++pos_;
                }
            }
            return fail("unterminated ${");
        }
        if (is_name_start(next)) {
            pos_ += 2;
            while (pos_ < s_.size() && is_name_char(s_[pos_])) {
                ++pos_;
            }
        } else if ((next >= '0' && next <= '9') || next == '@' || next == '*' || next == '#' ||
                   next == '?' || next == '$' || next == '!' || next == '-') {
            pos_ += 2;
        } else {
            w.expands = false;
            ++pos_;
        }
        w.text += s_.substr(start, pos_ - start);
        return true;
    }

    // $( ... ), <( ... ), >( ... ): `pos_` is at the first of `skip` opening characters.
    bool nested_list(ShellWord& w, size_t skip) {
        const size_t start = pos_;
        pos_ += skip;
        if (!enter()) {
            return false;
        }
        Parser inner(s_, depth_, out_);
        inner.pos_ = pos_;
        if (!inner.parse_list(')')) {
            return fail(inner.error_);
        }
        pos_ = inner.pos_;
        --depth_;
        w.expands = true;
        w.text += s_.substr(start, pos_ - start);
        return true;
    }

    // `...`: the body, with \` \$ \\ unescaped, is read as a command of its own.
    bool lex_backquote(ShellWord& w) {
        const size_t start = pos_;
        std::string body;
        for (++pos_; pos_ < s_.size(); ++pos_) {
            const char c = s_[pos_];
            if (c == '\\' && pos_ + 1 < s_.size() &&
                (s_[pos_ + 1] == '`' || s_[pos_ + 1] == '$' || s_[pos_ + 1] == '\\')) {
                body += s_[++pos_];
            } else if (c == '`') {
                ++pos_;
                if (depth_ + 1 > kMaxDepth) {
                    return fail("nested too deeply");
                }
                Parser inner(body, depth_ + 1, out_);
                if (!inner.parse_list(0)) {
                    return fail(inner.error_);
                }
                w.expands = true;
                w.text += s_.substr(start, pos_ - start);
                return true;
            } else {
                body += c;
            }
        }
        return fail("unterminated backquote");
    }

    std::string_view s_;
    size_t pos_ = 0;
    int depth_ = 0;
    std::vector<SimpleCommand>& out_;
    std::vector<SimpleCommand> scratch_;  // words of an array assignment, not commands
    std::vector<PendingHeredoc> heredocs_;
    std::string error_;
};

}  // namespace

ShellParse parse_shell(std::string_view text) {
    ShellParse out;
    Parser parser(text, 0, out.commands);
    if (!parser.parse_list(0)) {
        out.ok = false;
        out.error = parser.error();
        out.commands.clear();
    }
    return out;
}

}  // namespace stockade::policy
