// The session worker's binary, as the supervisor executes it in each session's sandbox
// (execveat(fd, "", AT_EMPTY_PATH): it need not be in the sandbox's root).
//
// Normal builds carry stockade-worker (runner/worker/), linked static-pie and stripped of its
// debug info, inside the stockade binary (worker_blob.S.in). The first session of a process
// copies it into a memfd and seals it (no write, shrink or grow, no more seals, whoever holds
// the descriptor); every later one executes the same descriptor. The worker then needs nothing
// of the sandbox's root: an image may hold no dynamic loader and no libc.
//
// A memfd executes at every level: in a mount namespace after pivot_root (the memfd is on the
// kernel's internal shmem mount, which no mount namespace hides or marks noexec), and under
// Landlock, which takes no rule for it (EBADFD) and needs none: Landlock does not restrict
// files of no user-visible filesystem (sandbox/landlock.cc).
//
// Fallback: stockade itself (/proc/self/exe, which answers the worker's verb too), when there
// is no embedded worker or no executable memfd:
//   - sanitized and fuzzing builds (STOCKADE_SANITIZE, STOCKADE_FUZZ) do not embed one: the
//     sanitizer runtimes cannot be linked into a static-pie;
//   - a host whose vm.memfd_noexec is 2 refuses executable memfds (EACCES); a warning says so.
// That binary needs the host's loader and libraries in the sandbox's root (the host image has
// them; without them the worker does not start: "command \"stockade-worker\" not found in the
// sandbox image", the kernel's ENOENT for the missing loader).
#pragma once

#include <cstddef>
#include <span>

#include "common/result.h"
#include "common/unique_fd.h"

namespace stockade::runner {

struct WorkerBinary {
    int fd = -1;            // open for the rest of the process: never close it
    bool embedded = false;  // the sealed static worker; false: /proc/self/exe
};

// Thread-safe; creates the memfd on the first call that succeeds (a failure is not kept: the
// next call tries again) and returns the same descriptor ever after.
Result<WorkerBinary> worker_binary();

// A memfd named `name` holding `bytes`, executable where the host allows it, sealed against
// writes, shrinking, growing and further seals (close-on-exec).
Result<UniqueFd> make_sealed_memfd(const char* name, std::span<const std::byte> bytes);

// The embedded worker's bytes (empty in a build without one).
std::span<const std::byte> embedded_worker_elf() noexcept;

}  // namespace stockade::runner
