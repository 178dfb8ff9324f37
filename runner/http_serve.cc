#include "runner/http_serve.h"

#include <fcntl.h>
#include <malloc.h>
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

#include "common/crypto.h"
#include "common/log.h"
#include "common/parse.h"
#include "common/version.h"
#include "runner/mcp/http_server.h"
#include "runner/session.h"
#include "runner/state_dir.h"
#include "runner/tenant_roots.h"
#include "runner/tenants.h"

namespace stockade::runner {

namespace {

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

// Serves the tenants: who a token is, and each session opened as the tenant's limits say, in a
// workspace resolved beneath the tenant's root by descriptor (runner/tenant_roots.h).
class TenantBackend final : public mcp::HttpBackend {
public:
    // `roots`: each tenant's workspace root, opened, in the order of the config's tenants.
    // `state`: the state directory, opened.
    TenantBackend(TenantsConfig config, std::vector<HostDir> roots, HostDir state,
                  std::vector<Sha256Digest> admin, const ServeOptions& base)
        : config_(std::move(config)),
          roots_(std::move(roots)),
          state_(std::move(state)),
          admin_(std::move(admin)),
          base_(base),
          no_auth_(base.no_auth),
          from_file_(!base.tenants.empty()),
          owned_by_tenants_(from_file_ && current_caller().privileged) {
        for (const Tenant& tenant : config_.tenants) {
            http_.push_back(mcp::HttpTenant{.name = tenant.name,
                                            .max_sessions = tenant.limits.sessions,
                                            .max_calls = tenant.limits.calls,
                                            .calls_per_second = tenant.limits.calls_per_second,
                                            .idle_ttl = tenant.limits.idle_ttl,
                                            .max_lifetime = tenant.limits.max_lifetime});
        }
        for (std::size_t i = 0; i < roots_.size(); ++i) {
            places_.push_back(TenantRoot{config_.tenants[i].name, roots_[i].path()});
        }
    }

    [[nodiscard]] const TenantsConfig& config() const { return config_; }

    // Each tenant's state directory (beneath the state directory, by descriptor), its disk pool
    // (what its sessions' tool output may hold together, ended sessions' included: they are
    // pruned, oldest first, when the pool needs room, and at this start) and its meters.
    Status prepare() {
        for (const Tenant& tenant : config_.tenants) {
            const std::string& limit =
                tenant.limits.disk.empty() ? base_.output_budget : tenant.limits.disk;
            uint64_t cap = SessionConfig{}.spill_cap_bytes;
            if (!limit.empty()) {
                auto size = parse_size(limit);
                if (!size) {
                    return Error{Errc::kInvalidArgument,
                                 fmt::format("tenant {}: disk \"{}\": {}", tenant.name, limit,
                                             size.error().message)};
                }
                cap = *size;
            }
            HostDir dir = state_;
            if (from_file_) {
                ASSIGN_OR_RETURN(dir, open_state_subdir(state_, {"tenants", tenant.name}));
            }
            const PruneResult pruned = prune_tool_outputs(dir, cap);
            auto reclaim = [dir](uint64_t need) {
                return prune_tool_outputs(dir, UINT64_MAX, need).freed;
            };
            shared_.push_back(Shared{.state = dir,
                                     .disk = std::make_shared<DiskPool>(cap, pruned.kept, reclaim),
                                     .meters = std::make_shared<SessionMeters>()});
        }
        return {};
    }

    std::vector<mcp::TenantUsage> usage() override {
        std::vector<mcp::TenantUsage> out;
        for (std::size_t i = 0; i < shared_.size(); ++i) {
            const Shared& shared = shared_[i];
            out.push_back(mcp::TenantUsage{
                .tenant = config_.tenants[i].name,
                .worker_restarts = shared.meters->worker_restarts.load(std::memory_order_relaxed),
                .processes = shared.meters->processes.load(std::memory_order_relaxed),
                .output_bytes = shared.disk->written(),
                .disk_bytes = shared.disk->used(),
                .disk_limit_bytes = shared.disk->cap(),
                .allowed = shared.meters->decided_count(policy::Decision::kAllow),
                .asked = shared.meters->decided_count(policy::Decision::kAsk),
                .denied = shared.meters->decided_count(policy::Decision::kDeny)});
        }
        return out;
    }

    const mcp::HttpTenant* authenticate(const std::optional<std::string>& token) override {
        if (no_auth_) {
            return &http_.front();
        }
        if (!token) {
            return nullptr;
        }
        const Tenant* tenant = find_tenant(config_, *token);
        return tenant == nullptr ? nullptr : &http_[index(*tenant)];
    }

    bool is_admin(const std::optional<std::string>& token) override {
        if (!token || admin_.empty()) {
            return false;
        }
        return digest_in(admin_, sha256(*token));
    }

    Result<std::unique_ptr<mcp::ToolHost>> open_session(const mcp::HttpTenant& http_tenant,
                                                        const std::string& session_id,
                                                        const std::string& workspace) override {
        const Tenant& tenant =
            config_.tenants.at(static_cast<std::size_t>(&http_tenant - http_.data()));
        ASSIGN_OR_RETURN(HostDir dir, tenant_workspace(tenant, workspace));
        RunOptions sandbox = base_.sandbox;
        sandbox.workspace_dir = dir;
        for (const auto& [value, flag] :
             {std::pair{&tenant.limits.memory, &sandbox.memory},
              std::pair{&tenant.limits.pids, &sandbox.pids},
              std::pair{&tenant.limits.cpu, &sandbox.cpu},
              std::pair{&tenant.limits.tmp_size, &sandbox.tmp_size},
              std::pair{&tenant.host_uid_range, &sandbox.host_uid_range}}) {
            if (!value->empty()) {
                *flag = *value;
            }
        }
        if (from_file_) {
            sandbox.network = tenant.network;  // the default tenant's is the command line's
        }
        PolicyFlags policy = base_.policy;
        if (!tenant.policy.empty()) {
            policy.files.push_back(tenant.policy);
        }
        policy.allow.insert(policy.allow.end(), tenant.allow.begin(), tenant.allow.end());
        policy.ask.insert(policy.ask.end(), tenant.ask.begin(), tenant.ask.end());
        policy.deny.insert(policy.deny.end(), tenant.deny.begin(), tenant.deny.end());
        const Shared& shared = shared_.at(index(tenant));
        auto session = runner::open_session(
            dir.path(), "", "", base_.process_log_cap,
            tenant.limits.disk.empty() ? base_.output_budget : tenant.limits.disk, policy, sandbox,
            base_.structured_content, [&](SessionConfig& config) {
                if (from_file_ && config_.cpu_weighted()) {  // its sandboxes share its weight
                    config.sandbox.limits.group = "tenant-" + tenant.name;
                    config.sandbox.limits.group_cpu_weight = tenant.limits.cpu_weight.value_or(100);
                }
                config.state = shared.state;
                config.disk_pool = shared.disk;
                config.meters = shared.meters;
                config.prune_outputs = false;  // the pool reclaims ended sessions' output
            });
        if (!session) {
            return session.error();
        }
        RETURN_IF_ERROR((*session)->start_worker());
        SPDLOG_LOGGER_INFO(log::get("runner"),
                           "session opened tenant={} session={} id={} workspace={}", tenant.name,
                           session_id.substr(0, 12), (*session)->paths().id, dir.path());
        return std::unique_ptr<mcp::ToolHost>(std::move(*session));
    }

private:
    [[nodiscard]] std::size_t index(const Tenant& tenant) const {
        return static_cast<std::size_t>(&tenant - config_.tenants.data());
    }

    // The workspace of a session of `tenant` that asked for `name` (Stockade-Workspace):
    // resolved beneath its root by descriptor, apart from every other root and the server's
    // state, and owned by the tenant when serve runs as root with a tenants file.
    Result<HostDir> tenant_workspace(const Tenant& tenant, const std::string& name) {
        const HostDir& root = roots_.at(index(tenant));
        DirCreation creation{.mode = 0750};
        if (owned_by_tenants_) {
            struct stat st {};
            if (::fstat(root.fd(), &st) != 0) {
                return errno_error(fmt::format("stat tenant {}'s workspace root", tenant.name),
                                   errno);
            }
            creation.uid = st.st_uid;  // what serve creates there is the tenant's
            creation.gid = st.st_gid;
        }
        ASSIGN_OR_RETURN(HostDir dir, session_workspace(root, name, creation));
        RETURN_IF_ERROR(check_workspace_apart(dir.path(), tenant.name, places_, {state_.path()}));
        if (owned_by_tenants_) {
            struct stat st {};
            if (::fstat(dir.fd(), &st) != 0) {
                return errno_error("stat the session's workspace", errno);
            }
            if (std::string why = owner_problem(tenant, st.st_uid, dir.path()); !why.empty()) {
                SPDLOG_LOGGER_WARN(log::get("runner"), "session refused tenant={}: {}", tenant.name,
                                   why);
                return Error{Errc::kInvalidArgument,
                             fmt::format("Stockade-Workspace \"{}\": the directory belongs to "
                                         "uid {}, not to this tenant, so a session there could "
                                         "write as another user; ask the operator to give it to "
                                         "the tenant, or name another directory",
                                         name, st.st_uid)};
            }
        }
        return dir;
    }

    struct Shared {
        HostDir state;
        std::shared_ptr<DiskPool> disk;
        std::shared_ptr<SessionMeters> meters;
    };

    const TenantsConfig config_;
    const std::vector<HostDir> roots_;   // one per tenant, in the same order: opened at start
    std::vector<TenantRoot> places_;     // their real paths, for check_workspace_apart
    const HostDir state_;                // the state directory
    std::vector<mcp::HttpTenant> http_;  // one per tenant, in the same order
    std::vector<Shared> shared_;         // one per tenant, in the same order (prepare)
    const std::vector<Sha256Digest> admin_;
    const ServeOptions& base_;
    const bool no_auth_;
    const bool from_file_;  // --tenants; else the one default tenant of the command line
    // Root with a tenants file: roots and session workspaces belong to the tenants' uids.
    const bool owned_by_tenants_;
};

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
    if (!options.drain.empty()) {
        try {
            http.drain = std::chrono::seconds(std::stoul(options.drain));
        } catch (const std::exception&) {
            return fail("--drain \"" + options.drain + "\": give a number of seconds", kExitUsage);
        }
    }
    http.mcp.version = std::string(kVersion);
    http.mcp.instructions =
        "Every tool runs inside a sandbox that sees only this workspace: paths outside it are "
        "refused, and nothing you run can reach the network unless the operator allowed it.";

    if (options.no_auth && (!options.tenants.empty() || !options.token_file.empty())) {
        return fail(
            "--no-auth serves without tokens: drop --tenants and --token-file, or drop "
            "--no-auth",
            kExitUsage);
    }
    if (!options.no_auth && options.tenants.empty() && options.token_file.empty()) {
        return fail(
            "--http needs tokens: --token-file FILE (SHA-256 hashes, one per line; make "
            "one with `stockade token hash`), --tenants FILE, or --no-auth on a loopback "
            "address",
            kExitUsage);
    }
    TenantsConfig config;
    if (!options.tenants.empty()) {
        auto loaded = load_tenants(options.tenants);
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
    // The trusted roots, opened once: the tenants' workspace roots and the state directory.
    // Everything a session works in is resolved beneath them by descriptor.
    auto state =
        resolve_state_dir(options.state_dir.empty() ? default_state_dir() : options.state_dir);
    if (!state) {
        return fail(state.error().message, kExitSetupFailed);
    }
    const bool owned_by_tenants = !options.tenants.empty() && current_caller().privileged;
    std::vector<HostDir> roots;
    std::vector<TenantRoot> places;
    for (const Tenant& tenant : config.tenants) {
        auto root = HostDir::open(tenant.workspace_root);
        if (!root) {
            return fail(fmt::format("tenant {}: workspace root {} is not a directory that can be "
                                    "opened ({}): create it, or fix workspace_root",
                                    tenant.name, tenant.workspace_root,
                                    errno_string(root.error().sys_errno)),
                        kExitUsage);
        }
        if (owned_by_tenants) {
            struct stat st {};
            if (::fstat(root->fd(), &st) != 0) {
                return fail(errno_error("stat " + root->path(), errno).message, kExitSetupFailed);
            }
            if (std::string why = owner_problem(tenant, st.st_uid, root->path()); !why.empty()) {
                return fail(fmt::format("tenant {}: workspace root {}", tenant.name, why),
                            kExitUsage);
            }
        }
        places.push_back(TenantRoot{tenant.name, root->path()});
        roots.push_back(std::move(root).value());
    }
    if (auto apart = check_roots_apart(places, {state->path()}); !apart) {
        return fail(apart.error().message, kExitUsage);
    }
    std::vector<Sha256Digest> admin;
    if (!options.admin_token_file.empty()) {
        auto hashes = read_token_hashes(options.admin_token_file, "--admin-token-file");
        if (!hashes) {
            return fail(hashes.error().message, kExitUsage);
        }
        admin = std::move(*hashes);
    }
    TenantBackend backend(std::move(config), std::move(roots), std::move(state).value(),
                          std::move(admin), options);
    if (auto prepared = backend.prepare(); !prepared) {
        return fail(prepared.error().message, prepared.error().code == Errc::kInvalidArgument
                                                  ? kExitUsage
                                                  : kExitSetupFailed);
    }
    mcp::HttpServer server(backend, http);
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
    std::string names;
    for (const Tenant& tenant : backend.config().tenants) {
        names += (names.empty() ? "" : ", ") + tenant.name;
    }
    const bool unix_socket = server.endpoint().starts_with("unix:");
    announce(spdlog::level::info,
             fmt::format("listening on {}{} (tenants: {})",
                         unix_socket ? server.endpoint() : "http://" + server.endpoint(),
                         unix_socket ? " (path /mcp)" : "/mcp", names));
    auto served = server.run();
    if (!served) {
        return fail(served.error().message, kExitSetupFailed);
    }
    announce(spdlog::level::info, "stopped");
    return 0;
}

}  // namespace stockade::runner
