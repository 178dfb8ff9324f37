// Where the tenants of `serve --http` work, and who owns what their sandboxes write
// (docs/http.md "Workspaces", docs/threat-model.md "Host paths a tenant can name"):
//   - each tenant's workspace root is opened once, at start, by the path in the tenants file;
//     a session's workspace is that root or, with a Stockade-Workspace header, a directory
//     resolved beneath it by descriptor (open_dir_beneath): no symlink, mount point or
//     non-directory on the way is followed, whatever the tenant's sandboxes planted there;
//   - no root contains another root or a state directory, or lies inside one (refused at start),
//     and no session's workspace is, contains or lies inside a state directory or another
//     tenant's root (refused when the session opens);
//   - run by root with a tenants file, a root belongs to a uid of its tenant's host uid range,
//     as does every session's workspace: the idmapped workspace maps the sandbox user to that
//     owner, so what the tenant's sandboxes write is owned by the tenant on the host, never by
//     root. Directories serve creates beneath a root get the root's owner.
// The checks are pure (paths, uids) so that doctor and the unit tests share them.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "common/host_dir.h"
#include "common/result.h"
#include "runner/host/tenants.h"

namespace stockade::runner {

// A root as the checks see it: its tenant and its real path.
struct TenantRoot {
    std::string tenant;
    std::string path;
};

// Refuses roots that are, contain or lie inside another tenant's root or one of `state_dirs`
// (real paths), naming both and the fix (kInvalidArgument).
Status check_roots_apart(const std::vector<TenantRoot>& roots,
                         const std::vector<std::string>& state_dirs);

// Refuses a session workspace of `tenant` (a real path) that is, contains or lies inside one of
// `state_dirs` or another tenant's root (kInvalidArgument, for the client: it names no host path).
Status check_workspace_apart(const std::string& workspace, const std::string& tenant,
                             const std::vector<TenantRoot>& roots,
                             const std::vector<std::string>& state_dirs);

// Why `owner` may not own a tenant's root or a session workspace when serve runs as root with a
// tenants file (the tenant's host uid range: Tenant::host_uid_range, or the default range), as
// one sentence with the fix; empty when it may. `path` is named in the sentence.
std::string owner_problem(const Tenant& tenant, uid_t owner, const std::string& path);

// The workspace of a session of a tenant whose workspace root is `root`: the root itself for an
// empty `name` (no Stockade-Workspace header), else the directory `name` names beneath it
// (split_dir_name), created with `create` when missing. Every refusal is kInvalidArgument and
// names the header: a malformed name, a symlink, a mount point or a file on the way.
Result<HostDir> session_workspace(const HostDir& root, const std::string& name,
                                  const DirCreation& create);

}  // namespace stockade::runner
