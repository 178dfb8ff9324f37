#include "runner/cli/run_command.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "common/log.h"
#include "common/parse.h"
#include "common/syscall.h"
#include "images/image.h"
#include "runner/cli/exit_codes.h"
#include "runner/session/isolation.h"
#include "runner/session/policy_enforcement.h"
#include "runner/session/private_tmp.h"
#include "runner/session/sandbox_network.h"
#include "runner/session/terminal.h"
#include "sandbox/cgroup.h"
#include "sandbox/launcher.h"
#include "tools/process_output.h"

namespace stockade::runner {
namespace {

using sandbox::Isolation;
using sandbox::NetworkMode;
using sandbox::SandboxSpec;

// Relays the terminal, forwards signals, enforces the timeout; returns the exit code.
int supervise(sandbox::Sandbox& box, const SandboxSpec& spec) {
    auto log = log::get("runner");
    sigset_t handled;
    ::sigemptyset(&handled);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH}) {
        ::sigaddset(&handled, sig);
    }
    // Blocked before launch by run_command; read here through a signalfd.
    UniqueFd sigfd(::signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK));

    int master = box.terminal().get();
    const bool input_tty = spec.tty_fds[0];
    const int out_fd = spec.tty_fds[1] ? 1 : 2;
    std::optional<RawMode> raw;
    if (master >= 0) {
        if (input_tty) {
            raw.emplace(0);
        }
        copy_window_size(spec.tty_fds[0] ? 0 : out_fd, master);
    }
    bool stdin_open = master >= 0 && input_tty;
    bool master_open = master >= 0;

    using Clock = std::chrono::steady_clock;
    std::optional<Clock::time_point> deadline;
    if (spec.timeout) {
        deadline = Clock::now() + *spec.timeout;
    }
    bool timed_out = false;
    bool exited = false;
    char buf[65536];
    while (!exited || master_open) {
        pollfd fds[4];
        nfds_t n = 0;
        fds[n++] = pollfd{box.pidfd(), POLLIN, 0};
        fds[n++] = pollfd{sigfd.get(), POLLIN, 0};
        int master_slot = -1;
        int stdin_slot = -1;
        if (master_open) {
            master_slot = static_cast<int>(n);
            fds[n++] = pollfd{master, POLLIN, 0};
        }
        if (stdin_open && !exited) {
            stdin_slot = static_cast<int>(n);
            fds[n++] = pollfd{0, POLLIN, 0};
        }
        int wait_ms = -1;
        if (exited) {
            wait_ms = 0;  // drain what the terminal still holds, then stop
        } else if (deadline) {
            auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now());
            wait_ms = static_cast<int>(std::max<int64_t>(0, left.count()));
        }
        int ready = ::poll(fds, n, wait_ms);
        if (ready < 0 && errno != EINTR) {
            SPDLOG_LOGGER_ERROR(log, "poll failed: {}", errno_string(errno));
            box.kill();
            break;
        }
        if (ready == 0) {
            if (exited) {
                break;
            }
            if (deadline && Clock::now() >= *deadline) {
                timed_out = true;
                box.kill();
                deadline.reset();
            }
            continue;
        }
        if ((fds[0].revents & POLLIN) != 0) {
            exited = true;
        }
        if ((fds[1].revents & POLLIN) != 0) {
            signalfd_siginfo si{};
            while (::read(sigfd.get(), &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
                if (si.ssi_signo == SIGWINCH && master >= 0) {
                    copy_window_size(spec.tty_fds[0] ? 0 : out_fd, master);
                } else if (si.ssi_signo != SIGWINCH) {
                    (void)box.signal(static_cast<int>(si.ssi_signo));
                }
            }
        }
        if (master_slot >= 0 && fds[master_slot].revents != 0) {
            ssize_t got = ::read(master, buf, sizeof buf);
            if (got > 0) {
                if (!write_all(out_fd, std::string_view(buf, static_cast<size_t>(got)))) {
                    master_open = false;
                }
            } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
                master_open = false;  // EIO: every slave descriptor is closed
            }
        } else if (exited && master_slot >= 0) {
            master_open = false;
        }
        if (stdin_slot >= 0 && fds[stdin_slot].revents != 0) {
            ssize_t got = ::read(0, buf, sizeof buf);
            if (got > 0) {
                (void)write_all(master, std::string_view(buf, static_cast<size_t>(got)));
            } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
                stdin_open = false;
            }
        }
    }
    raw.reset();
    auto status = box.wait();
    if (!status) {
        fmt::print(stderr, "stockade run: {}\n", status.error().message);
        return kExitSetupFailed;
    }
    if (timed_out) {
        fmt::print(stderr, "stockade run: command timed out after {} and was killed\n",
                   fmt::format("{:.3g}s", static_cast<double>(spec.timeout->count()) / 1000.0));
        return kExitTimeout;
    }
    if (status->code == 128 + SIGKILL && box.oom_killed()) {
        fmt::print(
            stderr,
            "stockade run: the command was killed for exceeding its memory limit ({} bytes); "
            "raise --memory\n",
            spec.limits.memory_bytes.value_or(0));
    }
    return status->code;
}

}  // namespace

int run_command(const RunOptions& flags) {
    auto log = log::get("runner");
    const CallerContext caller = current_caller();
    auto parsed = parse_run_flags(flags, caller);
    if (!parsed) {
        fmt::print(stderr, "stockade run: {}\n", parsed.error().message);
        return kExitUsage;
    }
    for (const std::string& warning : parsed->warnings) {
        fmt::print(stderr, "stockade run: warning: {}\n", warning);
    }
    SandboxConfig config = std::move(parsed->config);
    if (!flags.writable_git) {
        // As serve does: nothing the command does may plant a hook for the host's git. Best
        // effort at levels without a mount namespace, unless paths were asked for explicitly.
        std::vector<std::string> notes;
        std::vector<std::string> git = git_metadata_paths(config.workspace, notes);
        config.path_rules_best_effort =
            config.masked_paths.empty() && config.read_only_paths.empty();
        config.read_only_paths.insert(config.read_only_paths.end(), git.begin(), git.end());
        for (const std::string& note : notes) {
            SPDLOG_LOGGER_WARN(log, "{}", note);
        }
    }
    // The level is first chosen from the probes that need no child process, with namespaces, a
    // new /proc, pivot_root and idmapped mounts taken as available: the launch does all of those
    // anyway, and probing them first cost a child process at every start (2.3 ms here,
    // bench/phases). They are probed only when that launch fails: `auto` then falls back as it
    // does for serve and doctor, and a level that is missing says why (exit 77).
    auto resolved = resolve_isolation_without_children(config.isolation);
    bool probed = false;
    if (!resolved) {
        resolved = resolve_isolation(config.isolation);
        probed = true;
    }
    if (!resolved) {
        fmt::print(stderr, "stockade run: {}\n", resolved.error().message);
        return kExitUnavailable;
    }

    // --network allowlist: the proxy and the rules it decides by, before anything runs. A
    // proxy that cannot start ends the run: never a silent fall back to no network or the host's.
    std::unique_ptr<policy::Policy> network_policy;
    std::unique_ptr<SandboxNetwork> network;
    if (config.network == NetworkMode::kAllowlist) {
        auto rules = parse_policy_flags(flags.network_policy);
        if (!rules) {
            fmt::print(stderr, "stockade run: {}\n", rules.error().message);
            return kExitUsage;
        }
        rules->mode = policy::Mode::kCi;  // nobody to ask: what no rule allows is refused
        std::vector<std::string> warnings;
        auto loaded = load_policy(*rules, config.workspace, warnings);
        if (!loaded) {
            fmt::print(stderr, "stockade run: {}\n", loaded.error().message);
            return kExitUsage;
        }
        for (const std::string& warning : warnings) {
            fmt::print(stderr, "stockade run: warning: policy: {}\n", warning);
        }
        network_policy = std::make_unique<policy::Policy>(std::move(loaded).value());
        if (auto pinned = add_settings_pins(*network_policy, config.network_pins); !pinned) {
            fmt::print(stderr, "stockade run: {}\n", pinned.error().message);
            return kExitUsage;
        }
        auto started = SandboxNetwork::start(
            SandboxNetworkConfig{.policy = network_policy.get(),
                                 .pins = config.network_pins,
                                 .max_connections = config.network_max_connections,
                                 .bytes_per_second = config.network_bytes_per_second});
        if (!started) {
            fmt::print(stderr, "stockade run: {}\n", started.error().message);
            return kExitSetupFailed;
        }
        network = std::move(started).value();
    }

    // Signals we relay are blocked before the sandbox exists, so none is lost in between; the
    // child restores its own mask.
    sigset_t handled;
    ::sigemptyset(&handled);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH}) {
        ::sigaddset(&handled, sig);
    }
    ::sigprocmask(SIG_BLOCK, &handled, nullptr);
    (void)::signal(SIGPIPE, SIG_IGN);

    for (;;) {
        if (resolved->level == Isolation::kLandlock && !resolved->shortfall.empty()) {
            // A degraded mode: no mount view, no pid or network namespace. Say so, and why.
            fmt::print(stderr, "stockade run: warning: {}; --isolation auto falls back to \"{}\"\n",
                       resolved->shortfall, sandbox::isolation_name(resolved->level));
        } else if (!resolved->shortfall.empty()) {
            SPDLOG_LOGGER_DEBUG(log, "isolation={} shortfall=\"{}\"",
                                sandbox::isolation_name(resolved->level), resolved->shortfall);
        }
        auto built = make_sandbox_spec(config, caller, resolved->level);
        if (!built) {
            fmt::print(stderr, "stockade run: {}\n", built.error().message);
            return kExitUsage;
        }
        SandboxSpec spec = std::move(built).value();
        PrivateTmp private_tmp("run");
        if (spec.isolation == Isolation::kLandlock) {
            if (auto applied = private_tmp.apply(spec); !applied) {
                fmt::print(stderr, "stockade run: {}\n", applied.error().message);
                return kExitSetupFailed;
            }
        }
        if (spec.isolation == Isolation::kNone) {
            fmt::print(stderr,
                       "stockade run: WARNING: --isolation none: the command runs WITHOUT a "
                       "sandbox (development only)\n");
        }

        if (network) {
            for (const std::string& entry : network->command_env("run")) {
                const size_t eq = entry.find('=');
                set_env(spec.env, entry.substr(0, eq), entry.substr(eq + 1));
            }
        }

        auto box = sandbox::launch(spec, resolved->cgroups);
        if (box) {
            SPDLOG_LOGGER_DEBUG(log, "sandbox started pid={} isolation={}", box->pid(),
                                sandbox::isolation_name(spec.isolation));
            if (network) {
                network->serve(std::move(box->proxy_listener()));
            }
            const int status = supervise(*box, spec);
            if (network) {
                // What the command could not reach, where the person or job running it sees it.
                if (const std::string line = tools::network_refusals_line(network->all_refusals());
                    !line.empty()) {
                    fmt::print(stderr, "stockade run: {}\n", line);
                }
            }
            return status;
        }
        if (!probed) {
            // Nothing ran yet (a failed launch stops before the command). Probe for real.
            probed = true;
            auto checked = resolve_isolation(config.isolation);
            if (!checked) {
                fmt::print(stderr, "stockade run: {}\n", checked.error().message);
                return kExitUnavailable;
            }
            if (checked->level != resolved->level) {
                SPDLOG_LOGGER_DEBUG(log, "launch failed isolation={} why=\"{}\" probed={}",
                                    sandbox::isolation_name(resolved->level), box.error().message,
                                    sandbox::isolation_name(checked->level));
                resolved = std::move(checked);
                continue;
            }
        }
        const Error& error = box.error();
        fmt::print(stderr, "stockade run: {}\n", error.message);
        switch (error.code) {
            case Errc::kNotFound:
                return kExitNotFound;
            case Errc::kPermissionDenied:
                return error.message.rfind("command", 0) == 0 ? kExitNotExecutable
                                                              : kExitSetupFailed;
            case Errc::kUnavailable:
                return kExitUnavailable;
            default:
                return kExitSetupFailed;
        }
    }
}

}  // namespace stockade::runner
