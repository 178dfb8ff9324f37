#include "runner/cli/http_serve.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "common/allocator.h"
#include "common/crypto.h"
#include "common/log.h"
#include "common/parse.h"
#include "common/version.h"
#include "runner/cli/exit_codes.h"
#include "runner/cli/image_command.h"
#include "runner/cli/serve_command.h"
#include "runner/host/pod_backend.h"
#include "runner/host/tenant_backend.h"
#include "runner/mcp/http_server.h"
#include "runner/mcp/oauth.h"
#include "runner/session/state_dir.h"

namespace stockade::runner {

namespace {

// --pod's defaults: the whole drain (Kubernetes' terminationGracePeriodSeconds is 30 by default),
// what of it is kept for ending the sessions, and how long a bound pod may sit idle.
constexpr std::chrono::seconds kPodDrain{20};
constexpr std::chrono::milliseconds kPodDrainReserve{2000};
constexpr std::chrono::seconds kPodIdleTtl{1800};

Result<std::string> read_text(const std::string& path, std::string_view what) {
    std::ifstream in(path);
    if (!in) {
        return Error{Errc::kNotFound, fmt::format("{} {}: {}", what, path, errno_string(errno))};
    }
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

Result<std::vector<Sha256Digest>> read_token_hashes(const std::string& path,
                                                    std::string_view flag) {
    ASSIGN_OR_RETURN(std::string text, read_text(path, flag));
    auto hashes = parse_token_hashes(text);
    if (!hashes) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("{} {}: {}", flag, path, hashes.error().message)};
    }
    return hashes;
}

// What serve tells its operator whatever the log level: text on stderr, or in --log-format json
// a record like every other line there.
void announce(spdlog::level::level_enum level, const std::string& text) {
    if (log::format() == log::Format::kJson) {
        auto logger = log::get("runner");
        const spdlog::details::log_msg record(logger->name(), level, text);
        for (const auto& sink : logger->sinks()) {
            sink->log(record);
            sink->flush();
        }
        return;
    }
    fmt::print(stderr, "stockade serve: {}\n", text);
}

int fail(const std::string& message, int code) {
    announce(spdlog::level::err, message);
    return code;
}

}  // namespace

int token_hash_command() {
    std::string token;
    if (!std::getline(std::cin, token) || token.empty()) {
        return fail(
            "token hash: give the token on stdin, e.g. "
            "`openssl rand -hex 32 | tee token | stockade token hash`",
            kExitUsage);
    }
    if (!token.empty() && token.back() == '\r') {
        token.pop_back();
    }
    fmt::print("{}\n", token_hash_hex(token));
    return 0;
}

int http_serve_command(const ServeOptions& options) {
    (void)::signal(SIGPIPE, SIG_IGN);
    release_large_buffers_on_free();
    mcp::HttpOptions http;
    http.listen = options.http;
    http.allowed_hosts = options.allowed_hosts;
    http.allowed_origins = options.allowed_origins;
    http.handle_signals = true;
    http.auth = !options.no_auth;
    if (options.pod) {
        // Kubernetes kills the pod terminationGracePeriodSeconds (30 by default) after SIGTERM:
        // the whole drain fits in --drain, which must stay below it.
        http.drain = kPodDrain;
    }
    if (!options.drain.empty()) {
        try {
            http.drain = std::chrono::seconds(std::stoul(options.drain));
        } catch (const std::exception&) {
            return fail("--drain \"" + options.drain + "\": give a number of seconds", kExitUsage);
        }
    }
    if (options.pod) {
        http.drain_reserve = std::min<std::chrono::milliseconds>(kPodDrainReserve, http.drain / 2);
        http.token_header = true;  // agent-sandbox's router strips Authorization
    }
    http.mcp.version = std::string(kVersion);
    http.mcp.instructions =
        "Every tool runs inside a sandbox that sees only this workspace: paths outside it are "
        "refused, and nothing you run can reach the network unless the operator allowed it.";

    if (!options.oauth.empty()) {
        if (options.pod || options.no_auth) {
            return fail(fmt::format("--oauth: a pod takes its tenant's token from its binding, "
                                    "and --no-auth takes none: drop --oauth, or drop {}",
                                    options.pod ? "--pod" : "--no-auth"),
                        kExitUsage);
        }
        if (options.tenants.empty() || !options.token_file.empty()) {
            return fail(
                "--oauth serves the tenants of a tenants file, each access token naming its "
                "own in its tenant claim: give --tenants FILE (its tenants without "
                "token_sha256), and drop --token-file",
                kExitUsage);
        }
    }
    if (options.no_auth && (!options.tenants.empty() || !options.token_file.empty())) {
        return fail(
            "--no-auth serves without tokens: drop --tenants and --token-file, or drop "
            "--no-auth",
            kExitUsage);
    }
    if (options.pod) {
        if (!options.tenants.empty() || !options.token_file.empty()) {
            return fail(
                "--pod serves the one tenant its binding names, with the token hashes the "
                "binding gives (token_sha256): drop --tenants and --token-file",
                kExitUsage);
        }
        if (!options.workspace.empty()) {
            return fail(
                "--pod: the tenant's workspace root comes with its binding (workspace_root): "
                "drop --workspace",
                kExitUsage);
        }
        if (!options.no_auth && options.admin_token_file.empty()) {
            return fail(
                "--pod needs --admin-token-file FILE: the platform binds the pod with POST "
                "/admin/bind and a token whose SHA-256 is in FILE (a mounted Secret; make it "
                "with `stockade token hash`), and reads /admin/pod and /metrics with it; or "
                "--no-auth on a loopback address, for tests",
                kExitUsage);
        }
    } else {
        for (const auto& [set, flag] :
             {std::pair{!options.bind_file.empty(), "--bind-file"},
              std::pair{!options.pod_idle_ttl.empty(), "--pod-idle-ttl"}}) {
            if (set) {
                return fail(fmt::format("{} is for a pod: add --pod, or drop {}", flag, flag),
                            kExitUsage);
            }
        }
    }
    if (!options.pod && !options.no_auth && options.tenants.empty() && options.token_file.empty()) {
        return fail(
            "--http needs tokens: --token-file FILE (SHA-256 hashes, one per line; make "
            "one with `stockade token hash`), --tenants FILE, or --no-auth on a loopback "
            "address",
            kExitUsage);
    }
    std::chrono::seconds pod_idle_ttl = kPodIdleTtl;
    if (!options.pod_idle_ttl.empty()) {
        auto parsed = parse_duration_text(options.pod_idle_ttl);
        if (!parsed) {
            return fail(fmt::format("--pod-idle-ttl: {}", parsed.error().message), kExitUsage);
        }
        pod_idle_ttl = *parsed;
    }
    TenantsConfig config;
    if (options.pod) {
        // The tenant comes with the binding.
    } else if (!options.tenants.empty()) {
        auto loaded =
            load_tenants(options.tenants, options.oauth.empty() ? TenantAuth::kTokenHashes
                                                                : TenantAuth::kAccessTokens);
        if (!loaded) {
            return fail(loaded.error().message, kExitUsage);
        }
        config = std::move(*loaded);
    } else {
        Tenant tenant;
        tenant.name = "default";
        tenant.limits.sessions = std::max<std::size_t>(1, options.max_sessions);
        tenant.workspace_root = options.workspace.empty() ? "." : options.workspace;
        if (!options.token_file.empty()) {
            auto hashes = read_token_hashes(options.token_file, "--token-file");
            if (!hashes) {
                return fail(hashes.error().message, kExitUsage);
            }
            tenant.token_hashes = std::move(*hashes);
        }
        config.tenants.push_back(std::move(tenant));
    }
    auto state =
        resolve_state_dir(options.state_dir.empty() ? default_state_dir() : options.state_dir);
    if (!state) {
        return fail(state.error().message, kExitSetupFailed);
    }
    if (!options.oauth.empty()) {
        auto oauth = mcp::load_oauth_config(options.oauth);
        if (!oauth) {
            return fail(oauth.error().message, kExitUsage);
        }
        auto resource = mcp::ResourceServer::open(std::move(oauth).value());
        if (!resource) {
            return fail(fmt::format("--oauth {}: {}", options.oauth, resource.error().message),
                        kExitUsage);
        }
        http.oauth = std::move(resource).value();
    }
    std::vector<Sha256Digest> admin;
    if (!options.admin_token_file.empty()) {
        auto hashes = read_token_hashes(options.admin_token_file, "--admin-token-file");
        if (!hashes) {
            return fail(hashes.error().message, kExitUsage);
        }
        admin = std::move(*hashes);
    }
    // Every session's configuration before its tenant's, from serve's flags, parsed once.
    RunOptions sandbox = options.sandbox;
    sandbox.workspace_per_session = true;
    auto base =
        session_config_from_flags("", "", "", options.process_log_cap, options.output_budget,
                                  options.policy, sandbox, options.structured_content);
    if (!base) {
        return fail(base.error().message, kExitUsage);
    }
    HostConfig host{.tenants = std::move(config),
                    .state = std::move(state).value(),
                    .admin = std::move(admin),
                    .base = std::move(base).value(),
                    .from_file = options.pod || !options.tenants.empty(),
                    .no_auth = options.no_auth,
                    .image_store = image_store_dir(options.sandbox.image_store)};
    std::unique_ptr<mcp::HttpBackend> backend;
    std::string serving;  // what the "listening on" line says it serves
    if (options.pod) {
        auto pod = PodBackend::open(PodConfig{.host = std::move(host),
                                              .idle_ttl = pod_idle_ttl,
                                              .bind_file = options.bind_file,
                                              .announce = [](const std::string& text) {
                                                  announce(spdlog::level::info, text);
                                              }});
        serving = pod->bound() != nullptr
                      ? "pod, bound to tenant " + pod->bound()->tenants().front().name
                      : fmt::format("pod, not bound to a tenant yet: POST /admin/bind{}",
                                    options.bind_file.empty() ? "" : " or write --bind-file");
        backend = std::move(pod);
    } else {
        auto opened = TenantBackend::open(std::move(host));
        if (!opened) {
            return fail(opened.error().message, opened.error().code == Errc::kInvalidArgument
                                                    ? kExitUsage
                                                    : kExitSetupFailed);
        }
        for (const ServedTenant& tenant : (*opened)->tenants()) {
            serving += (serving.empty() ? "tenants: " : ", ") + tenant.name;
        }
        if (http.oauth) {
            const mcp::OAuthConfig& oauth = http.oauth->config();
            serving += fmt::format(
                "; OAuth resource {} for tokens of {}, keys {}; metadata at {}", oauth.resource,
                oauth.issuer, fmt::join(http.oauth->key_ids(), ","), http.oauth->metadata_url());
        }
        backend = std::move(opened).value();
    }
    mcp::HttpServer server(*backend, http);
    if (auto listening = server.listen(); !listening) {
        return fail(listening.error().message, listening.error().code == Errc::kInvalidArgument
                                                   ? kExitUsage
                                                   : kExitSetupFailed);
    }
    if (options.no_auth) {
        // Decided on the address bound, as the Host and Origin rules are.
        if (!server.loopback()) {
            return fail(
                "--no-auth is only for a loopback address (127.0.0.1:PORT, [::1]:PORT) or "
                "a unix socket (unix:/PATH): anyone who reaches " +
                    server.endpoint() + " could run commands. Give --token-file or --tenants.",
                kExitUsage);
        }
        announce(spdlog::level::warn,
                 fmt::format("WARNING: --no-auth: anyone who can reach {} can open sessions and "
                             "run commands in them. Use it for local tests only.",
                             server.endpoint()));
    }
    const bool unix_socket = server.endpoint().starts_with("unix:");
    announce(spdlog::level::info,
             fmt::format("listening on {}{} ({})",
                         unix_socket ? server.endpoint() : "http://" + server.endpoint(),
                         unix_socket ? " (path /mcp)" : "/mcp", serving));
    auto served = server.run();
    if (!served) {
        return fail(served.error().message, kExitSetupFailed);
    }
    announce(spdlog::level::info, "stopped");
    return 0;
}

}  // namespace stockade::runner
