#include "runner/host/tenant_backend.h"

#include <sys/stat.h>

#include <cstdint>
#include <utility>

#include <fmt/format.h>

#include "common/log.h"
#include "runner/host/tenant_roots.h"
#include "runner/session/isolation.h"
#include "runner/session/state_dir.h"

namespace stockade::runner {

namespace {

Result<struct stat> stat_dir(const HostDir& dir) {
    struct stat st {};
    if (::fstat(dir.fd(), &st) != 0) {
        return errno_error("stat " + dir.path(), errno);
    }
    return st;
}

}  // namespace

TenantBackend::TenantBackend(HostConfig config) : config_(std::move(config)) {}

Result<std::unique_ptr<TenantBackend>> TenantBackend::open(HostConfig config) {
    std::unique_ptr<TenantBackend> backend(new TenantBackend(std::move(config)));
    const HostConfig& c = backend->config_;
    backend->owned_by_tenants_ = c.from_file && current_caller().privileged;
    backend->tenants_.reserve(c.tenants.tenants.size());
    // The trusted roots, opened once: the tenants' workspace roots and the state directory.
    // Everything a session works in is resolved beneath them by descriptor.
    for (const Tenant& tenant : c.tenants.tenants) {
        auto root = HostDir::open(tenant.workspace_root);
        if (!root) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("tenant {}: workspace root {} is not a directory that can "
                                     "be opened ({}): create it, or fix workspace_root",
                                     tenant.name, tenant.workspace_root,
                                     errno_string(root.error().sys_errno))};
        }
        if (backend->owned_by_tenants_) {
            ASSIGN_OR_RETURN(const struct stat st, stat_dir(*root));
            if (std::string why = owner_problem(tenant, st.st_uid, root->path()); !why.empty()) {
                return Error{Errc::kInvalidArgument,
                             fmt::format("tenant {}: workspace root {}", tenant.name, why)};
            }
        }
        backend->places_.push_back(TenantRoot{tenant.name, root->path()});
        ServedTenant served;
        static_cast<mcp::HttpTenant&>(served) =
            mcp::HttpTenant{.name = tenant.name,
                            .max_sessions = tenant.limits.sessions,
                            .max_calls = tenant.limits.calls,
                            .calls_per_second = tenant.limits.calls_per_second,
                            .idle_ttl = tenant.limits.idle_ttl,
                            .max_lifetime = tenant.limits.max_lifetime};
        served.config = tenant;
        served.root = std::move(root).value();
        backend->tenants_.push_back(std::move(served));
    }
    RETURN_IF_ERROR(check_roots_apart(backend->places_, {c.state.path()}));
    // Every image a tenant names must be in the store now: a missing one is the operator's to
    // fix before any client meets it.
    for (const Tenant& tenant : c.tenants.tenants) {
        for (const std::string& ref : tenant.images) {
            if (ref == "host") {
                continue;
            }
            if (!backend->image_store_) {
                auto store = images::ImageStore::open(c.image_store, false);
                if (!store) {
                    return Error{Errc::kInvalidArgument,
                                 fmt::format("tenant {}: image {}: {}", tenant.name, ref,
                                             store.error().message)};
                }
                backend->image_store_.emplace(std::move(store).value());
            }
            if (auto found = backend->image_store_->find(ref); !found) {
                return Error{Errc::kInvalidArgument,
                             fmt::format("tenant {}: image {}: {}", tenant.name, ref,
                                         found.error().message)};
            }
        }
    }
    // Each tenant's state directory (beneath the state directory, by descriptor), its disk pool
    // (what its sessions' tool output may hold together, ended sessions' included: they are
    // pruned, oldest first, when the pool needs room, and at this start) and its meters.
    for (ServedTenant& tenant : backend->tenants_) {
        const uint64_t cap = tenant.config.limits.disk_bytes.value_or(c.base.spill_cap_bytes);
        HostDir dir = c.state;
        if (c.from_file) {
            ASSIGN_OR_RETURN(dir, open_state_subdir(c.state, {"tenants", tenant.name}));
        }
        const PruneResult pruned = prune_tool_outputs(dir, cap);
        auto reclaim = [dir](uint64_t need) {
            return prune_tool_outputs(dir, UINT64_MAX, need).freed;
        };
        tenant.state = dir;
        tenant.disk = std::make_shared<DiskPool>(cap, pruned.kept, reclaim);
        tenant.meters = std::make_shared<SessionMeters>();
    }
    return backend;
}

Result<SessionConfig> TenantBackend::session_config(const ServedTenant& served,
                                                    HostDir workspace) const {
    const Tenant& tenant = served.config;
    SessionConfig config = config_.base;
    SandboxConfig& sandbox = config.sandbox;
    ASSIGN_OR_RETURN(const struct stat st, stat_dir(workspace));
    sandbox.workspace = std::move(workspace);
    sandbox.workspace_uid = st.st_uid;
    sandbox.workspace_gid = st.st_gid;
    // serve's --mask and --read-only, now that the workspace they may lie in is known.
    RETURN_IF_ERROR(check_protected_paths(sandbox));

    const TenantLimits& limits = tenant.limits;
    for (const auto& [field, value] :
         {std::pair{&sandbox.limits.memory_bytes, &limits.memory_bytes},
          std::pair{&sandbox.limits.pids, &limits.pids},
          std::pair{&sandbox.limits.tmp_bytes, &limits.tmp_bytes}}) {
        if (*value) {
            *field = *value;
        }
    }
    if (limits.cpu) {
        sandbox.limits.cpu = limits.cpu;
    }
    if (config_.from_file && config_.tenants.cpu_weighted()) {  // its sandboxes share its weight
        sandbox.limits.group = "tenant-" + tenant.name;
        sandbox.limits.group_cpu_weight = limits.cpu_weight.value_or(100);
    }
    if (tenant.host_uid_range) {
        config.host_uid_range = tenant.host_uid_range;
    }
    if (config_.from_file) {
        sandbox.network = tenant.network;  // the default tenant's is the command line's
        if (!sandbox.network_pins.empty() && sandbox.network != sandbox::NetworkMode::kAllowlist) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("--resolve pins names for the proxy of network "
                                     "\"allowlist\", which tenant {} does not have: give it "
                                     "\"network\": \"allowlist\", or drop --resolve",
                                     tenant.name)};
        }
    }
    if (!tenant.policy.empty()) {
        config.policy.files.push_back(tenant.policy);
    }
    PolicyConfig& policy = config.policy;
    policy.allow.insert(policy.allow.end(), tenant.allow.begin(), tenant.allow.end());
    policy.ask.insert(policy.ask.end(), tenant.ask.begin(), tenant.ask.end());
    policy.deny.insert(policy.deny.end(), tenant.deny.begin(), tenant.deny.end());
    config.spill_cap_bytes = limits.disk_bytes.value_or(config_.base.spill_cap_bytes);
    config.state = served.state;
    config.disk_pool = served.disk;
    config.meters = served.meters;
    config.prune_outputs = false;  // the pool reclaims ended sessions' output
    // Hosted (a tenants file, or --mode hosted): the tenant's model sees its workspace at
    // /workspace and spilled output under /stockade, never the server's layout — where the
    // sandbox has a mount namespace to show them there (at level landlock it runs on the
    // host's tree). A single user's `serve --http --workspace DIR` keeps DIR, as stdio does.
    const bool hosted = config_.from_file || config.policy.mode == policy::Mode::kHosted;
    if (auto level = resolve_isolation(sandbox.isolation);
        hosted && level &&
        (level->level == sandbox::Isolation::kFull ||
         level->level == sandbox::Isolation::kNamespaces)) {
        sandbox.workspace_view = kTenantWorkspaceView;
        sandbox.spill_view = kTenantSpillView;
    }
    return config;
}

Result<images::Image> TenantBackend::session_image(const ServedTenant& tenant,
                                                   const std::string& ref) const {
    const images::Image& base = config_.base.sandbox.image;
    const std::vector<std::string>& allowed = tenant.config.images;
    if (allowed.empty()) {
        if (!ref.empty() && ref != base.name) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("Stockade-Image \"{}\": this server's sessions run on "
                                     "image {}; leave the header out",
                                     ref, base.name)};
        }
        return base;
    }
    const std::string& wanted = ref.empty() ? allowed.front() : ref;
    if (std::find(allowed.begin(), allowed.end(), wanted) == allowed.end()) {
        std::string listed;
        for (const std::string& name : allowed) {
            listed += (listed.empty() ? "" : ", ") + name;
        }
        return Error{Errc::kInvalidArgument,
                     fmt::format("Stockade-Image \"{}\": not an image of this tenant; it may "
                                 "use {}",
                                 wanted, listed)};
    }
    if (wanted == "host") {
        return images::load_image("host");
    }
    if (!image_store_) {
        return Error{Errc::kUnavailable, "the image store is not open"};
    }
    auto image = images::load_stored_image(*image_store_, wanted);
    if (!image) {
        // The operator removed it since the start: theirs to fix, not the client's.
        return Error{Errc::kUnavailable,
                     fmt::format("image {} is no longer in the server's store; ask the operator "
                                 "to import it again",
                                 wanted)};
    }
    return image;
}

Result<HostDir> TenantBackend::tenant_workspace(const ServedTenant& tenant,
                                                const std::string& name) const {
    DirCreation creation{.mode = 0750};
    if (owned_by_tenants_) {
        ASSIGN_OR_RETURN(const struct stat st, stat_dir(tenant.root));
        creation.uid = st.st_uid;  // what serve creates there is the tenant's
        creation.gid = st.st_gid;
    }
    ASSIGN_OR_RETURN(HostDir dir, session_workspace(tenant.root, name, creation));
    RETURN_IF_ERROR(
        check_workspace_apart(dir.path(), tenant.name, places_, {config_.state.path()}));
    if (owned_by_tenants_) {
        ASSIGN_OR_RETURN(const struct stat st, stat_dir(dir));
        if (std::string why = owner_problem(tenant.config, st.st_uid, dir.path()); !why.empty()) {
            SPDLOG_LOGGER_WARN(log::get("runner"), "session refused tenant={}: {}", tenant.name,
                               why);
            return Error{Errc::kInvalidArgument,
                         fmt::format("Stockade-Workspace \"{}\": the directory belongs to uid {}, "
                                     "not to this tenant, so a session there could write as "
                                     "another user; ask the operator to give it to the tenant, "
                                     "or name another directory",
                                     name, st.st_uid)};
        }
    }
    return dir;
}

const mcp::HttpTenant* TenantBackend::authenticate(const std::optional<std::string>& token) {
    if (config_.no_auth) {
        return &tenants_.front();
    }
    if (!token) {
        return nullptr;
    }
    const Tenant* tenant = find_tenant(config_.tenants, *token);
    if (tenant == nullptr) {
        return nullptr;
    }
    return &tenants_.at(static_cast<std::size_t>(tenant - config_.tenants.tenants.data()));
}

const mcp::HttpTenant* TenantBackend::tenant_named(std::string_view name) {
    for (const ServedTenant& tenant : tenants_) {
        if (tenant.name == name) {
            return &tenant;
        }
    }
    return nullptr;
}

bool TenantBackend::is_admin(const std::optional<std::string>& token) {
    if (!token || config_.admin.empty()) {
        return false;
    }
    return digest_in(config_.admin, sha256(*token));
}

Result<std::unique_ptr<mcp::ToolHost>> TenantBackend::open_session(
    const mcp::HttpTenant& http_tenant, const std::string& session_id,
    const mcp::SessionRequest& request) {
    // authenticate() hands out only ServedTenants.
    const auto& tenant = static_cast<const ServedTenant&>(http_tenant);
    ASSIGN_OR_RETURN(images::Image image, session_image(tenant, request.image));
    ASSIGN_OR_RETURN(HostDir dir, tenant_workspace(tenant, request.workspace));
    const std::string path = dir.path();
    ASSIGN_OR_RETURN(SessionConfig config, session_config(tenant, std::move(dir)));
    const std::string digest = image.stored() ? image.tree->digest.str() : "-";
    config.sandbox.image = std::move(image);
    const std::string image_name = config.sandbox.image.name;
    config.mcp_session_id = session_id;
    config.tenant = tenant.name;
    ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Session::open(std::move(config)));
    RETURN_IF_ERROR(session->start_worker());
    SPDLOG_LOGGER_INFO(log::get("runner"),
                       "session opened tenant={} session={} id={} workspace={} image={} "
                       "digest={}",
                       tenant.name, session_id.substr(0, 12), session->paths().id, path, image_name,
                       digest);
    return std::unique_ptr<mcp::ToolHost>(std::move(session));
}

std::vector<mcp::TenantUsage> TenantBackend::usage() {
    std::vector<mcp::TenantUsage> out;
    for (const ServedTenant& tenant : tenants_) {
        const SessionMeters& meters = *tenant.meters;
        out.push_back(mcp::TenantUsage{
            .tenant = tenant.name,
            .worker_restarts = meters.worker_restarts.load(std::memory_order_relaxed),
            .processes = meters.processes.load(std::memory_order_relaxed),
            .output_bytes = tenant.disk->written(),
            .disk_bytes = tenant.disk->used(),
            .disk_limit_bytes = tenant.disk->cap(),
            .allowed = meters.decided_count(policy::Decision::kAllow),
            .asked = meters.decided_count(policy::Decision::kAsk),
            .denied = meters.decided_count(policy::Decision::kDeny)});
    }
    return out;
}

}  // namespace stockade::runner
