// Thin, checked wrappers over the syscalls the host side uses. Nothing here is for the
// child-after-clone zone (sandbox/child.cc), which must not allocate.
#pragma once

#include <sys/types.h>

#include <cerrno>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/unique_fd.h"

namespace stockade {

// Retries `f` while it fails with EINTR.
template <class F>
auto retry_eintr(F f) -> decltype(f()) {
    decltype(f()) r;
    do {
        r = f();
    } while (r == -1 && errno == EINTR);
    return r;
}

// Reads a whole (small) file; refuses files larger than max_bytes.
Result<std::string> read_file(const std::string& path, size_t max_bytes = 1 << 20);
// Writes `content` to an existing file (a /proc or cgroup control file): open, write, close.
Status write_file(const std::string& path, std::string_view content);
// Writes every byte or fails.
Status write_all(int fd, std::string_view data);
// Reads until EOF or max_bytes.
Result<std::string> read_all(int fd, size_t max_bytes);

Result<UniqueFd> open_path(const std::string& path, int flags, mode_t mode = 0);
// Creates a pipe2/socketpair; both ends CLOEXEC.
struct FdPair {
    UniqueFd first;
    UniqueFd second;
};
Result<FdPair> make_pipe();
Result<FdPair> make_socketpair(int type);

// True when `path` exists (any type, symlinks not followed).
bool path_exists(const std::string& path) noexcept;
// mkdir -p for host-side configuration directories.
Status make_dirs(const std::string& path, mode_t mode);

// A privileged caller: euid 0 *and* CAP_SYS_ADMIN in its effective set. Root without it (a
// container's root, a capability-dropped service) cannot idmap mounts, lease host ids or manage
// cgroups the way a privileged supervisor does, so it is treated as an ordinary user.
bool privileged_caller() noexcept;

}  // namespace stockade
