// The launcher: turns a SandboxSpec into a running sandbox (DESIGN.md §4 and
// docs/sandbox-lifecycle.md, which follow launch() and child_main() step by step).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>

#include "common/result.h"
#include "common/unique_fd.h"
#include "sandbox/cgroup.h"
#include "sandbox/spec.h"

namespace stockade::sandbox {

// How the sandbox ended. `code` follows the shell: the command's exit status, or 128+N when
// signal N killed it.
struct ExitStatus {
    int code = 0;
    int signal = 0;  // the signal that killed the sandbox's init itself (0 if it exited)
};

// A running sandbox: owns its init's pidfd, the pseudo-terminal master and the cgroup leaf.
// Destroying it kills whatever is still running and reaps it.
// Where a launch failed: building the sandbox, or executing the command in a sandbox built.
enum class LaunchStage : uint8_t { kSetup, kExec };

class Sandbox {
public:
    Sandbox() = default;
    Sandbox(Sandbox&& other) noexcept;
    Sandbox& operator=(Sandbox&& other) noexcept;
    Sandbox(const Sandbox&) = delete;
    Sandbox& operator=(const Sandbox&) = delete;
    ~Sandbox();

    [[nodiscard]] pid_t pid() const noexcept { return pid_; }
    // Pollable: readable once the sandbox has exited.
    [[nodiscard]] int pidfd() const noexcept { return pidfd_.get(); }
    // The master side of the command's terminal (spec.tty), or an invalid fd.
    UniqueFd& terminal() noexcept { return terminal_; }
    // NetworkMode::kAllowlist: the listening socket on the sandbox's 127.0.0.1:proxy_port, for
    // the supervisor's proxy to accept on (non-blocking). Invalid in the other modes.
    UniqueFd& proxy_listener() noexcept { return proxy_listener_; }
    // spec.dns_socket with a network namespace of its own: the UDP socket on the sandbox's
    // 127.0.0.1:53, for the supervisor's resolver (network/dns_refuser.h). Invalid otherwise.
    UniqueFd& dns_socket() noexcept { return dns_socket_; }

    // Sends `sig` to the sandbox's init, which forwards it to the command.
    Status signal(int sig) const;
    // SIGKILL to init (the pid namespace dies with it) and to the cgroup.
    void kill() noexcept;
    // Blocks until the sandbox has exited and collects its status; without a pid namespace,
    // then kills and reaps what it left running.
    Result<ExitStatus> wait();
    // True when the cgroup saw an OOM kill.
    [[nodiscard]] bool oom_killed() const;

private:
    friend Result<Sandbox> launch(const SandboxSpec& spec, const CgroupSupport& cgroups,
                                  LaunchStage* failed_at);
    pid_t pid_ = -1;
    UniqueFd pidfd_;
    UniqueFd terminal_;
    UniqueFd proxy_listener_;
    UniqueFd dns_socket_;
    std::optional<CgroupLeaf> cgroup_;
    bool reaped_ = false;
    // No pid namespace: what the command leaves running is adopted by this process (a child
    // subreaper) and killed once the sandbox has ended.
    bool adopts_ = false;
};

// Starts the sandbox. Returns once the command has been exec'd (or failed to be: then the
// error names the step and the cause — code kNotFound / kPermissionDenied for a command that
// is missing or not executable). `cgroups` is what probe_cgroups() found; used at kFull. On
// failure, `failed_at` (when given) says whether the sandbox was built and only the command's
// exec failed: what a shell reports as 127 or 126.
Result<Sandbox> launch(const SandboxSpec& spec, const CgroupSupport& cgroups,
                       LaunchStage* failed_at = nullptr);

}  // namespace stockade::sandbox
