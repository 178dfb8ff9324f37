// Host ids for sessions. A root supervisor gives each session's sandbox a host uid of its own
// (and the same number as gid), so that what one session takes of the per-user kernel counts
// (inotify, queued signals, processes, namespaces) is never another's: a lease on one id of a
// range, held by an flock on <lock_dir>/<id>.lock for as long as the session lives, and so
// shared by every supervisor of the host that uses the same lock directory.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/unique_fd.h"

namespace stockade::runner {

// The range sessions draw from by default: above the id `stockade run` uses.
inline constexpr uid_t kSessionHostIdFirst = 1879048193;  // 0x70000001
inline constexpr uid_t kSessionHostIdCount = 65536;
inline constexpr const char* kHostIdLockDir = "/run/stockade/host-ids";

class HostIdLease {
public:
    HostIdLease() = default;
    HostIdLease(uid_t id, UniqueFd lock) : id_(id), lock_(std::move(lock)) {}
    [[nodiscard]] uid_t id() const { return id_; }
    [[nodiscard]] bool held() const { return static_cast<bool>(lock_); }

private:
    uid_t id_ = 0;
    UniqueFd lock_;  // the flock; closing it releases the id
};

struct HostIdRange {
    uid_t first = kSessionHostIdFirst;
    uid_t count = kSessionHostIdCount;

    [[nodiscard]] uid_t last() const noexcept { return first + (count - 1); }
    bool operator==(const HostIdRange&) const = default;
};
// "FIRST-LAST", as parse_host_id_range reads it.
std::string host_id_range_text(const HostIdRange& range);
// "FIRST-LAST" (inclusive, both above 0 and below 2^32-1); empty: the default range.
// kInvalidArgument with the fix for anything else.
Result<HostIdRange> parse_host_id_range(std::string_view text);

// The ids a root caller may hand its sandboxes when it runs inside a user namespace that maps
// fewer than all of them (a container's: rootless podman, Kubernetes' hostUsers: false, `unshare
// --map-root-user`): the host ids above are then outside its map, and the kernel refuses to map
// a sandbox's user to them. Read from the texts of /proc/self/uid_map and gid_map:
//   nullopt   the caller's namespace maps every id (the initial one), or a map is empty (no
//             /proc to read): the defaults above hold;
//   a range   the upper half of the largest run of ids mapped in both, below 65534 (nobody):
//             "0 200000 65536" gives 32767-65533, ids the container's own users are unlikely
//             to run as;
//   count 0   too few ids are mapped to spare three (one for `run`, one for a stored image's
//             root, one for a session): the caller runs its sandboxes as itself.
// kInvalidArgument for a text that is not a map.
Result<std::optional<HostIdRange>> ids_inside_own_map(std::string_view uid_map,
                                                      std::string_view gid_map);
// The same for this process.
std::optional<HostIdRange> ids_inside_own_map();

// The first id of [first, first + count) that no live lease holds. kResourceExhausted when
// every one is taken; the lock directory is created (0700) when missing.
Result<HostIdLease> lease_host_id(uid_t first, uid_t count, const std::string& lock_dir);

}  // namespace stockade::runner
