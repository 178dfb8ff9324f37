// `stockade run [options] -- CMD [ARGS...]`: one command in a sandbox, bwrap-style.
#pragma once

#include <string_view>

#include "runner/cli/sandbox_flags.h"

namespace stockade::runner {

// Runs the command; returns the process exit code (runner/cli/exit_codes.h).
int run_command(const RunOptions& options);

// What run_command does once its flags are a config: the network proxy (`network_flags` are
// its rules, at --network allowlist), the sandbox, the terminal. `label` begins each message
// ("run" prints "stockade run: …"). `stockade image build` runs its steps through it.
int run_config(SandboxConfig config, const PolicyFlags& network_flags, std::string_view label);

}  // namespace stockade::runner
