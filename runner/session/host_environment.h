// What of the operator's own environment a session's sandbox can use: an identity for the
// commits made inside it, and the toolchains on the operator's PATH (pyenv, ~/.cargo, nvm...)
// that the sandbox's image does not contain. Pure parsing here; the readers take the caller's
// environment as data.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace stockade::runner {

struct GitIdentity {
    std::string name;
    std::string email;

    [[nodiscard]] bool complete() const { return !name.empty() && !email.empty(); }
    friend bool operator==(const GitIdentity&, const GitIdentity&) = default;
};

// The identity used when neither --git-identity nor the operator's git config gives one.
GitIdentity fallback_git_identity();

// "Name <email>", as --git-identity takes it. Errors name the expected form.
Result<GitIdentity> parse_git_identity(std::string_view text);

// Applies the [user] name and email of one git config file's text to `identity` (later
// assignments win, as in git). [include] and [includeIf] are not followed.
void apply_git_config(std::string_view text, GitIdentity& identity);

// The operator's identity from git's global files, in git's order (/etc/gitconfig, then
// $XDG_CONFIG_HOME/git/config or ~/.config/git/config, then ~/.gitconfig); `environ` is the
// caller's ("NAME=VALUE"). nullopt when they do not give both a name and an email.
std::optional<GitIdentity> operator_git_identity(const std::vector<std::string>& environ);

// GIT_AUTHOR_NAME, GIT_AUTHOR_EMAIL, GIT_COMMITTER_NAME and GIT_COMMITTER_EMAIL, as --env
// entries: git needs no config file to commit with them.
std::vector<std::string> git_identity_env(const GitIdentity& identity);

// A directory of the operator's PATH that holds programs the sandbox cannot see.
struct HiddenToolDir {
    std::string dir;
    std::vector<std::string> programs;  // a few of its executables, sorted
};

// The entries of `path` (a PATH value) that are directories with executables and do not lie
// under any of `visible` (the image's trees, the workspace, --ro/--rw paths), in PATH order.
std::vector<HiddenToolDir> hidden_path_dirs(std::string_view path,
                                            const std::vector<std::string>& visible,
                                            size_t max_programs = 4);

// One operator-facing paragraph naming them and how to mount one; empty when there are none.
std::string hidden_path_dirs_hint(const std::vector<HiddenToolDir>& dirs);

}  // namespace stockade::runner
