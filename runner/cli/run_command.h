// `stockade run [options] -- CMD [ARGS...]`: one command in a sandbox, bwrap-style.
#pragma once

#include "runner/cli/sandbox_flags.h"

namespace stockade::runner {

// Runs the command; returns the process exit code (runner/cli/exit_codes.h).
int run_command(const RunOptions& options);

}  // namespace stockade::runner
