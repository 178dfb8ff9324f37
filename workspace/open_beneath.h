// open_beneath: opens a root-relative path so that it can only ever resolve beneath the root's
// descriptor. openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) where the kernel has it (5.6+);
// elsewhere a component-by-component walk with O_NOFOLLOW that follows symlinks itself and
// refuses any that would leave the root (crun's safe_openat).
//
// Both report the same errnos: EXDEV when a symlink is absolute or climbs above the root,
// ELOOP for more than 40 symlinks (or a magic link), and the usual ENOENT/ENOTDIR/EACCES.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/unique_fd.h"

namespace stockade::workspace {

enum class ResolveMode : uint8_t {
    kAuto,     // openat2; the walk once openat2 has returned ENOSYS
    kOpenat2,  // openat2 only (fails with ENOSYS where the kernel lacks it)
    kWalk,     // the fallback walk only (tests, and kernels without openat2)
};

// A normalised root-relative path: "" (the root), or components separated by single '/',
// none empty, "." or "..", no NUL, at most PATH_MAX bytes. kInvalidArgument otherwise.
Status check_relative_path(std::string_view path);

// Opens `path` (which passed check_relative_path) beneath `root_fd` with `flags` (| O_CLOEXEC;
// O_CREAT is not supported). Symlinks, the last one included, are followed while they stay
// beneath the root, unless `flags` has O_NOFOLLOW. The error's sys_errno is the cause.
Result<UniqueFd> open_beneath(int root_fd, const std::string& path, int flags,
                              ResolveMode mode = ResolveMode::kAuto);

}  // namespace stockade::workspace
