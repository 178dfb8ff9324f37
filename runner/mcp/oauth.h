// serve --http --oauth FILE: the HTTP server as an OAuth 2.1 resource server (MCP authorization,
// 2025-06-18 and 2025-11-25). A client gets an access token from the authorization server — a
// JWT for this resource (RFC 8707), naming its tenant in a claim — and sends it as a bearer
// token; the server checks it against the authorization server's public keys (a JWKS file the
// operator keeps current; runner/mcp/jwt.h) and serves the tenant it names. The server's
// Protected Resource Metadata (RFC 9728) tells clients where to get tokens.
//
// FILE is JSON, or TOML when its name ends in .toml:
//   {"issuer": "https://auth.example.com",          iss of every token
//    "resource": "https://mcp.example.com/mcp",     this server's URL as clients reach it
//    "audience": "https://mcp.example.com/mcp",     what aud must name (default: resource)
//    "jwks_file": "/etc/stockade/jwks.json",        read again when it changes (each second)
//    "authorization_servers": ["https://auth.example.com"],   (default: [issuer])
//    "scopes_supported": ["mcp:tools"],             (default: [required_scope])
//    "required_scope": "mcp:tools",                 (default: none)
//    "tenant_claim": "stockade_tenant",             (default)
//    "leeway_seconds": 60}                          clock skew allowed, 0-300 (default 60)
// It is a security file: a key it does not know, a key given twice, a URL that is not https
// (http only for localhost, 127.0.0.0/8 and [::1]), a query or fragment in one, is an error.
// resource and audience: at least one; a missing resource is the audience when that is a URL.
//
// The metadata is served, without a token, at /.well-known/oauth-protected-resource, at that
// path followed by the resource's path (RFC 9728 §3.1) and by /mcp; its URL, which every 401
// gives in WWW-Authenticate, is built from the configured resource, never from a request's Host.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/crypto.h"
#include "common/result.h"
#include "runner/mcp/jwt.h"

namespace stockade::mcp {

struct OAuthConfig {
    std::string issuer;
    std::string resource;
    std::string audience;
    std::string jwks_file;
    std::vector<std::string> authorization_servers;
    std::vector<std::string> scopes_supported;
    std::string required_scope;
    std::string tenant_claim = "stockade_tenant";
    std::chrono::seconds leeway{60};

    bool operator==(const OAuthConfig&) const = default;
};

// Parses the file's text (JSON, or TOML when `toml`), defaults filled in. Every error is one line
// naming the key and saying how to fix it (kInvalidArgument).
Result<OAuthConfig> parse_oauth_config(std::string_view text, bool toml);
// Reads and parses FILE (TOML when its name ends in .toml). Errors name the file.
Result<OAuthConfig> load_oauth_config(const std::string& path);

// The Protected Resource Metadata's URL for `resource` (an https URL, checked): its origin,
// /.well-known/oauth-protected-resource, then its path without a final slash.
std::string metadata_url_of(std::string_view resource);

class ResourceServer {
public:
    // How often, at most, the JWKS file is read again to see whether it changed.
    static constexpr std::chrono::milliseconds kJwksRecheck{1000};

    // Reads the JWKS: a file that cannot be read, or has no key to use, is an error
    // (kInvalidArgument, naming the file) at start. Later changes that fail to read keep the
    // keys read before, and are logged.
    static Result<std::unique_ptr<ResourceServer>> open(
        OAuthConfig config, std::chrono::milliseconds recheck = kJwksRecheck);

    // Checks a bearer token (never logged here, nor anywhere) at `now`. Once per recheck
    // interval the JWKS file is read first, and its keys replaced when its content changed (by
    // content, not mtime: the kernel stamps files with a coarse clock, and a rotated key of the
    // same type gives a file of the same size). Thread-safe.
    jwt::Verdict check(std::string_view token, std::chrono::system_clock::time_point now =
                                                   std::chrono::system_clock::now());

    [[nodiscard]] const OAuthConfig& config() const noexcept { return config_; }
    // The metadata document, and where it is.
    [[nodiscard]] const std::string& metadata() const noexcept { return metadata_; }
    [[nodiscard]] const std::string& metadata_url() const noexcept { return metadata_url_; }
    // Whether a request for `path` (no query) is one for the metadata.
    [[nodiscard]] bool serves_metadata_at(std::string_view path) const;

    // The WWW-Authenticate value of a 401 or 403 (RFC 6750 §3, RFC 9728 §5.1): for a request
    // without a token (`refused` null), or for a token refused. error is insufficient_scope for
    // a missing scope (which is 403), else invalid_token.
    [[nodiscard]] std::string challenge(const jwt::Refused* refused) const;
    // The body of that response: what happened and what to do.
    [[nodiscard]] std::string refusal_text(const jwt::Refused* refused) const;

    // The kids of the keys in use now. Thread-safe.
    [[nodiscard]] std::vector<std::string> key_ids();

private:
    ResourceServer(OAuthConfig config, std::chrono::milliseconds recheck);
    // The keys to check with: re-read when the file changed since the last look.
    std::shared_ptr<const jwt::KeySet> keys();

    const OAuthConfig config_;
    const jwt::Expectations expect_;
    const std::chrono::milliseconds recheck_;
    std::string metadata_;
    std::string metadata_url_;
    std::vector<std::string> metadata_paths_;

    std::mutex mu_;
    std::shared_ptr<const jwt::KeySet> keys_;  // guarded by mu_
    // Guarded: the SHA-256 of the file's content as last read (parsed or not), whether it was
    // unreadable at the last look (said once), and when that was.
    Sha256Digest content_{};
    bool missing_ = false;
    std::chrono::steady_clock::time_point looked_{};
};

}  // namespace stockade::mcp
