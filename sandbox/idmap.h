// User-namespace id maps: the sandbox's own maps, and idmapped mounts that let a root caller's
// sandbox user (an unprivileged host uid) write the workspace while files keep their owner.
#pragma once

#include <sys/types.h>

#include <string>

#include "common/result.h"
#include "common/unique_fd.h"

namespace stockade::sandbox {

// Writes /proc/<pid>/{setgroups,uid_map,gid_map} mapping one id each: inside -> outside, and
// 0 -> root_outside as well when root_outside is not 0 (a privileged caller's, inside ids not
// 0). `deny_setgroups` is required for unprivileged callers (user_namespaces(7)).
Status write_id_maps(pid_t pid, uid_t inside_uid, uid_t outside_uid, gid_t inside_gid,
                     gid_t outside_gid, bool deny_setgroups, uid_t root_outside = 0);

// A user namespace (as an fd) whose maps send `disk` ids to `kernel` ids. Made with a
// short-lived child that never execs.
Result<UniqueFd> make_userns_fd(uid_t disk_uid, uid_t kernel_uid, gid_t disk_gid, gid_t kernel_gid);

// A detached copy (open_tree OPEN_TREE_CLONE, recursive) of the tree at `source`, or of the
// directory `source_fd` when it is not -1 (`source` then only names it in errors). Needs
// CAP_SYS_ADMIN over the caller's mount namespace.
Result<UniqueFd> detached_tree(const std::string& source, int source_fd);

// A detached copy of the tree at `source` (or of the directory `source_fd`, when it is not -1:
// `source` then only names it) in which files owned by the userns' inside ids appear owned by
// its outside ids (mount_setattr MOUNT_ATTR_IDMAP). Needs host root.
Result<UniqueFd> make_idmapped_tree(const std::string& source, int source_fd, int userns_fd);

}  // namespace stockade::sandbox
