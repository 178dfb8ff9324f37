// `stockade run`'s flags into a spec, as run_command does: parse_run_flags, then
// make_sandbox_spec at the level asked for (auto: full, what a capable host gives). For the
// tests of run's flags that need no host.
#pragma once

#include "common/result.h"
#include "runner/cli/run_command.h"
#include "runner/session/sandbox_config.h"

namespace stockade::testing {

inline Result<sandbox::SandboxSpec> build_run_spec(const runner::RunOptions& flags,
                                                   const runner::CallerContext& caller) {
    ASSIGN_OR_RETURN(runner::ParsedFlags parsed, runner::parse_run_flags(flags, caller));
    const sandbox::Isolation level = parsed.config.isolation == sandbox::Isolation::kAuto
                                         ? sandbox::Isolation::kFull
                                         : parsed.config.isolation;
    return runner::make_sandbox_spec(parsed.config, caller, level);
}

}  // namespace stockade::testing
