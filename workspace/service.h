// The worker's side of the channel: read a request, run it on a Workspace, send the reply.
// The worker binary runs it inside the sandbox over its end of the socketpair:
//   ASSIGN_OR_RETURN(auto ws, LocalWorkspace::open(workspace_root, spill_root));
//   return serve_channel(3, ws);
#pragma once

#include "workspace/workspace.h"

namespace stockade::workspace {

// Serves requests on `fd` (a unix stream socket) until the supervisor closes it. The first
// request must be hello; any other first request gets a kFailedPrecondition reply. A request
// that does not decode gets an error reply when its id can be recovered; otherwise (and on
// any I/O error) the loop ends, since the stream can no longer be trusted.
// Returns 0 at a clean end of stream, 1 after a fatal channel error (logged). Single-threaded:
// one request at a time, in order. Does not close `fd`.
int serve_channel(int fd, Workspace& ws);

}  // namespace stockade::workspace
