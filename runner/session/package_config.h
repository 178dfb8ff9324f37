// `--package-config`: the caller's own npm, pip and cargo configuration in the sandbox,
// read-only and without its credentials, so that a package manager there uses the registries,
// mirrors and proxies the user set up, but an agent's command can read no token.
//
// Read from where each tool looks on the host (npm: $NPM_CONFIG_USERCONFIG or ~/.npmrc; pip:
// $PIP_CONFIG_FILE, $XDG_CONFIG_HOME/pip/pip.conf or ~/.config/pip/pip.conf, then
// ~/.pip/pip.conf; cargo: $CARGO_HOME/config.toml or ~/.cargo/config.toml), each opened without
// following a symlink anywhere on its path, and taken only when it is a regular file the caller
// owns, of at most 64 KiB: a file that fails those is skipped with a warning saying why (a
// dotfile symlink: pass it with --ro and --env yourself). The copies are generated files of the
// sandbox's root: /.stockade/npmrc and /.stockade/pip.conf, named by NPM_CONFIG_USERCONFIG and
// PIP_CONFIG_FILE, and /.cargo/config.toml, which cargo reads from the root of any directory it
// runs in. HOME inside is /tmp, so nothing else would find them.
//
// What is dropped as a credential: npm's auth settings (_auth, _authToken, _password, password,
// username, email, certfile, keyfile, otp) and every per-registry "//host/:key" line; pip's
// client-cert and any user:password@ in a URL; cargo's token and credential-provider keys
// (its credentials.toml is never read). Each copy starts with a comment saying so.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "sandbox/spec.h"

namespace stockade::runner {

struct PackageConfig {
    std::vector<sandbox::GeneratedFile> files{};
    std::vector<std::string> env{};       // "NAME=VALUE" for the sandbox
    std::vector<std::string> warnings{};  // a file skipped, and why
    std::vector<std::string> sources{};   // the host files copied, for the banner
};

// The configuration of the caller whose environment is `environ` (HOME, XDG_CONFIG_HOME,
// NPM_CONFIG_USERCONFIG, PIP_CONFIG_FILE, CARGO_HOME) and uid is `uid`.
PackageConfig load_package_config(const std::vector<std::string>& environ, uid_t uid);

// Pure pieces, exposed for tests: the text without its credentials; `dropped` counts what went.
std::string npmrc_without_credentials(std::string_view text, size_t* dropped);
std::string pip_conf_without_credentials(std::string_view text, size_t* dropped);
std::string cargo_config_without_credentials(std::string_view text, size_t* dropped);

}  // namespace stockade::runner
