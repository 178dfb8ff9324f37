// destructive_warnings (declared in bash_analysis.h): patterns that deserve a "did you mean
// that?" in the bash result. Informational only: the command still runs if the policy allows.
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "policy/bash_analysis.h"
#include "policy/command_args.h"

namespace stockade::policy {
namespace {

enum Warning : size_t {
    kRmRecursiveForce,
    kGitPushForce,
    kGitResetHard,
    kGitCleanForce,
    kDropTable,
    kDropDatabase,
    kTruncate,
    kKubectlDelete,
    kTerraformDestroy,
    kDdDevice,
    kMkfs,
    kChmodWorldWritable,
    kForkBomb,
    kWarningCount,
};

constexpr std::array<std::string_view, kWarningCount> kPhrases = {
    "may force-remove files recursively (rm -rf)",
    "may overwrite the remote branch's history (git push --force)",
    "may discard uncommitted changes (git reset --hard)",
    "may delete untracked files (git clean -f)",
    "may destroy a database table (DROP TABLE)",
    "may destroy a database (DROP DATABASE)",
    "may delete every row of a table, or a file's contents (TRUNCATE)",
    "may delete Kubernetes resources (kubectl delete)",
    "may destroy infrastructure (terraform destroy)",
    "may overwrite a device (dd of=/dev/...)",
    "may format a filesystem (mkfs)",
    "may make files world-writable recursively (chmod -R 777)",
    "may exhaust the process table (a fork bomb)",
};

using Found = std::array<bool, kWarningCount>;

bool any_word(std::span<const ShellWord> words, std::string_view text) {
    for (const ShellWord& word : words) {
        if (word.text == text) {
            return true;
        }
    }
    return false;
}

void check_argv(std::span<const ShellWord> argv, Found& found) {
    if (argv.empty()) {
        return;
    }
    const std::string_view name = program_name(argv[0].text);
    const std::span<const ShellWord> rest = argv.subspan(1);
    if (name == "rm") {
        const CommandArgs args = parse_args(rest, "");
        const bool recursive =
            args.has_short('r') || args.has_short('R') || args.has_long("--recursive");
        const bool force = args.has_short('f') || args.has_long("--force");
        found[kRmRecursiveForce] = found[kRmRecursiveForce] || (recursive && force);
    } else if (name == "git") {
        const size_t at = git_subcommand_index(argv);
        if (at >= argv.size()) {
            return;
        }
        const std::string_view sub = argv[at].text;
        const CommandArgs args = parse_args(argv.subspan(at + 1), "");
        if (sub == "push") {
            bool force = args.has_short('f') || args.has_long("--force") ||
                         args.has_long("--force-with-lease") ||
                         args.has_value({"--force-with-lease"});
            for (const ShellWord& refspec : args.positional) {
                force = force || refspec.text.starts_with('+');
            }
            found[kGitPushForce] = found[kGitPushForce] || force;
        } else if (sub == "reset") {
            found[kGitResetHard] = found[kGitResetHard] || args.has_long("--hard");
        } else if (sub == "clean") {
            found[kGitCleanForce] =
                found[kGitCleanForce] || args.has_short('f') || args.has_long("--force");
        }
    } else if (name == "kubectl") {
        found[kKubectlDelete] = found[kKubectlDelete] || any_word(rest, "delete");
    } else if (name == "terraform" || name == "tofu") {
        found[kTerraformDestroy] = found[kTerraformDestroy] || any_word(rest, "destroy") ||
                                   (any_word(rest, "apply") && any_word(rest, "-destroy"));
    } else if (name == "dd") {
        for (const ShellWord& operand : rest) {
            if (operand.text.starts_with("of=/dev/") && operand.text != "of=/dev/null") {
                found[kDdDevice] = true;
            }
        }
    } else if (name == "mkfs" || name.starts_with("mkfs.")) {
        found[kMkfs] = true;
    } else if (name == "chmod") {
        const CommandArgs args = parse_args(rest, "");
        const bool recursive = args.has_short('R') || args.has_long("--recursive");
        bool world = false;
        for (const ShellWord& mode : args.positional) {
            world = world || mode.text == "777" || mode.text == "0777" || mode.text == "a+rwx" ||
                    mode.text == "ugo+rwx";
        }
        found[kChmodWorldWritable] = found[kChmodWorldWritable] || (recursive && world);
    }
}

// SQL anywhere in the text (a psql -c argument, a heredoc, an echo into a pipe), any case.
void check_sql(std::string_view command, Found& found) {
    std::vector<std::string> words;
    std::string word;
    for (size_t i = 0; i <= command.size(); ++i) {
        const char c = i < command.size() ? command[i] : ' ';
        const bool part =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        if (part) {
            word += c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
        } else if (!word.empty()) {
            words.push_back(std::move(word));
            word.clear();
        }
    }
    for (size_t i = 0; i < words.size(); ++i) {
        if (words[i] == "truncate") {
            found[kTruncate] = true;
        } else if (words[i] == "drop" && i + 1 < words.size()) {
            found[kDropTable] = found[kDropTable] || words[i + 1] == "table";
            found[kDropDatabase] = found[kDropDatabase] || words[i + 1] == "database";
        }
    }
}

// NAME(){ NAME|NAME& };NAME with any spacing: a function that pipes itself into itself in
// the background.
void check_fork_bomb(std::string_view command, Found& found) {
    std::string squeezed;
    for (char c : command) {
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
            squeezed += c;
        }
    }
    const std::string_view text = squeezed;
    for (size_t at = text.find("(){"); at != std::string_view::npos;
         at = text.find("(){", at + 1)) {
        size_t start = at;
        while (start > 0 &&
               std::string_view(";&|(){}").find(text[start - 1]) == std::string_view::npos) {
            --start;
        }
        const std::string_view name = text.substr(start, at - start);
        if (!name.empty()) {
            const std::string body = std::string(name) + "|" + std::string(name) + "&";
            if (text.substr(at + 3).starts_with(body)) {
                found[kForkBomb] = true;
            }
        }
    }
}

// For a command that could not be parsed: words split at blanks, commands at ; & | tokens.
std::vector<std::vector<ShellWord>> rough_split(std::string_view command) {
    std::vector<std::vector<ShellWord>> out(1);
    std::string word;
    auto flush = [&] {
        if (word.empty()) {
            return;
        }
        if (word == ";" || word == "&&" || word == "||" || word == "|" || word == "&") {
            out.emplace_back();
        } else {
            out.back().push_back(ShellWord{.text = word});
        }
        word.clear();
    };
    for (char c : command) {
        if (c == ' ' || c == '\t' || c == '\n') {
            flush();
        } else {
            word += c;
        }
    }
    flush();
    return out;
}

}  // namespace

std::vector<std::string> destructive_warnings(const BashAnalysis& analysis,
                                              std::string_view command) {
    Found found{};
    if (analysis.opaque) {
        for (const std::vector<ShellWord>& argv : rough_split(command)) {
            check_argv(argv, found);
        }
    } else {
        for (const SimpleCommand& cmd : analysis.commands) {
            check_argv(std::span<const ShellWord>(cmd.words).subspan(cmd.command_start), found);
        }
    }
    check_sql(command, found);
    check_fork_bomb(command, found);
    std::vector<std::string> out;
    for (size_t i = 0; i < kWarningCount; ++i) {
        if (found[i]) {
            out.emplace_back(kPhrases[i]);
        }
    }
    return out;
}

std::vector<std::string> destructive_warnings(std::string_view command) {
    return destructive_warnings(analyse_bash(command), command);
}

}  // namespace stockade::policy
