// The one way a sandbox starts from its configuration, for `stockade run` and for every
// session worker of `serve` and `call`:
//
//   1. the level: `config.isolation` resolved from the probes that need no child process
//      (namespaces, a new /proc, pivot_root and idmapped mounts taken as available: the launch
//      does all of those anyway, and probing them first cost a child process at every start);
//   2. the spec for that level and the caller (make_sandbox_spec);
//   3. at level landlock, a private /tmp in place of the host's (PrivateTmp);
//   4. the launch. A launch that fails before the command, at a level chosen without the full
//      probes, is followed by them: `auto` then falls back as doctor says it would, and the
//      launch is tried again at the level they give; a level that is missing says why.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"
#include "runner/session/private_tmp.h"
#include "runner/session/sandbox_config.h"
#include "sandbox/launcher.h"
#include "sandbox/spec.h"

namespace stockade::runner {

// Where start_sandbox failed; `stockade run` answers each with its own exit status.
enum class StartStage : uint8_t {
    kIsolation,  // the level asked for is missing on this host (kUnavailable, "... Fix: ...")
    kConfigure,  // the configuration cannot be launched at that level (kInvalidArgument)
    kSetup,      // building the sandbox failed
    kExec,       // the sandbox was built; its command is missing or cannot be executed
};

struct StartedSandbox {
    // At level landlock: the sandbox's /tmp, removed once the sandbox is gone (declared
    // first, so it outlives `box`).
    std::unique_ptr<PrivateTmp> private_tmp;
    sandbox::Sandbox box;
    sandbox::SandboxSpec spec;  // what was launched: spec.isolation is the level it runs at
    // `auto` chose a level below full: why the one above is missing. Empty otherwise.
    std::string shortfall;
};

struct StartOptions {
    // Names the private /tmp at level landlock: /tmp/stockade-<label>-XXXXXX.
    std::string label = "sandbox";
    // Called with the level and its shortfall just before each launch (run's warnings).
    std::function<void(sandbox::Isolation level, std::string_view shortfall)> before_launch{};
    // When start_sandbox fails: where.
    StartStage* failed_at = nullptr;
};

Result<StartedSandbox> start_sandbox(const SandboxConfig& config, const CallerContext& caller,
                                     const StartOptions& options = {});

}  // namespace stockade::runner
