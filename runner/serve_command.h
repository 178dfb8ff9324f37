// `stockade serve`: MCP over stdio for one session; `stockade call`: one tool call from the shell.
#pragma once

#include <string>

#include "runner/policy_setup.h"
#include "runner/run_command.h"

namespace stockade::runner {

struct ServeOptions {
    std::string workspace{};
    std::string state_dir{};
    std::string resume{};
    std::string process_log_cap{};    // --process-log-cap SIZE; empty: the default (8G)
    std::string output_budget{};      // --output-budget SIZE; empty: the default (512M)
    bool structured_content = false;  // --structured-content
    PolicyFlags policy{};
    RunOptions sandbox{};  // --isolation, --network, --memory, --pids, --cpu, --tmp-size
};

int serve_command(const ServeOptions& options);

// mallopt: large buffers are mmap'd, so they return to the kernel when freed (serve, worker).
void release_large_buffers_on_free();

struct CallOptions {
    std::string workspace{};
    std::string state_dir{};
    std::string resume{};
    std::string tool{};
    std::string arguments{};  // JSON object text
    bool json = false;        // print the whole result, not only the model-facing text
    std::string process_log_cap{};
    std::string output_budget{};
    PolicyFlags policy{};
    RunOptions sandbox{};
};

// Exit status: a bash call's own (128+N for signal N), else 0, or 1 for an isError result.
int call_command(const CallOptions& options);

}  // namespace stockade::runner
