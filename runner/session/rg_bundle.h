// grep and glob run ripgrep inside the sandbox. The host image has the host's rg on its PATH.
// A stored image may have none, or no libc to run one (an image of busybox-static), or a
// version whose output the tools do not read the same way; so a session on a stored image
// gets the host's rg carried in by descriptor, as the worker is (worker_binary.h), and never
// runs the image's.
//
// The bundle is the host's dynamic loader (rg's PT_INTERP), rg, and every shared library the
// loader resolves for it (`LOADER --list RG`, run once with an empty environment), each
// copied into a sealed memfd. The worker gets them as its fds after the channel and runs
//   LOADER --argv0 rg --preload "/proc/self/fd/L1 /proc/self/fd/L2 …" /proc/self/fd/RG ARGS
// with those memfds as rg's fds 3, 4, …: the loader maps each preloaded library and then
// finds every DT_NEEDED name among them by soname, so it looks nothing up in the image. A
// memfd is on the kernel's internal shmem mount: no mount namespace hides it and Landlock
// lets it be opened and executed (worker_binary.h). The image sees none of these files by
// path.
//
// Made once per process, by the first session on a stored image, and shared by every later
// one (Debian 12: about 8 MiB of shared memory, counted once). Only files of the host's own
// root are read, by paths no sandbox or tenant can influence: rg from the supervisor's PATH
// (absolute entries), the loader and libraries where the loader says they are.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace stockade::runner {

// The bundle's descriptors, in the order the worker takes them: loader, rg, libraries; or rg
// alone where the host's is linked statically.
// Thread-safe; made on the first call that succeeds (a failure is not kept) and open for the
// rest of the process. kUnavailable with the reason when the host has no rg.
Result<std::vector<int>> rg_bundle_fds();

// Pure pieces, exposed for tests.

// The PT_INTERP path of an ELF executable ("" for a static one); kInvalidArgument for bytes
// that are not a 64-bit little-endian ELF file or whose program headers point outside them.
Result<std::string> elf_interpreter(std::span<const std::byte> elf);

// The libraries in the output of `LOADER --list PROGRAM`: the path after each "NAME => PATH
// (ADDRESS)", in order. The vDSO and the loader's own line have no "=>" and are left out; a
// library the loader could not find ("=> not found") fails with its name.
Result<std::vector<std::string>> parse_loader_list(std::string_view out);

}  // namespace stockade::runner
