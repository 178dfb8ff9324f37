#include "runner/host/tenant_roots.h"

#include <cstdint>

#include <fmt/format.h>

#include "runner/session/host_ids.h"

namespace stockade::runner {

namespace {

// How `a` and `b` overlap: "is", "lies inside", "contains", or nullptr when they do not.
const char* overlap(const std::string& a, const std::string& b) {
    if (a == b) {
        return "is";
    }
    if (path_within(a, b)) {
        return "lies inside";
    }
    if (path_within(b, a)) {
        return "contains";
    }
    return nullptr;
}

}  // namespace

Status check_roots_apart(const std::vector<TenantRoot>& roots,
                         const std::vector<std::string>& state_dirs) {
    for (std::size_t i = 0; i < roots.size(); ++i) {
        for (std::size_t j = i + 1; j < roots.size(); ++j) {
            if (const char* how = overlap(roots[i].path, roots[j].path)) {
                return Error{Errc::kInvalidArgument,
                             fmt::format("tenant {}: workspace_root \"{}\" {} tenant {}'s \"{}\": "
                                         "each tenant needs a root of its own, apart from every "
                                         "other tenant's",
                                         roots[i].tenant, roots[i].path, how, roots[j].tenant,
                                         roots[j].path)};
            }
        }
        for (const std::string& state : state_dirs) {
            if (const char* how = overlap(roots[i].path, state)) {
                return Error{Errc::kInvalidArgument,
                             fmt::format("tenant {}: workspace_root \"{}\" {} the state directory "
                                         "\"{}\": a tenant's sessions could then reach the "
                                         "server's records. Move the root, or pass --state-dir "
                                         "(STOCKADE_STATE_DIR) outside every root",
                                         roots[i].tenant, roots[i].path, how, state)};
            }
        }
    }
    return {};
}

Status check_workspace_apart(const std::string& workspace, const std::string& tenant,
                             const std::vector<TenantRoot>& roots,
                             const std::vector<std::string>& state_dirs) {
    for (const std::string& state : state_dirs) {
        if (overlap(workspace, state) != nullptr) {
            return Error{Errc::kInvalidArgument,
                         "Stockade-Workspace: the directory it names overlaps the server's "
                         "state; name a project directory of your own"};
        }
    }
    for (const TenantRoot& root : roots) {
        if (root.tenant != tenant && overlap(workspace, root.path) != nullptr) {
            return Error{Errc::kInvalidArgument,
                         "Stockade-Workspace: the directory it names belongs to another tenant; "
                         "name a project directory of your own"};
        }
    }
    return {};
}

std::string owner_problem(const Tenant& tenant, uid_t owner, const std::string& path) {
    const HostIdRange range = tenant.host_uid_range.value_or(HostIdRange{});
    const uint64_t first = range.first;
    const uint64_t end = first + range.count;
    if (owner != 0 && owner >= first && owner < end) {
        return {};
    }
    return fmt::format(
        "{} is owned by uid {}{}, which is not one of tenant {}'s host uids ({}-{}): what its "
        "sandboxes write there would be owned by uid {} on the host. Give it to one of them, "
        "e.g. chown {}:{} {}",
        path, owner, owner == 0 ? " (root)" : "", tenant.name, first, end - 1, owner, first, first,
        path);
}

Result<HostDir> session_workspace(const HostDir& root, const std::string& name,
                                  const DirCreation& create) {
    if (name.empty()) {
        return root;
    }
    auto components = split_dir_name(name);
    if (!components) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("Stockade-Workspace: {}", components.error().message)};
    }
    auto dir = open_dir_beneath(root.fd(), *components, create);
    if (!dir) {
        const Error& error = dir.error();
        return Error{Errc::kInvalidArgument,
                     fmt::format("Stockade-Workspace \"{}\": {}{}", name, error.message,
                                 error.sys_errno == ELOOP || error.sys_errno == EXDEV
                                     ? ": name a directory beneath your workspace root itself"
                                     : ""),
                     error.sys_errno};
    }
    return HostDir::adopt(std::move(dir).value());
}

}  // namespace stockade::runner
