// The worker's side of the channel: read a request, run it on a LocalWorkspace, send the reply.
// The worker binary runs it inside the sandbox over its end of the socketpair:
//   ASSIGN_OR_RETURN(auto ws, LocalWorkspace::open(workspace_root, spill_root));
//   return serve_channel(3, ws);  // the overload without a hook: it also reaps
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>

#include "workspace/local_workspace.h"

namespace stockade::workspace {

// Serves requests on `fd` (a unix stream socket) until the supervisor closes it. The first
// request must be hello; any other first request gets a kFailedPrecondition reply. A request
// that does not decode gets an error reply when its id can be recovered; otherwise (and on
// any I/O error) the loop ends, since the stream can no longer be trusted. Descriptors sent
// with a request are closed; a spawn reply carries the command's descriptors, which the worker
// closes once they are sent.
//
// Event-driven and single-threaded: one poll loop waits on the channel, the SIGCHLD signalfd
// and the pipes of the rg runs in flight. Every request but rg is served at once, in the order
// the requests came. rg is started (LocalWorkspace::start_rg) and the loop goes back to the
// channel; the rg reply goes out with its request's id when rg ends, so replies may leave in
// another order than the requests came (the supervisor matches them by id). At most
// kMaxRgRuns run at once; later ones wait in arrival order, and a request's timeout counts from
// its arrival, so one that waits past it is answered as timed out without running. At the end
// of the stream the runs still in flight are killed.
//
// `on_child_exit`, when set, reaps the worker's children: serve_channel blocks SIGCHLD in the
// calling thread (restored on return), waits on a signalfd for it next to the channel, and
// calls the hook whenever SIGCHLD arrives, even while no request comes, after every reply (a
// child that exits right after its spawn is not missed), and once the time the hook last
// returned has passed (nullopt: no such time). Where signalfd is unavailable, the hook also
// runs every kReapIntervalMs. For SIGCHLD to reach the signalfd, no other thread of the
// process may leave it unblocked (the worker is single-threaded).
//
// Returns 0 at a clean end of stream, 1 after a fatal channel error (logged). Does not close
// `fd`.
using ReapHook = std::function<std::optional<std::chrono::milliseconds>()>;
int serve_channel(int fd, LocalWorkspace& ws, ReapHook on_child_exit);
// The worker's loop: serve_channel with ws.reap_children() as the hook.
int serve_channel(int fd, LocalWorkspace& ws);

inline constexpr size_t kMaxRgRuns = 4;
inline constexpr int kReapIntervalMs = 500;

}  // namespace stockade::workspace
