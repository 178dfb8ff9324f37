#include "runner/worker/worker_main.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/prctl.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "common/allocator.h"
#include "sandbox/spec.h"
#include "workspace/local_workspace.h"
#include "workspace/service.h"

namespace stockade::worker {

namespace {

constexpr int kChannelFd = 3;
// Where the carried ripgrep's fds are kept: above every fd rg's spawn puts them at (3 + 66 at
// most).
constexpr int kRgFdFloor = 128;
constexpr int kMaxRgFds = 66;

}  // namespace

int worker_main(const std::string& workspace_root, const std::string& spill_root, int rg_fd_count) {
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
    // The carried ripgrep, moved above the fds rg gets them at (LocalWorkspace::Options::
    // rg_fds) and closed to the commands.
    for (int i = 0; i < rg_fd_count; ++i) {
        const int fd = kChannelFd + 1 + i;
        const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, kRgFdFloor);
        if (high < 0) {
            fmt::print(stderr, "stockade worker: the carried ripgrep's fd {} is not open\n", fd);
            return 1;
        }
        ::close(fd);
        options.rg_fds.push_back(high);
    }
    // The launcher passes the commands' cgroup.procs after those when it made one.
    const int cgroup_fd = sandbox::kCommandsCgroupFd + rg_fd_count;
    struct statfs fs {};
    if (::fstatfs(cgroup_fd, &fs) == 0 &&
        (fs.f_type == CGROUP_SUPER_MAGIC || fs.f_type == CGROUP2_SUPER_MAGIC)) {
        options.commands_cgroup_fd = cgroup_fd;
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
    if ((argc != 4 && argc != 5) || std::string_view(argv[1]) != kWorkerVerb ||
        (argc == 5 && !std::string_view(argv[4]).starts_with(kRgFdsFlag))) {
        return false;
    }
    int rg_fds = 0;
    if (argc == 5) {
        const std::string_view flag = argv[4];
        const std::string_view count = flag.substr(kRgFdsFlag.size());
        const auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), rg_fds);
        if (count.empty() || ec != std::errc{} || end != count.data() + count.size() ||
            rg_fds < 1 || rg_fds > kMaxRgFds) {
            fmt::print(stderr, "stockade worker: unexpected argument \"{}\"\n", flag);
            *status = 2;
            return true;
        }
    }
    *status = worker_main(argv[2], argv[3], rg_fds);
    return true;
}

}  // namespace stockade::worker
