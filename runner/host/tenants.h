// The tenants file of `stockade serve --http`: who may connect (the SHA-256 of each bearer
// token, never the token; with serve --oauth, no token at all: an access token's tenant claim
// names the tenant), where each tenant's sessions live, and what each may use. JSON, or
// TOML as `[[tenants]]` tables with a `[tenants.limits]` sub-table:
//   {"tenants": [{"name": "acme",
//                 "token_sha256": ["<64 hex>", {"sha256": "<64 hex>", "expires": "2027-01-31"}],
//                 "workspace_root": "/srv/stockade/acme", "host_uid_range": "300000-365535",
//                 "policy": "/etc/stockade/acme.json", "network": "none",
//                 "allow": ["Bash(git *)"], "ask": [], "deny": [],
//                 "image": ["debian:12", "python:3.12"],
//                 "limits": {"sessions": 16, "calls": 4, "calls_per_second": 20,
//                            "memory": "1G", "pids": "256", "cpu": "1", "cpu_weight": 100,
//                            "tmp_size": "256M",
//                            "disk": "1G", "idle_ttl": "30m", "max_lifetime": "24h"}}]}
// It is a security file, so a key it does not know, a repeated key, or a value out of range is
// an error, never a default.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/crypto.h"
#include "common/result.h"
#include "runner/session/host_ids.h"
#include "sandbox/spec.h"

namespace stockade::runner {

struct TenantLimits {
    std::size_t sessions = 16;    // concurrent MCP sessions of the tenant
    std::size_t calls = 4;        // tools/call running at once in one session
    double calls_per_second = 0;  // per tenant, token bucket (burst = max(1, rate)); 0: unlimited
    // The tenant's share of the CPU against the other tenants' (1-10000), whatever number of
    // sandboxes each runs: its sessions' cgroups sit in one group of this cpu weight. Set on
    // any tenant, it groups every tenant (100 where unset); set on none, sandboxes share the
    // CPU as their processes do.
    std::optional<std::size_t> cpu_weight;
    // Each session's worker, parsed and bounded as the CLI's --memory, --pids, --cpu and
    // --tmp-size are (runner/session/sandbox_config.h); nullopt: serve's flag, or its default.
    std::optional<uint64_t> memory_bytes, pids;
    std::optional<double> cpu;
    std::optional<uint64_t> tmp_bytes;
    // What the tenant's sessions keep on disk of spilled results and process logs, together
    // (ended sessions' included, reclaimed oldest first) and each; a size as --output-budget's
    // ("512M"); nullopt: serve's --output-budget, or its default.
    std::optional<uint64_t> disk_bytes;
    std::chrono::seconds idle_ttl{1800};       // a session with no request for this long ends
    std::chrono::seconds max_lifetime{86400};  // every session ends after this

    bool operator==(const TenantLimits&) const = default;
};

struct Tenant {
    std::string name;                        // [a-z0-9][a-z0-9_-]{0,62}
    std::vector<Sha256Digest> token_hashes;  // SHA-256 of each bearer token; never the token
    // When each of token_hashes stops being accepted (sys_seconds::max(): never). The file says
    // "YYYY-MM-DD" (the start of that day, UTC) or "YYYY-MM-DDTHH:MM:SSZ". In seconds: a
    // system_clock time point in nanoseconds ends in 2262.
    std::vector<std::chrono::sys_seconds> token_expires;
    std::string workspace_root;  // absolute; each session's workspace lives under it
    // The range its sessions' host uids are leased from ("FIRST-LAST" in the file); nullopt:
    // the default range.
    std::optional<HostIdRange> host_uid_range;
    std::string policy;  // a settings/policy file path, or empty
    sandbox::NetworkMode network = sandbox::NetworkMode::kNone;  // "none" or "allowlist"
    // Extra permission rules, as the CLI's --allow/--ask/--deny (not parsed here).
    std::vector<std::string> allow, ask, deny;
    // "image": the images of the server's store its sessions may run on ("debian:12",
    // "tools@sha256:…", "host"), the first by default, another chosen with Stockade-Image on
    // initialize; empty: serve's --image.
    std::vector<std::string> images;
    TenantLimits limits;

    bool operator==(const Tenant&) const = default;
};

struct TenantsConfig {
    std::vector<Tenant> tenants;

    // Whether a tenant sets limits.cpu_weight, which puts every tenant in its cgroup group.
    [[nodiscard]] bool cpu_weighted() const;

    bool operator==(const TenantsConfig&) const = default;
};

// How a tenants file's clients say which tenant they are. kTokenHashes: a bearer token whose
// SHA-256 the tenant lists (token_sha256 is required). kAccessTokens (serve --oauth): an OAuth
// access token whose tenant claim names the tenant (runner/mcp/oauth.h); token_sha256 is then an
// error, so that no second way in stays open by mistake. kEither: whatever the file says, for
// `stockade doctor --tenants`, which checks what does not depend on it.
enum class TenantAuth { kTokenHashes, kAccessTokens, kEither };

// Parses a tenants file's text: JSON, or TOML when `toml` is true. Every error is one line that
// names the tenant and key and says how to fix it (kInvalidArgument).
Result<TenantsConfig> parse_tenants(std::string_view text, bool toml,
                                    TenantAuth auth = TenantAuth::kTokenHashes);
// Reads and parses FILE (TOML when its name ends in .toml). Errors name the file.
Result<TenantsConfig> load_tenants(const std::string& path,
                                   TenantAuth auth = TenantAuth::kTokenHashes);

// A pod's binding (`serve --pod`, runner/host/pod_backend.h): the body of POST /admin/bind and
// the text of --bind-file, JSON:
//   {"tenant": {"name": "acme", "token_sha256": ["<64 hex>"], "workspace_root": "/workspace",
//               ...every key of a tenant of a tenants file...},
//    "expires": "2026-12-31T00:00:00Z"}
// `tenant` is one tenant exactly as a tenants file has it, read by the same code, so every check
// of a tenant holds; `expires` (optional; "YYYY-MM-DD" or "YYYY-MM-DDTHH:MM:SSZ", UTC) is when
// the claim that bound the pod ends, and the pod with it. As in a tenants file, a key it does
// not know or a key given twice is an error.
struct PodBinding {
    Tenant tenant;
    std::optional<std::chrono::sys_seconds> expires;

    bool operator==(const PodBinding&) const = default;
};

// Parses a binding's JSON text. Every error is one line that names the key and says how to fix
// it (kInvalidArgument); a token hash is never echoed.
Result<PodBinding> parse_pod_binding(std::string_view text);

// A duration as the file's idle_ttl and max_lifetime take it: "90" (seconds), "90s", "30m",
// "24h", "7d", a whole number above 0, at most 3650 days (kInvalidArgument otherwise, quoting
// the text). serve's --pod-idle-ttl is read with it.
Result<std::chrono::seconds> parse_duration_text(std::string_view text);

// A time as the file gives one, always in full: "2026-12-31T00:00:00Z".
std::string utc_time_text(std::chrono::sys_seconds time);

// The text of --token-file: one SHA-256 per line as 64 hex digits (either case); blank lines and
// lines starting with # are skipped. Errors name the line; a file without a hash is one.
Result<std::vector<Sha256Digest>> parse_token_hashes(std::string_view text);

// The tenant a bearer token belongs to, or null (always for an empty token, and for a token
// expired at `now`). The token's SHA-256 is compared in constant time with every hash of every
// tenant, without stopping at a match, so that the time taken says nothing about which hash
// matched or how closely.
const Tenant* find_tenant(
    const TenantsConfig& config, std::string_view token,
    std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

// Whether `digest` is one of `hashes`, compared in constant time with every one of them.
bool digest_in(const std::vector<Sha256Digest>& hashes, const Sha256Digest& digest);

// The lower-case hex SHA-256 of a token: `stockade token hash`, the operator's way to make an
// entry of token_sha256 or of a --token-file.
std::string token_hash_hex(std::string_view token);

}  // namespace stockade::runner
