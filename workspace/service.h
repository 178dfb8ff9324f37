// The worker's side of the channel: read a request, run it on a Workspace, send the reply.
// The worker binary runs it inside the sandbox over its end of the socketpair:
//   ASSIGN_OR_RETURN(auto ws, LocalWorkspace::open(workspace_root, spill_root));
//   return serve_channel(3, ws);  // the LocalWorkspace overload: it also reaps
#pragma once

#include <chrono>
#include <functional>
#include <optional>

#include "workspace/local_workspace.h"
#include "workspace/workspace.h"

namespace stockade::workspace {

// Serves requests on `fd` (a unix stream socket) until the supervisor closes it. The first
// request must be hello; any other first request gets a kFailedPrecondition reply. A request
// that does not decode gets an error reply when its id can be recovered; otherwise (and on
// any I/O error) the loop ends, since the stream can no longer be trusted. Descriptors sent
// with a request are closed; a spawn reply carries the command's descriptors, which the worker
// closes once they are sent.
//
// `on_child_exit`, when set, reaps the worker's children: serve_channel blocks SIGCHLD in the
// calling thread (restored on return), waits on a signalfd for it next to the channel, and
// calls the hook whenever SIGCHLD arrives, even while no request comes, after every request (a
// child that exits right after its spawn is not missed), and once the time the hook last
// returned has passed (nullopt: no such time). Where signalfd is unavailable, the hook also
// runs every kReapIntervalMs. For SIGCHLD to reach the signalfd, no other thread of the
// process may leave it unblocked (the worker is single-threaded).
//
// Returns 0 at a clean end of stream, 1 after a fatal channel error (logged). Single-threaded:
// one request at a time, in order. Does not close `fd`.
using ReapHook = std::function<std::optional<std::chrono::milliseconds>()>;
int serve_channel(int fd, Workspace& ws, ReapHook on_child_exit = {});
// The worker's loop: serve_channel with ws.reap_children() as the hook.
int serve_channel(int fd, LocalWorkspace& ws);

inline constexpr int kReapIntervalMs = 500;

}  // namespace stockade::workspace
