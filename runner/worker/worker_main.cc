#include "runner/worker/worker_main.h"

#include <linux/magic.h>
#include <sys/prctl.h>
#include <sys/statfs.h>

#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "common/allocator.h"
#include "common/log.h"
#include "sandbox/spec.h"
#include "workspace/local_workspace.h"
#include "workspace/service.h"

namespace stockade::worker {

namespace {

constexpr int kChannelFd = 3;

}  // namespace

int worker_main(const std::string& workspace_root, const std::string& spill_root) {
    // Nothing else in the sandbox may ptrace the worker, read its memory or take its fds.
    (void)::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    // What a command leaves running comes here to be stopped: as pid 1 of the sandbox's pid
    // namespace it would anyway; at levels without one, only as a subreaper.
    (void)::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    // `ps` shows this rather than the memfd's name ("memfd:stockade-").
    (void)::prctl(PR_SET_NAME, "stockade-worker", 0, 0, 0);
    release_large_buffers_on_free();
    workspace::LocalWorkspace::Options options;
    options.stop_leftovers = true;  // pid 1: every orphan of the sandbox comes here
    // The launcher passes the commands' cgroup.procs after the channel when it made one.
    struct statfs fs {};
    if (::fstatfs(sandbox::kCommandsCgroupFd, &fs) == 0 &&
        (fs.f_type == CGROUP_SUPER_MAGIC || fs.f_type == CGROUP2_SUPER_MAGIC)) {
        options.commands_cgroup_fd = sandbox::kCommandsCgroupFd;
    }
    const char* path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe): single-threaded
    if (path != nullptr) {
        options.path_env = path;
    }
    auto ws = workspace::LocalWorkspace::open(workspace_root, spill_root, options);
    if (!ws) {
        fmt::print(stderr, "stockade worker: {}\n", ws.error().message);
        return 1;
    }
    return workspace::serve_channel(kChannelFd, *ws);
}

bool run_worker_if_asked(int argc, char** argv, int* status) {
    if (argc != 4 || std::string_view(argv[1]) != kWorkerVerb) {
        return false;
    }
    log::init("warn");
    *status = worker_main(argv[2], argv[3]);
    return true;
}

}  // namespace stockade::worker
