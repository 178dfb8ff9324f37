// The session worker needs nothing of its sandbox's root: a session whose image holds no dynamic
// loader and no libc (no /usr, /lib*, /bin: an image of busybox-static, or of nothing) still
// gets a worker that answers, at every level with isolation: in a mount namespace (full,
// namespaces) the root has none of them; at level landlock the host's are there but not
// readable. The worker is the embedded static stockade-worker, executed from its sealed memfd
// (runner/session/worker_binary.h).
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/host_dir.h"
#include "runner/session/session_worker.h"
#include "runner/session/worker_binary.h"
#include "sandbox/spec.h"
#include "tests/testing/matchers.h"
#include "tests/testing/sandbox_harness.h"

namespace stockade::testing {
namespace {

class WorkerRootTest : public ::testing::TestWithParam<sandbox::Isolation> {
protected:
    // A worker on workspace_ at the level under test, with nothing else in its sandbox.
    runner::WorkerConfig worker_config() const {
        runner::WorkerConfig config;
        config.workspace = workspace_.path();
        config.sandbox.workspace = HostDir::open(workspace_.path()).value();
        config.sandbox.workspace_uid = ::geteuid();
        config.sandbox.workspace_gid = ::getegid();
        config.spill = HostDir::open(spill_.path()).value();
        config.sandbox.isolation = GetParam();
        config.sandbox.network = sandbox::NetworkMode::kNone;
        return config;
    }

    TempDir workspace_{"stockade-worker-root-ws"};
    TempDir spill_{"stockade-worker-root-spill"};
};

TEST_P(WorkerRootTest, AWorkerInARootWithoutADynamicLoaderAnswersARead) {
    auto binary = runner::worker_binary();
    ASSERT_THAT(binary, IsOk());
    if (!binary->embedded) {
        GTEST_SKIP() << "no embedded worker in this build (STOCKADE_SANITIZE or STOCKADE_FUZZ), "
                        "or executable memfds are refused here: the worker is stockade itself, "
                        "which needs the host's loader";
    }
    workspace_.write_file("a.txt", "alpha\n");
    runner::WorkerConfig config = worker_config();
    // An image of nothing: no binds, nothing readable but what every sandbox gets.
    config.sandbox.image = images::Image{.name = "empty"};
    runner::SessionWorker worker(config, nullptr);
    Status started = worker.start();
    if (!started && started.error().code == Errc::kUnavailable) {
        GTEST_SKIP() << "isolation level " << sandbox::isolation_name(GetParam())
                     << " is missing here: " << started.error().message;
    }
    ASSERT_THAT(started, IsOk());
    auto read = worker.read(workspace::Root::kWorkspace, "a.txt", 1024);
    ASSERT_THAT(read, IsOk());
    EXPECT_EQ(read->bytes, "alpha\n");
    worker.stop();
}

// A supervisor that holds a thousand descriptors (a server with a hundred sessions) hands its
// sandboxes descriptors numbered where the child parks its report socket and its executable
// (1000, 1001): each must still reach the worker as itself. When the worker's cgroup.procs
// was parked over, the worker got the report socket in its place, and the launch waited for
// that socket's end forever.
TEST_P(WorkerRootTest, AWorkerStartsWhateverNumbersTheSupervisorsDescriptorsHave) {
    rlimit nofile{};
    ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &nofile), 0);
    if (nofile.rlim_max < 1200) {
        GTEST_SKIP() << "RLIMIT_NOFILE's hard limit is " << nofile.rlim_max << ", below 1200";
    }
    const rlimit raised{std::max<rlim_t>(nofile.rlim_cur, 1200), nofile.rlim_max};
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &raised), 0);
    workspace_.write_file("a.txt", "alpha\n");
    const runner::WorkerConfig config = worker_config();
    // Fill the table so that the launch's own descriptors start at each number from 990 to
    // 1001: between them, every descriptor a launch makes is once at 1000 and once at 1001.
    std::vector<UniqueFd> filler;
    for (int first_free = 990; first_free <= 1001; ++first_free) {
        while (true) {
            UniqueFd probe(::open("/dev/null", O_RDONLY | O_CLOEXEC));
            ASSERT_TRUE(probe.valid());
            if (probe.get() >= first_free) {
                break;  // closed: the launch gets this number first
            }
            filler.push_back(std::move(probe));
        }
        runner::SessionWorker worker(config, nullptr);
        Status started = worker.start();
        if (!started && started.error().code == Errc::kUnavailable) {
            GTEST_SKIP() << "isolation level " << sandbox::isolation_name(GetParam())
                         << " is missing here: " << started.error().message;
        }
        ASSERT_THAT(started, IsOk()) << "first free descriptor " << first_free;
        auto read = worker.read(workspace::Root::kWorkspace, "a.txt", 1024);
        ASSERT_THAT(read, IsOk()) << "first free descriptor " << first_free;
        EXPECT_EQ(read->bytes, "alpha\n");
        worker.stop();
    }
    filler.clear();
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &nofile), 0);
}

INSTANTIATE_TEST_SUITE_P(Levels, WorkerRootTest,
                         ::testing::Values(sandbox::Isolation::kFull,
                                           sandbox::Isolation::kNamespaces,
                                           sandbox::Isolation::kLandlock),
                         [](const ::testing::TestParamInfo<sandbox::Isolation>& param) {
                             return std::string(sandbox::isolation_name(param.param));
                         });

}  // namespace
}  // namespace stockade::testing
