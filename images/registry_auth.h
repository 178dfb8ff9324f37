// Credentials for a registry, from the files docker and the containers tools (podman, skopeo,
// buildah) keep them in: a containers `auth.json` or a docker `config.json`, both of the shape
// {"auths": {"KEY": {"auth": base64("user:password")} }}, where KEY is a registry
// ("ghcr.io", "localhost:5000"), a registry and a namespace ("ghcr.io/org"), or docker's legacy
// URL form ("https://index.docker.io/v1/"). An entry may instead give "username" and "password",
// or an "identitytoken" (a refresh token for the registry's token endpoint). Credential helpers
// ("credsStore", "credHelpers") are programs we do not run: an entry only there is not found.
//
// The file belongs to the user but is read by the supervisor, so it is parsed like any other
// input: bounded, and refused with the file and the key named. No message and no log line ever
// holds a password, a token or the base64 that carries them.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "images/reference.h"

namespace stockade::images {

// What a registry is answered with. Never formatted or logged: it has no str().
struct RegistryCredentials {
    std::string username{};
    std::string password{};
    std::string identity_token{};  // when set, it stands in for the password at the token endpoint

    friend bool operator==(const RegistryCredentials&, const RegistryCredentials&) = default;
};

// An auth file is read whole, so it has a size limit.
inline constexpr std::size_t kMaxAuthFileBytes = std::size_t{1} << 20;

// Where to look, in order. `--authfile FILE` or `$REGISTRY_AUTH_FILE` names the one file to read
// (the flag first); otherwise `$XDG_RUNTIME_DIR/containers/auth.json`, then
// `$HOME/.docker/config.json`, the first that has an entry for the registry winning.
struct AuthFileSources {
    std::optional<std::filesystem::path> authfile{};            // --authfile
    std::optional<std::filesystem::path> registry_auth_file{};  // $REGISTRY_AUTH_FILE
    std::optional<std::filesystem::path> xdg_runtime_dir{};     // $XDG_RUNTIME_DIR
    std::optional<std::filesystem::path> home{};                // $HOME

    // The environment variables of this process (unset or empty ones left out), and `authfile`.
    static AuthFileSources from_environment(std::optional<std::filesystem::path> authfile = {});
};

struct AuthFileCandidates {
    std::vector<std::filesystem::path> files;
    // true for --authfile or $REGISTRY_AUTH_FILE: the file must exist. The default places may
    // be missing.
    bool explicit_file = false;
};
AuthFileCandidates auth_file_candidates(const AuthFileSources& sources);

// A key of "auths" as the registry and path it names: a scheme is dropped, and with it (docker's
// legacy form) any path; "index.docker.io" and "registry-1.docker.io" are written "docker.io",
// and the host is lower case. "https://index.docker.io/v1/" -> "docker.io",
// "Ghcr.io/org/" -> "ghcr.io/org". nullopt for a key that names nothing ("", "https://").
std::optional<std::string> normalize_auth_key(std::string_view key);

// The credentials in one file's text for `reference`: the entry whose key names the longest
// prefix of `registry/repository` at a path-component boundary, else the registry's. nullopt when
// no entry matches. Refused (kInvalidArgument, the key named): text that is not a JSON object or
// is past kMaxAuthFileBytes, an "auths" that is not an object, an entry that is not one, an
// "auth" that is not base64 of "user:password", fields that are not strings, an entry with
// neither credentials nor an identity token.
Result<std::optional<RegistryCredentials>> credentials_from_auth_text(std::string_view text,
                                                                      const Reference& reference);

// The credentials for `reference` from the candidate files, read in order. Errors name the file:
// an unreadable or malformed one, or a missing explicit one (kNotFound).
Result<std::optional<RegistryCredentials>> find_credentials(const AuthFileCandidates& candidates,
                                                            const Reference& reference);

}  // namespace stockade::images
