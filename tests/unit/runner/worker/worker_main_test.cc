// The worker's argv contract: {"stockade-worker", "__worker", WORKSPACE, SPILL}, and on a stored
// image "--rg-fds=N" after them; nothing else.
#include "runner/worker/worker_main.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace stockade::worker {
namespace {

bool is_worker_argv(std::vector<std::string> args) {
    std::vector<char*> argv;
    for (std::string& arg : args) {
        argv.push_back(arg.data());
    }
    argv.push_back(nullptr);
    int status = -1;
    const bool ran = run_worker_if_asked(static_cast<int>(args.size()), argv.data(), &status);
    EXPECT_EQ(status, -1) << "status is left alone when the worker does not run";
    return ran;
}

TEST(WorkerMainTest, OnlyTheWorkersArgvRunsTheWorker) {
    EXPECT_FALSE(is_worker_argv({"stockade"}));
    EXPECT_FALSE(is_worker_argv({"stockade", "serve", "--workspace", "/w"}));
    EXPECT_FALSE(is_worker_argv({"stockade", "__worker", "/w"}));
    EXPECT_FALSE(is_worker_argv({"stockade", "__worker", "/w", "/s", "extra"}));
    EXPECT_FALSE(is_worker_argv({"stockade", "__workers", "/w", "/s"}));
    EXPECT_EQ(kWorkerVerb, "__worker") << "ps and the e2e tests know the worker by it";
}

// A worker asked to take a carried rg it cannot count exits 2 before it serves anything.
TEST(WorkerMainTest, ACarriedRgNeedsACountItCanUse) {
    for (std::string flag :
         {"--rg-fds=", "--rg-fds=0", "--rg-fds=x", "--rg-fds=1x", "--rg-fds=67"}) {
        std::vector<std::string> args = {"stockade", "__worker", "/w", "/s", flag};
        std::vector<char*> argv;
        for (std::string& arg : args) {
            argv.push_back(arg.data());
        }
        argv.push_back(nullptr);
        int status = -1;
        EXPECT_TRUE(run_worker_if_asked(5, argv.data(), &status)) << flag;
        EXPECT_EQ(status, 2) << flag;
    }
}

}  // namespace
}  // namespace stockade::worker
