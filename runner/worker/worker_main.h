// The session worker's entry: what runs as pid 1 of a session's sandbox and serves the
// supervisor's channel (DESIGN.md §1). It is its own executable, stockade-worker, linked
// static-pie so that it needs nothing of the sandbox's root (no dynamic loader, no libc):
// the supervisor carries it inside the stockade binary and executes it from a sealed memfd
// (runner/session/worker_binary.h).
//
// The contract with the launcher: argv is {"stockade-worker", kWorkerVerb, WORKSPACE, SPILL}
// and, on a stored image, a fifth "--rg-fds=N"; fd 3 is the channel; fds 4 to 3+N are a
// ripgrep carried in by descriptor (runner/session/rg_bundle.h: loader, rg, libraries, or a
// static rg alone); the next fd, when the sandbox has one, is the commands' cgroup.procs
// (sandbox::kCommandsCgroupFd when N is 0).
#pragma once

#include <string>
#include <string_view>

namespace stockade::worker {

// The hidden verb: argv[1] of every worker (the stockade binary answers it too, for builds
// without an embedded worker; `ps` and the e2e tests know the worker by it).
inline constexpr std::string_view kWorkerVerb = "__worker";
inline constexpr std::string_view kRgFdsFlag = "--rg-fds=";

// Serves the channel on fd 3 until the supervisor closes it; returns the exit status.
int worker_main(const std::string& workspace_root, const std::string& spill_root, int rg_fd_count);

// main() of a binary that may be run as the worker: when argv is the worker's, sets up
// logging, runs worker_main and returns true with its status in *status.
bool run_worker_if_asked(int argc, char** argv, int* status);

}  // namespace stockade::worker
