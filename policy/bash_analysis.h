// Analysis of a bash command before it runs (advisory: the sandbox is the enforcement).
//
// The bash tool calls two functions:
//   bash_requests(command, ctx)      → the capability requests the policy decides
//   destructive_warnings(command)    → phrases for the result's `warning` field, e.g.
//                                      "may force-remove files recursively (rm -rf)"
//
// A command is split into simple commands (shell_parse.h), each matched by Bash rules on its
// own: `Bash(npm test:*)` allows `npm test`, not the `curl x` in `npm test && curl x`. Leading
// assignments and wrappers are stripped before matching (FOO=1, env [-i] [NAME=V...], timeout
// [opts] DUR, xargs [opts], nice [-n N], nohup, sudo [opts], time, command, exec, stdbuf);
// a rule may match either form. `bash -c SCRIPT`, `sh -c`, `eval` and `find -exec CMD ;` are
// analysed as the commands they run. Each simple command yields:
//   process.execute     the command itself (not for cd, export, true and other builtins that
//                       run nothing; a call always yields at least one)
//   network.access      curl, wget, ssh, scp/rsync to a remote, nc, git push/fetch/clone/pull/
//                       ls-remote, pip install, npm/pnpm/yarn install|add|ci, cargo install,
//                       apt install, go get (the host when the command names one)
//   git.modify          git commit/push/reset/rebase/merge/cherry-pick/revert/am/clean/
//                       restore, checkout -- / -f / ., branch -d/-D/-m/-f, tag NAME, stash
//   file.write (+ file.write.outsideProject beyond the workspace and scratch roots)
//                       redirection targets; cp/mv/install/ln destinations, tee, touch, mkdir,
//                       rm, rmdir, truncate, sed -i files, sort -o, dd of=, curl -o, wget -O
//   file.read           cat, head, tail, less, more, bat, grep/rg/sed/awk files, cp sources,
//                       source, "<" redirections, dd if= (so Read(.env) is reported for
//                       `cat .env`)
// Paths resolve against the cwd (`cd DIR` moves it for later commands), "~" and $HOME; words
// with other expansions ($VAR, $(...), globs are kept literal) cannot be resolved and are
// skipped. A command that cannot be parsed (unbalanced quotes, `case`) is opaque: one
// process.execute request for the whole text, which only an exact Bash rule can allow.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "policy/capability.h"
#include "policy/shell_parse.h"

namespace stockade::policy {

struct BashAnalysis {
    // Every simple command, nested ones included, with command_start set.
    std::vector<SimpleCommand> commands{};
    bool opaque = false;
    std::string opaque_reason{};  // "unterminated double quote"
};

BashAnalysis analyse_bash(std::string_view command);

// The command proper (after assignments and wrappers), and all its words, joined by single
// spaces: the two forms Bash rules are matched against.
std::string command_text(const SimpleCommand& command);
std::string full_command_text(const SimpleCommand& command);

// Phrases naming the destructive patterns in `command`, without duplicates, in a fixed order:
// rm -rf, git push --force, git reset --hard, git clean -f, DROP TABLE / DROP DATABASE /
// TRUNCATE (anywhere, any case), kubectl delete, terraform destroy, dd of=/dev/..., mkfs,
// chmod -R 777, the :(){ :|:& };: fork bomb. Empty when nothing matched.
std::vector<std::string> destructive_warnings(std::string_view command);
std::vector<std::string> destructive_warnings(const BashAnalysis& analysis,
                                              std::string_view command);

// The requests of running `command` (the bash tool, or process start with tool "process").
std::vector<CapabilityRequest> bash_requests(std::string_view command, const RequestContext& ctx,
                                             std::string_view tool = "bash");

}  // namespace stockade::policy
