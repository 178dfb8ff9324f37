// The worker's argv contract: {"stockade-worker", "__worker", WORKSPACE, SPILL}, nothing else.
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

}  // namespace
}  // namespace stockade::worker
