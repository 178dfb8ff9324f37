#include "images/registry_auth.h"

#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/crypto.h"
#include "common/json_depth.h"
#include "common/quote.h"
#include "common/syscall.h"
#include "images/ascii.h"

namespace stockade::images {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxAuthNesting = 16;

std::optional<std::filesystem::path> env_path(const char* name) {
    // NOLINTNEXTLINE(concurrency-mt-unsafe): read once, before any thread sets the environment.
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') {
        return std::nullopt;
    }
    return std::filesystem::path(value);
}

Error entry_error(std::string_view key, std::string_view problem) {
    return Error{Errc::kInvalidArgument, fmt::format("auths.{}: {}", quote(key), problem)};
}

// One entry of "auths". Messages name the field, never its value.
Result<RegistryCredentials> read_entry(std::string_view key, const json& entry) {
    if (!entry.is_object()) {
        return entry_error(key, "not an object");
    }
    auto string_field = [&](const char* name) -> Result<std::string> {
        auto it = entry.find(name);
        if (it == entry.end() || it->is_null()) {
            return std::string();
        }
        if (!it->is_string()) {
            return entry_error(key, fmt::format("{} is not a string", name));
        }
        return it->get<std::string>();
    };
    RegistryCredentials out;
    ASSIGN_OR_RETURN(const std::string auth, string_field("auth"));
    ASSIGN_OR_RETURN(out.username, string_field("username"));
    ASSIGN_OR_RETURN(out.password, string_field("password"));
    ASSIGN_OR_RETURN(out.identity_token, string_field("identitytoken"));
    if (!auth.empty()) {
        auto decoded = base64_decode(auth);
        if (!decoded) {
            return entry_error(key, "auth is not base64");
        }
        const std::size_t colon = decoded->find(':');
        if (colon == std::string::npos || colon == 0) {
            return entry_error(key, "auth is not base64 of \"user:password\"");
        }
        out.username = decoded->substr(0, colon);
        out.password = decoded->substr(colon + 1);
    }
    if (out.username.empty() != out.password.empty() && out.identity_token.empty()) {
        return entry_error(key, "has a username without a password, or a password without one");
    }
    if (out.username.empty() && out.identity_token.empty()) {
        return entry_error(key,
                           "holds no credentials (auth, username and password, or "
                           "identitytoken); a credential helper's entry is not read");
    }
    return out;
}

}  // namespace

AuthFileSources AuthFileSources::from_environment(std::optional<std::filesystem::path> authfile) {
    return AuthFileSources{.authfile = std::move(authfile),
                           .registry_auth_file = env_path("REGISTRY_AUTH_FILE"),
                           .xdg_runtime_dir = env_path("XDG_RUNTIME_DIR"),
                           .home = env_path("HOME")};
}

AuthFileCandidates auth_file_candidates(const AuthFileSources& sources) {
    if (sources.authfile) {
        return {.files = {*sources.authfile}, .explicit_file = true};
    }
    if (sources.registry_auth_file) {
        return {.files = {*sources.registry_auth_file}, .explicit_file = true};
    }
    AuthFileCandidates out;
    if (sources.xdg_runtime_dir) {
        out.files.push_back(*sources.xdg_runtime_dir / "containers" / "auth.json");
    }
    if (sources.home) {
        out.files.push_back(*sources.home / ".docker" / "config.json");
    }
    return out;
}

std::optional<std::string> normalize_auth_key(std::string_view key) {
    bool had_scheme = false;
    for (std::string_view scheme : {"https://", "http://"}) {
        if (key.size() >= scheme.size() && ascii_lower(key.substr(0, scheme.size())) == scheme) {
            key.remove_prefix(scheme.size());
            had_scheme = true;
            break;
        }
    }
    const std::size_t slash = key.find('/');
    std::string host = ascii_lower(key.substr(0, slash));
    std::string path;
    if (slash != std::string_view::npos && !had_scheme) {
        path = std::string(key.substr(slash + 1));
        while (!path.empty() && path.back() == '/') {
            path.pop_back();
        }
    }
    if (host.empty()) {
        return std::nullopt;
    }
    if (host == "index.docker.io" || host == "registry-1.docker.io") {
        host = "docker.io";
    }
    return path.empty() ? host : host + "/" + path;
}

Result<std::optional<RegistryCredentials>> credentials_from_auth_text(std::string_view text,
                                                                      const Reference& reference) {
    if (text.size() > kMaxAuthFileBytes) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("larger than {} bytes", kMaxAuthFileBytes)};
    }
    if (json_nesting_depth(text, kMaxAuthNesting) > kMaxAuthNesting) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("nested deeper than {} levels", kMaxAuthNesting)};
    }
    const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) {
        // nlohmann's message could quote the text around the error, a secret's neighbourhood.
        return Error{Errc::kInvalidArgument, "not valid JSON"};
    }
    if (!doc.is_object()) {
        return Error{Errc::kInvalidArgument, "not a JSON object"};
    }
    auto auths = doc.find("auths");
    if (auths == doc.end() || auths->is_null()) {
        return std::optional<RegistryCredentials>();
    }
    if (!auths->is_object()) {
        return Error{Errc::kInvalidArgument, "auths is not an object"};
    }
    // The longest key that is the reference's name or a prefix of it ending at a '/'.
    const std::string name = reference.registry + "/" + reference.repository;
    const json* best = nullptr;
    std::string best_key;
    std::size_t best_length = 0;
    for (const auto& [key, entry] : auths->items()) {
        auto normalized = normalize_auth_key(key);
        if (!normalized) {
            continue;
        }
        const bool matches = name == *normalized ||
                             (name.starts_with(*normalized) && name[normalized->size()] == '/');
        if (matches && normalized->size() > best_length) {
            best = &entry;
            best_key = key;
            best_length = normalized->size();
        }
    }
    if (best == nullptr) {
        return std::optional<RegistryCredentials>();
    }
    ASSIGN_OR_RETURN(RegistryCredentials credentials, read_entry(best_key, *best));
    return std::optional<RegistryCredentials>(std::move(credentials));
}

Result<std::optional<RegistryCredentials>> find_credentials(const AuthFileCandidates& candidates,
                                                            const Reference& reference) {
    for (const auto& file : candidates.files) {
        auto text = read_file(file.string(), kMaxAuthFileBytes + 1);
        if (!text) {
            if (text.error().sys_errno == ENOENT && !candidates.explicit_file) {
                continue;
            }
            Error error = std::move(text).error();
            if (error.sys_errno == ENOENT) {
                error.code = Errc::kNotFound;
            }
            return error.wrap("registry credentials");
        }
        auto found = credentials_from_auth_text(*text, reference);
        if (!found) {
            return found.error().wrap(fmt::format("registry credentials \"{}\"", file.string()));
        }
        if (found->has_value()) {
            return found;
        }
    }
    return std::optional<RegistryCredentials>();
}

}  // namespace stockade::images
