#include "policy/bash_analysis.h"

#include <array>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "policy/command_args.h"
#include "policy/command_pattern.h"

namespace stockade::policy {
namespace {

// bash -c 'eval "sh -c ..."': each level re-reads a substring, so the depth bounds the work.
constexpr int kMaxScriptDepth = 8;

using Words = std::span<const ShellWord>;

bool one_of(std::string_view text, std::initializer_list<std::string_view> names) {
    for (std::string_view name : names) {
        if (text == name) {
            return true;
        }
    }
    return false;
}

bool assignment_text(std::string_view text) {
    if (text.empty() || !((text[0] >= 'a' && text[0] <= 'z') ||
                          (text[0] >= 'A' && text[0] <= 'Z') || text[0] == '_')) {
        return false;
    }
    const size_t equals = text.find('=');
    if (equals == std::string_view::npos) {
        return false;
    }
    for (char c : text.substr(0, equals)) {
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_')) {
            return false;
        }
    }
    return true;
}

// The index of the first positional at or after `i`, skipping options (getopt style, see
// parse_args) and stopping after "--".
size_t skip_options(Words w, size_t i, std::string_view short_with_value,
                    std::initializer_list<std::string_view> long_with_value = {}) {
    while (i < w.size()) {
        const std::string_view text = w[i].text;
        if (text == "--") {
            return i + 1;
        }
        if (text.size() < 2 || text.front() != '-') {
            return i;
        }
        ++i;
        if (text.starts_with("--")) {
            if (text.find('=') == std::string_view::npos && one_of(text, long_with_value)) {
                ++i;
            }
            continue;
        }
        for (size_t j = 1; j < text.size(); ++j) {
            if (short_with_value.find(text[j]) != std::string_view::npos) {
                if (j + 1 == text.size()) {
                    ++i;  // the value is the next word
                }
                break;
            }
        }
    }
    return std::min(i, w.size());
}

size_t skip_env(Words w, size_t i) {
    while (i < w.size()) {
        const std::string_view text = w[i].text;
        if (one_of(text, {"-u", "-C", "-S", "--unset", "--chdir", "--split-string"})) {
            i += 2;
        } else if (w[i].assignment || assignment_text(text) || text.starts_with('-')) {
            ++i;  // NAME=value, a flag, "-" or "--"
        } else {
            break;
        }
    }
    return std::min(i, w.size());
}

// Strips leading assignments and wrappers: the index where the command proper starts.
size_t command_start(Words w) {
    size_t i = 0;
    auto skip_assignments = [&] {
        while (i < w.size() && (w[i].assignment)) {
            ++i;
        }
    };
    skip_assignments();
    for (int guard = 0; guard < 16 && i < w.size(); ++guard) {
        const std::string_view name = program_name(w[i].text);
        const size_t before = i;
        if (name == "env") {
            i = skip_env(w, i + 1);
        } else if (name == "timeout") {
            i = skip_options(w, i + 1, "sk", {"--signal", "--kill-after"});
            i = std::min(i + 1, w.size());  // the duration
        } else if (name == "xargs") {
            i = skip_options(w, i + 1, "aEdILnPs",
                             {"--arg-file", "--delimiter", "--max-args", "--max-procs",
                              "--max-chars", "--max-lines"});
        } else if (name == "nice") {
            i = skip_options(w, i + 1, "n", {"--adjustment"});
        } else if (name == "nohup") {
            i = skip_options(w, i + 1, "");
        } else if (name == "sudo" || name == "doas") {
            i = skip_options(w, i + 1, "ugCDhprtUTR",
                             {"--user", "--group", "--chdir", "--prompt", "--role", "--type",
                              "--other-user", "--close-from", "--host", "--command-timeout"});
            skip_assignments();
            while (i < w.size() && assignment_text(w[i].text)) {
                ++i;
            }
        } else if (name == "time") {
            i = skip_options(w, i + 1, "fo", {"--format", "--output"});
        } else if (name == "command") {
            // `command -v x` asks where x is; it runs nothing.
            if (i + 1 < w.size() && one_of(w[i + 1].text, {"-v", "-V"})) {
                break;
            }
            i = skip_options(w, i + 1, "");
        } else if (name == "exec") {
            i = skip_options(w, i + 1, "a");
        } else if (name == "stdbuf") {
            i = skip_options(w, i + 1, "ioe", {"--input", "--output", "--error"});
        }
        if (i == before) {
            break;
        }
    }
    return i;
}

// The script a shell is asked to run with -c, if any.
const ShellWord* shell_script(Words argv) {
    bool has_c = false;
    for (size_t i = 1; i < argv.size(); ++i) {
        const std::string_view text = argv[i].text;
        if (text == "--") {
            continue;
        }
        if (text.size() > 1 && (text.front() == '-' || text.front() == '+')) {
            if (text == "-o" || text == "+o" || text == "-O" || text == "+O") {
                ++i;
            } else if (text.front() == '-' && !text.starts_with("--") &&
                       text.find('c') != std::string_view::npos) {
                has_c = true;
            }
            continue;
        }
        return has_c ? &argv[i] : nullptr;
    }
    return nullptr;
}

BashAnalysis analyse(std::string_view command, int depth) {
    BashAnalysis out;
    if (depth > kMaxScriptDepth) {
        out.opaque = true;
        out.opaque_reason = "scripts nested too deeply";
        return out;
    }
    ShellParse parsed = parse_shell(command);
    if (!parsed.ok) {
        out.opaque = true;
        out.opaque_reason = std::move(parsed.error);
        return out;
    }
    std::vector<SimpleCommand> queue = std::move(parsed.commands);
    for (size_t k = 0; k < queue.size(); ++k) {
        queue[k].command_start = command_start(queue[k].words);
        out.commands.push_back(queue[k]);
        const SimpleCommand& cmd = out.commands.back();
        const Words argv = Words(cmd.words).subspan(cmd.command_start);
        if (argv.empty()) {
            continue;
        }
        const std::string_view name = program_name(argv[0].text);
        std::string script;
        bool nested = false;
        if (one_of(name, {"sh", "bash", "dash", "zsh", "ksh", "ash"})) {
            if (const ShellWord* body = shell_script(argv)) {
                script = body->text;
                nested = true;
            }
        } else if (name == "eval" && argv.size() > 1) {
            for (size_t i = 1; i < argv.size(); ++i) {
                script += i > 1 ? " " : "";
                script += argv[i].text;
            }
            nested = true;
        } else if (name == "find") {
            for (size_t i = 1; i < argv.size(); ++i) {
                if (!one_of(argv[i].text, {"-exec", "-execdir", "-ok", "-okdir"})) {
                    continue;
                }
                SimpleCommand exec;
                for (++i; i < argv.size() && !one_of(argv[i].text, {";", "+"}); ++i) {
                    exec.words.push_back(argv[i]);
                }
                exec.source = full_command_text(exec);
                if (!exec.words.empty()) {
                    queue.push_back(std::move(exec));
                }
            }
        }
        if (nested) {
            BashAnalysis inner = analyse(script, depth + 1);
            if (inner.opaque) {
                // `name` points into out.commands: format before clearing it.
                out.opaque_reason =
                    fmt::format("the script given to {}: {}", name, inner.opaque_reason);
                out.commands.clear();
                out.opaque = true;
                return out;
            }
            for (SimpleCommand& c : inner.commands) {
                out.commands.push_back(std::move(c));
            }
        }
    }
    return out;
}

// Shell builtins that run no program and touch nothing: no process.execute of their own.
bool runs_nothing(std::string_view name) {
    return one_of(name, {"cd",      "pushd",   "popd",  "true", "false",  ":",     "export",
                         "set",     "unset",   "shopt", "exit", "return", "local", "readonly",
                         "declare", "typeset", "wait",  "[",    "test",   "[["});
}

// Programs whose positionals are files they read or write, with their options that take a
// value (so that `head -n 5 x` reads x, not 5).
struct FileProgram {
    std::string_view name;
    std::string_view short_with_value;
};

constexpr std::array kReaders = {
    FileProgram{"cat", ""},
    FileProgram{"tac", "s"},
    FileProgram{"less", "bhjkoOpPtTxyz"},
    FileProgram{"more", "n"},
    FileProgram{"wc", ""},
    FileProgram{"md5sum", ""},
    FileProgram{"sha1sum", ""},
    FileProgram{"sha256sum", ""},
    FileProgram{"sha512sum", ""},
    FileProgram{"b2sum", "l"},
    FileProgram{"strings", "nteT"},
    FileProgram{"base64", "w"},
    FileProgram{"cmp", "in"},
    FileProgram{"diff", "CUFILSDxX"},
    FileProgram{"od", "AjNtw"},
    FileProgram{"hexdump", "nsef"},
    FileProgram{"nl", "bdfhilnsvw"},
    FileProgram{"cut", "bcdf"},
    FileProgram{"bat", "lrHm"},
    FileProgram{"batcat", "lrHm"},
    FileProgram{"head", "nc"},
    FileProgram{"tail", "ncs"},
};

constexpr std::array kWriters = {
    FileProgram{"tee", ""},     FileProgram{"touch", "drt"}, FileProgram{"mkdir", "m"},
    FileProgram{"rm", ""},      FileProgram{"rmdir", ""},    FileProgram{"truncate", "sr"},
    FileProgram{"shred", "ns"}, FileProgram{"unlink", ""},
};

// The short options of `name` in `table` that take a value ("" when it is not there).
template <size_t N>
std::string_view short_with_value(const std::array<FileProgram, N>& table, std::string_view name) {
    for (const FileProgram& program : table) {
        if (program.name == name) {
            return program.short_with_value;
        }
    }
    return {};
}

// The host a URL or remote spec names: "https://user@Host:8443/x" → "host",
// "git@github.com:o/r.git" → "github.com", "example.com/path" → "example.com"; "" if none.
std::string url_host(std::string_view text) {
    std::string_view rest = text;
    const size_t scheme = rest.find("://");
    if (scheme != std::string_view::npos) {
        rest.remove_prefix(scheme + 3);
        rest = rest.substr(0, rest.find_first_of("/?#"));
    } else {
        const size_t colon = rest.find(':');
        const size_t slash = rest.find('/');
        if (colon != std::string_view::npos && (slash == std::string_view::npos || colon < slash)) {
            rest = rest.substr(0, colon);  // [user@]host:path
        } else if (slash != std::string_view::npos) {
            rest = rest.substr(0, slash);
        }
        if (rest.find('.') == std::string_view::npos && rest.find('@') == std::string_view::npos &&
            rest != "localhost" && colon == std::string_view::npos) {
            return "";
        }
    }
    if (const size_t at = rest.rfind('@'); at != std::string_view::npos) {
        rest.remove_prefix(at + 1);
    }
    if (rest.starts_with('[')) {
        rest = rest.substr(
            1, rest.find(']') == std::string_view::npos ? rest.size() - 1 : rest.find(']') - 1);
    } else if (const size_t colon = rest.find(':'); colon != std::string_view::npos) {
        rest = rest.substr(0, colon);
    }
    std::string host;
    for (char c : rest) {
        const char lower = c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
        if (!((lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9') || lower == '.' ||
              lower == '-' || lower == '_' || lower == ':')) {
            return "";
        }
        host += lower;
    }
    return host;
}

// A host name or address that always means this machine's own loopback interface.
bool is_loopback_host(std::string_view host) {
    if (host == "localhost" || host.ends_with(".localhost") || host == "ip6-localhost" ||
        host == "ip6-loopback" || host == "::1" || host == "0:0:0:0:0:0:0:1" || host == "::" ||
        host == "0.0.0.0") {
        return true;
    }
    // 127.0.0.0/8 as a dotted quad.
    int parts = 0;
    std::string_view rest = host;
    while (!rest.empty() && parts < 4) {
        const size_t dot = rest.find('.');
        const std::string_view part = rest.substr(0, dot);
        if (part.empty() || part.size() > 3 ||
            part.find_first_not_of("0123456789") != std::string_view::npos) {
            return false;
        }
        if (parts == 0 && part != "127") {
            return false;
        }
        ++parts;
        rest = dot == std::string_view::npos ? std::string_view() : rest.substr(dot + 1);
    }
    return parts == 4 && rest.empty();
}

// True when the scheme, user, host and port of a URL-like word are as written: an expansion
// there could turn "http://127.0.0.1:$P" into "http://127.0.0.1:80@example.com".
bool literal_authority(const ShellWord& word) {
    if (!word.expands) {
        return true;
    }
    std::string_view text = word.text;
    size_t start = text.find("://");
    start = start == std::string_view::npos ? 0 : start + 3;
    const size_t end = text.find_first_of("/?#", start);
    return text.substr(0, end).find_first_of("$`") == std::string_view::npos;
}

// "host:path", "user@host:path", "rsync://host/x", "host::module": a remote side of scp or
// rsync; a local path has no colon before its first slash.
bool remote_spec(std::string_view text) {
    if (text.find("://") != std::string_view::npos) {
        return true;
    }
    const size_t colon = text.find(':');
    const size_t slash = text.find('/');
    return colon != std::string_view::npos && colon > 0 &&
           (slash == std::string_view::npos || colon < slash);
}

class Deriver {
public:
    Deriver(const RequestContext& ctx, std::string_view tool, std::vector<CapabilityRequest>& out)
        : ctx_(ctx), tool_(tool), out_(out) {
        ctx_.workspace_root = normalise_path(ctx.workspace_root, "/");
        cwd_ = ctx.cwd.empty() ? ctx_.workspace_root : normalise_path(ctx.cwd, ctx_.workspace_root);
    }

    void add(const SimpleCommand& cmd) {
        for (const Redirection& r : cmd.redirections) {
            if (r.op == "<") {
                read(r.target);
            } else if (r.op == "<>") {
                read(r.target);
                write(r.target);
            } else {
                write(r.target);
            }
        }
        const Words argv = Words(cmd.words).subspan(cmd.command_start);
        if (argv.empty()) {
            return;
        }
        const std::string_view name = program_name(argv[0].text);
        if (!runs_nothing(name)) {
            out_.push_back({.kind = CapabilityKind::kProcessExecute,
                            .tool = std::string(tool_),
                            .command = command_text(cmd),
                            .full_command = full_command_text(cmd)});
        }
        derive(name, argv);
    }

private:
    // The absolute path a word names, when it can be known without running anything.
    std::optional<std::string> resolve(const ShellWord& word) const {
        std::string_view text = word.text;
        std::string base;
        if (word.tilde) {
            if (ctx_.home.empty() || !(text == "~" || text.starts_with("~/"))) {
                return std::nullopt;
            }
            base = ctx_.home;
            text.remove_prefix(1);
        } else if (word.expands) {
            for (std::string_view home : {"$HOME", "${HOME}"}) {
                if (text.starts_with(home) &&
                    (text.size() == home.size() || text[home.size()] == '/')) {
                    base = ctx_.home;
                    text.remove_prefix(home.size());
                }
            }
            if (base.empty() || text.find_first_of("$`") != std::string_view::npos) {
                return std::nullopt;
            }
        }
        if (!base.empty()) {
            return normalise_path(std::string(base) + "/" + std::string(text), "/");
        }
        if (text.empty()) {
            return std::nullopt;
        }
        return normalise_path(text, cwd_);
    }

    static bool special_file(std::string_view path) {
        return one_of(path, {"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/tty",
                             "/dev/stdin", "/dev/stdout", "/dev/stderr"}) ||
               path.starts_with("/dev/fd/") || path.starts_with("/proc/self/fd/");
    }

    void read(const ShellWord& word, bool directory = false) {
        const auto path = resolve(word);
        if (!path || special_file(*path) || word.text == "-") {
            return;
        }
        out_.push_back({.kind = CapabilityKind::kFileRead,
                        .tool = std::string(tool_),
                        .path = *path,
                        .directory = directory});
    }

    void read_cwd() {
        out_.push_back({.kind = CapabilityKind::kFileRead,
                        .tool = std::string(tool_),
                        .path = cwd_,
                        .directory = true});
    }

    void write(const ShellWord& word) {
        const auto path = resolve(word);
        if (!path || special_file(*path) || word.text == "-") {
            return;
        }
        out_.push_back(
            {.kind = CapabilityKind::kFileWrite, .tool = std::string(tool_), .path = *path});
        if (!inside_project(*path, ctx_)) {
            out_.push_back({.kind = CapabilityKind::kFileWriteOutsideProject,
                            .tool = std::string(tool_),
                            .path = *path,
                            .reason = "writes outside the workspace"});
        }
    }

    void network(std::string_view program, std::string host) {
        out_.push_back({.kind = CapabilityKind::kNetworkAccess,
                        .tool = std::string(tool_),
                        .host = std::move(host),
                        .reason = fmt::format("`{}` reaches the network", program)});
    }

    // A client that connects to `targets`. Targets on the session's own loopback (when it
    // has one: ctx_.private_loopback) need no network access; a target that is no host
    // name (a variable, an option's value) may be anything, so it counts as the network.
    void network_to(std::string_view program, const std::vector<ShellWord>& targets) {
        bool any = false;
        for (const ShellWord& target : targets) {
            std::string host = url_host(target.text);
            if (host.empty()) {
                continue;
            }
            any = true;
            if (!(ctx_.private_loopback && literal_authority(target) && is_loopback_host(host))) {
                network(program, std::move(host));
            }
        }
        if (!any) {
            network(program, "");
        }
    }

    void git_modify(std::string_view subcommand) {
        out_.push_back({.kind = CapabilityKind::kGitModify,
                        .tool = std::string(tool_),
                        .subcommand = std::string(subcommand),
                        .reason = fmt::format("`git {}` changes the repository", subcommand)});
    }

    // cp/mv/install/ln: the destination is -t DIR or the last positional.
    void copy_like(const CommandArgs& args, bool sources_change) {
        const ShellWord* target = args.value({"-t", "--target-directory"});
        const size_t sources = target != nullptr
                                   ? args.positional.size()
                                   : (args.positional.empty() ? 0 : args.positional.size() - 1);
        if (target == nullptr && args.positional.size() < 2) {
            return;
        }
        for (size_t i = 0; i < sources; ++i) {
            if (sources_change) {
                write(args.positional[i]);
            } else {
                read(args.positional[i]);
            }
        }
        write(target != nullptr ? *target : args.positional.back());
    }

    // grep/rg/sed/awk: the first positional is the pattern or program unless one was given
    // with an option; the rest are files.
    void read_after_program(const CommandArgs& args, bool program_given, bool recursive_default) {
        const size_t first = program_given ? 0 : 1;
        for (size_t i = first; i < args.positional.size(); ++i) {
            // awk's var=value operands are assignments, not files.
            if (!assignment_text(args.positional[i].text)) {
                read(args.positional[i], recursive_default);
            }
        }
        if (recursive_default && args.positional.size() <= first) {
            read_cwd();
        }
    }

    // What running `name` with `argv` reads, writes and reaches: the handler for the program
    // (kPrograms), if there is one. A program without one is only run (kProcessExecute).
    void derive(std::string_view name, Words argv) {
        if (const Handler handler = program_handler(name)) {
            (this->*handler)(name, argv);
        }
    }

    // ---- one handler per program (or family): argv[0] is the program as written ---------

    void change_dir(std::string_view, Words argv) {
        const Words rest = argv.subspan(1);
        const CommandArgs args = parse_args(rest, "");
        if (args.positional.empty()) {
            if (!ctx_.home.empty()) {
                cwd_ = normalise_path(ctx_.home, "/");
            }
        } else if (auto dir = resolve(args.positional.front())) {
            cwd_ = *dir;
        }
    }

    // kReaders: every positional is a file read.
    void reader(std::string_view name, Words argv) {
        const Words rest = argv.subspan(1);
        const CommandArgs args =
            parse_args(rest, short_with_value(kReaders, name),
                       {"--lines", "--bytes", "--language", "--line-range", "--highlight-line",
                        "--map-syntax", "--delimiter", "--fields"});
        for (const ShellWord& file : args.positional) {
            read(file);
        }
    }

    // kWriters: every positional is a file written.
    void writer(std::string_view name, Words argv) {
        const Words rest = argv.subspan(1);
        const CommandArgs args = parse_args(rest, short_with_value(kWriters, name),
                                            {"--date", "--reference", "--mode", "--size"});
        for (const ShellWord& file : args.positional) {
            write(file);
        }
        if (const ShellWord* ref = args.value({"-r", "--reference"});
            ref != nullptr && one_of(name, {"touch", "truncate"})) {
            read(*ref);
        }
    }

    void source(std::string_view, Words argv) {
        const Words rest = argv.subspan(1);
        if (!rest.empty()) {
            read(rest.front());
        }
    }

    void xxd(std::string_view, Words argv) {
        const Words rest = argv.subspan(1);
        const CommandArgs args = parse_args(rest, "clsgo");
        if (!args.positional.empty()) {
            read(args.positional[0]);
        }
        if (args.positional.size() > 1) {
            write(args.positional[1]);
        }
    }

    void sort_uniq(std::string_view name, Words argv) {
        const Words rest = argv.subspan(1);
        const CommandArgs args = parse_args(rest, "kotSTfsw", {"--output", "--key"});
        const size_t inputs =
            name == "uniq" ? std::min<size_t>(1, args.positional.size()) : args.positional.size();
        for (size_t i = 0; i < inputs; ++i) {
            read(args.positional[i]);
        }
        if (name == "uniq" && args.positional.size() > 1) {
            write(args.positional[1]);
        }
        if (const ShellWord* output = args.value({"-o", "--output"})) {
            write(*output);
        }
    }

    void grep(std::string_view, Words argv) {
        const Words rest = argv.subspan(1);
        const CommandArgs args =
            parse_args(rest, "efmABCdD",
                       {"--regexp", "--file", "--max-count", "--after-context", "--before-context",
                        "--context", "--devices", "--directories", "--label", "--binary-files"});
        if (const ShellWord* file = args.value({"-f", "--file"})) {
            read(*file);
        }
        const bool recursive = args.has_short('r') || args.has_short('R') ||
                               args.has_long("--recursive") ||
                               args.has_long("--dereference-recursive");
        read_after_program(args, args.has_value({"-e", "--regexp", "-f", "--file"}), recursive);
    }

    void ripgrep(std::string_view, Words argv) {
        const Words rest = argv.subspan(1);
        const CommandArgs args = parse_args(
            rest, "efmABCgtTjMrE",
            {"--regexp",        "--file",           "--glob",         "--iglob",    "--type",
             "--type-not",      "--max-count",      "--threads",      "--replace",  "--max-columns",
             "--after-context", "--before-context", "--context",      "--encoding", "--sort",
             "--sortr",         "--max-depth",      "--max-filesize", "--type-add", "--pre",
             "--colors",        "--color",          "--ignore-file"});
        if (const ShellWord* file = args.value({"-f", "--file"})) {
            read(*file);
        }
        if (args.has_long("--files")) {
            for (const ShellWord& dir : args.positional) {
                read(dir, true);
            }
            if (args.positional.empty()) {
                read_cwd();
            }
            return;
        }
        read_after_program(args, args.has_value({"-e", "--regexp", "-f", "--file"}), true);
    }

    void sed(std::string_view, Words argv) {
        const Words rest = argv.subspan(1);
        const CommandArgs args =
            parse_args(rest, "efl", {"--expression", "--file", "--line-length"});
        if (const ShellWord* file = args.value({"-f", "--file"})) {
            read(*file);
        }
        const bool given = args.has_value({"-e", "--expression", "-f", "--file"});
        const bool in_place =
            args.has_short('i') || args.has_long("--in-place") || args.has_value({"--in-place"});
        for (size_t i = given ? 0 : 1; i < args.positional.size(); ++i) {
            read(args.positional[i]);
            if (in_place) {
                write(args.positional[i]);
            }
        }
    }

    void awk(std::string_view, Words argv) {
        const Words rest = argv.subspan(1);
        const CommandArgs args =
            parse_args(rest, "fvF", {"--file", "--assign", "--field-separator"});
        if (const ShellWord* file = args.value({"-f", "--file"})) {
            read(*file);
        }
        read_after_program(args, args.has_value({"-f", "--file"}), false);
    }

    void copy_move(std::string_view name, Words argv) {
        const Words rest = argv.subspan(1);
        copy_like(parse_args(rest, "tS", {"--target-directory", "--suffix"}), name == "mv");
    }

    void link(std::string_view, Words argv) {
        const Words rest = argv.subspan(1);
        copy_like(parse_args(rest, "tS", {"--target-directory", "--suffix"}), false);
    }

    void install(std::string_view, Words argv) {
        const Words rest = argv.subspan(1);
        const CommandArgs args = parse_args(
            rest, "tSmog", {"--target-directory", "--suffix", "--mode", "--owner", "--group"});
        if (args.has_short('d') || args.has_long("--directory")) {
            for (const ShellWord& dir : args.positional) {
                write(dir);
            }
        } else {
            copy_like(args, false);
        }
    }

    void dd(std::string_view, Words argv) {
        const Words rest = argv.subspan(1);
        for (const ShellWord& operand : rest) {
            const std::string_view text = operand.text;
            if (text.starts_with("if=") || text.starts_with("of=")) {
                const ShellWord file{.text = std::string(text.substr(3)),
                                     .quoted = operand.quoted,
                                     .tilde = text.substr(3).starts_with('~'),
                                     .expands = operand.expands,
                                     .assignment = false};
                if (text.starts_with("if=")) {
                    read(file);
                } else {
                    write(file);
                }
            }
        }
    }

    void curl(std::string_view name, Words argv) {
        const Words rest = argv.subspan(1);
        const CommandArgs args = parse_args(rest, "AbcCdDeEFHKmoQrTuUwxXyYz",
                                            {"--url",
                                             "--output",
                                             "--data",
                                             "--data-raw",
                                             "--data-binary",
                                             "--data-urlencode",
                                             "--header",
                                             "--request",
                                             "--user",
                                             "--cookie",
                                             "--cookie-jar",
                                             "--proxy",
                                             "--connect-timeout",
                                             "--max-time",
                                             "--retry",
                                             "--user-agent",
                                             "--form",
                                             "--upload-file",
                                             "--write-out",
                                             "--config",
                                             "--referer",
                                             "--resolve",
                                             "--cacert",
                                             "--cert",
                                             "--key",
                                             "--limit-rate",
                                             "--range",
                                             "--dump-header",
                                             "--output-dir"});
        std::vector<ShellWord> urls = args.positional;
        if (const ShellWord* url = args.value({"--url"})) {
            urls.push_back(*url);
        }
        network_to(name, urls);
        for (std::string_view option :
             {"-o", "--output", "-D", "--dump-header", "-c", "--cookie-jar"}) {
            if (const ShellWord* file = args.value({option})) {
                write(*file);
            }
        }
        if (const ShellWord* file = args.value({"-T", "--upload-file", "-K", "--config"})) {
            read(*file);
        }
    }

    void wget(std::string_view name, Words argv) {
        const Words rest = argv.subspan(1);
        const CommandArgs args =
            parse_args(rest, "OoaPeiUtTwQlAIRDXY",
                       {"--output-document", "--output-file", "--append-output",
                        "--directory-prefix", "--input-file", "--user-agent", "--tries",
                        "--timeout", "--wait", "--user", "--password", "--header"});
        network_to(name, args.positional);
        for (std::string_view option : {"-O", "--output-document", "-o", "--output-file", "-a",
                                        "--append-output", "-P", "--directory-prefix"}) {
            if (const ShellWord* file = args.value({option})) {
                write(*file);
            }
        }
        if (const ShellWord* file = args.value({"-i", "--input-file"})) {
            read(*file);
        }
    }

    void ssh(std::string_view name, Words argv) {
        const Words rest = argv.subspan(1);
        const CommandArgs args = parse_args(rest, "BbcDEeFIiJLlmOopQRSWw");
        std::string host;
        if (!args.positional.empty()) {
            const std::string_view dest = args.positional.front().text;
            host = url_host(dest.find(':') == std::string_view::npos &&
                                    dest.find("://") == std::string_view::npos
                                ? std::string(dest) + ":"
                                : std::string(dest));
        }
        network(name, std::move(host));
        if (const ShellWord* identity = args.value({"-i"})) {
            read(*identity);
        }
        if (const ShellWord* config = args.value({"-F"})) {
            read(*config);
        }
    }

    void copy_remote(std::string_view name, Words argv) {
        const Words rest = argv.subspan(1);
        const CommandArgs args = name == "scp"
                                     ? parse_args(rest, "cFiJlmoPS")
                                     : parse_args(rest, "eBfTM",
                                                  {"--rsh", "--filter", "--exclude", "--include",
                                                   "--exclude-from", "--include-from"});
        bool remote = false;
        for (size_t i = 0; i < args.positional.size(); ++i) {
            const ShellWord& spec = args.positional[i];
            if (remote_spec(spec.text)) {
                remote = true;
                network(name, url_host(spec.text));
            } else if (i + 1 == args.positional.size() && args.positional.size() > 1) {
                write(spec);
            } else {
                read(spec);
            }
        }
        if (name == "scp" && !remote) {
            network(name, "");
        }
    }

    void netcat(std::string_view name, Words argv) {
        const Words rest = argv.subspan(1);
        network_to(name, parse_args(rest, "eIiOpqsTwXxc").positional);
    }

    void git(std::string_view, Words argv) { derive_git(argv); }

    // Package managers: installing fetches from their registry.
    void package_manager(std::string_view name, Words argv) {
        const Words rest = argv.subspan(1);
        const CommandArgs args = parse_args(rest, "");
        const std::string_view sub =
            args.positional.empty() ? std::string_view() : args.positional.front().text;
        if (one_of(name, {"pip", "pip3"}) && one_of(sub, {"install", "download"})) {
            network(fmt::format("{} {}", name, sub), "pypi.org");
        } else if (one_of(name, {"python", "python3"}) && rest.size() > 2 && rest[0].text == "-m" &&
                   one_of(rest[1].text, {"pip", "pip3"}) &&
                   one_of(rest[2].text, {"install", "download"})) {
            network(fmt::format("{} -m pip {}", name, rest[2].text), "pypi.org");
        } else if (one_of(name, {"npm", "pnpm"}) &&
                   one_of(sub, {"install", "i", "in", "add", "ci", "install-test", "it"})) {
            network(fmt::format("{} {}", name, sub), "registry.npmjs.org");
        } else if (name == "yarn" && (sub.empty() || one_of(sub, {"install", "add"}))) {
            network(sub.empty() ? std::string("yarn") : fmt::format("yarn {}", sub),
                    "registry.yarnpkg.com");
        } else if (name == "cargo" && sub == "install") {
            network("cargo install", "crates.io");
        } else if (one_of(name, {"apt", "apt-get", "aptitude"}) && sub == "install") {
            network(fmt::format("{} install", name), "");
        } else if (name == "go" && sub == "get") {
            network("go get", "proxy.golang.org");
        }
    }

    void derive_git(Words argv) {
        const size_t at = git_subcommand_index(argv);
        if (at >= argv.size()) {
            return;
        }
        const std::string sub = argv[at].text;
        const CommandArgs args = parse_args(argv.subspan(at + 1), "");
        if (one_of(sub, {"push", "fetch", "clone", "pull", "ls-remote"})) {
            std::string host;
            for (const ShellWord& word : args.positional) {
                if (word.text.find("://") != std::string::npos || remote_spec(word.text)) {
                    host = url_host(word.text);
                    break;
                }
            }
            network(fmt::format("git {}", sub), std::move(host));
        }
        auto flag = [&](std::initializer_list<std::string_view> names) {
            for (const ShellWord& word : argv.subspan(at + 1)) {
                if (one_of(word.text, names)) {
                    return true;
                }
            }
            return false;
        };
        bool modifies = one_of(sub, {"commit", "push", "reset", "rebase", "merge", "cherry-pick",
                                     "revert", "am", "clean", "restore"});
        if (sub == "stash") {
            modifies =
                args.positional.empty() || !one_of(args.positional.front().text, {"list", "show"});
        } else if (sub == "tag") {
            modifies = !argv.subspan(at + 1).empty() &&
                       !flag({"-l", "--list", "--contains", "--no-contains", "--merged",
                              "--no-merged", "--points-at", "-n"});
        } else if (sub == "branch") {
            modifies = flag({"-d", "-D", "--delete", "-m", "-M", "--move", "-f", "--force", "-c",
                             "-C", "--copy"});
        } else if (sub == "checkout") {
            modifies = flag({"--", "-f", "--force", "."});
        }
        if (modifies) {
            git_modify(sub);
        }
    }

    using Handler = void (Deriver::*)(std::string_view name, Words argv);

    // The table of programs the analysis knows, by name; null for any other program.
    static Handler program_handler(std::string_view name) {
        struct Row {
            std::initializer_list<std::string_view> names;
            Handler handler;
        };
        static const auto* const table = [] {
            const std::initializer_list<Row> rows = {
                {{"cd", "pushd"}, &Deriver::change_dir},
                {{"source", "."}, &Deriver::source},
                {{"xxd"}, &Deriver::xxd},
                {{"sort", "uniq"}, &Deriver::sort_uniq},
                {{"grep", "egrep", "fgrep", "zgrep"}, &Deriver::grep},
                {{"rg"}, &Deriver::ripgrep},
                {{"sed"}, &Deriver::sed},
                {{"awk", "gawk", "mawk", "nawk"}, &Deriver::awk},
                {{"cp", "mv"}, &Deriver::copy_move},
                {{"install"}, &Deriver::install},
                {{"ln"}, &Deriver::link},
                {{"dd"}, &Deriver::dd},
                {{"curl"}, &Deriver::curl},
                {{"wget"}, &Deriver::wget},
                {{"ssh", "sftp", "mosh"}, &Deriver::ssh},
                {{"scp", "rsync"}, &Deriver::copy_remote},
                {{"nc", "ncat", "netcat", "telnet", "socat"}, &Deriver::netcat},
                {{"git"}, &Deriver::git},
                {{"pip", "pip3", "python", "python3", "npm", "pnpm", "yarn", "cargo", "apt",
                  "apt-get", "aptitude", "go"},
                 &Deriver::package_manager},
            };
            // Never destroyed: analysis may run while static destructors do.
            auto* by_name = new std::unordered_map<std::string_view, Handler>();  // NOLINT
            for (const FileProgram& program : kReaders) {
                by_name->emplace(program.name, &Deriver::reader);
            }
            for (const FileProgram& program : kWriters) {
                by_name->emplace(program.name, &Deriver::writer);
            }
            for (const Row& row : rows) {
                for (std::string_view program : row.names) {
                    by_name->emplace(program, row.handler);
                }
            }
            return by_name;
        }();
        const auto it = table->find(name);
        return it == table->end() ? nullptr : it->second;
    }

    RequestContext ctx_;
    std::string_view tool_;
    std::vector<CapabilityRequest>& out_;
    std::string cwd_;
};

}  // namespace

BashAnalysis analyse_bash(std::string_view command) {
    return analyse(command, 0);
}

std::string command_text(const SimpleCommand& command) {
    std::string out;
    for (size_t i = command.command_start; i < command.words.size(); ++i) {
        if (!out.empty()) {
            out += ' ';
        }
        out += command.words[i].text;
    }
    return out;
}

std::string full_command_text(const SimpleCommand& command) {
    std::string out;
    for (const ShellWord& word : command.words) {
        if (!out.empty()) {
            out += ' ';
        }
        out += word.text;
    }
    return out;
}

std::vector<CapabilityRequest> bash_requests(std::string_view command, const RequestContext& ctx,
                                             std::string_view tool) {
    std::vector<CapabilityRequest> out;
    const BashAnalysis analysis = analyse_bash(command);
    if (analysis.opaque) {
        const std::string text = normalise_command_text(command);
        out.push_back(
            {.kind = CapabilityKind::kProcessExecute,
             .tool = std::string(tool),
             .command = text,
             .full_command = text,
             .opaque = true,
             .reason = fmt::format("the command could not be parsed: {}", analysis.opaque_reason)});
        return out;
    }
    Deriver deriver(ctx, tool, out);
    for (const SimpleCommand& cmd : analysis.commands) {
        deriver.add(cmd);
    }
    bool executes = false;
    for (const CapabilityRequest& request : out) {
        executes = executes || request.kind == CapabilityKind::kProcessExecute;
    }
    if (!executes) {
        // Every call of the tool is decided as a command, even one that runs only builtins.
        const std::string text = normalise_command_text(command);
        out.insert(out.begin(), {.kind = CapabilityKind::kProcessExecute,
                                 .tool = std::string(tool),
                                 .command = text,
                                 .full_command = text,
                                 .builtins_only = true});
    }
    // The same file named twice, or two `git commit`s, are one request.
    std::vector<CapabilityRequest> unique;
    unique.reserve(out.size());
    for (CapabilityRequest& request : out) {
        bool seen = false;
        for (const CapabilityRequest& kept : unique) {
            seen = seen || kept == request;
        }
        if (!seen) {
            unique.push_back(std::move(request));
        }
    }
    return unique;
}

}  // namespace stockade::policy
