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
#include "runner/session/policy_enforcement.h"
#include "runner/session/sandbox_network.h"
#include "runner/session/start_sandbox.h"
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
    return run_config(std::move(config), flags.network_policy, "run");
}

int run_config(SandboxConfig config, const PolicyFlags& network_flags, std::string_view label) {
    auto log = log::get("runner");
    const CallerContext caller = current_caller();
    // --network allowlist: the proxy and the rules it decides by, before anything runs. A
    // proxy that cannot start ends the run: never a silent fall back to no network or the host's.
    std::unique_ptr<policy::Policy> network_policy;
    std::unique_ptr<SandboxNetwork> network;
    if (config.network == NetworkMode::kAllowlist) {
        auto rules = parse_policy_flags(network_flags);
        if (!rules) {
            fmt::print(stderr, "stockade {}: {}\n", label, rules.error().message);
            return kExitUsage;
        }
        rules->mode = policy::Mode::kCi;  // nobody to ask: what no rule allows is refused
        std::vector<std::string> warnings;
        auto loaded = load_policy(*rules, config.workspace, warnings);
        if (!loaded) {
            fmt::print(stderr, "stockade {}: {}\n", label, loaded.error().message);
            return kExitUsage;
        }
        for (const std::string& warning : warnings) {
            fmt::print(stderr, "stockade {}: warning: policy: {}\n", label, warning);
        }
        network_policy = std::make_unique<policy::Policy>(std::move(loaded).value());
        if (auto pinned = add_settings_pins(*network_policy, config.network_pins); !pinned) {
            fmt::print(stderr, "stockade {}: {}\n", label, pinned.error().message);
            return kExitUsage;
        }
        auto started = SandboxNetwork::start(
            SandboxNetworkConfig{.mode = config.network,
                                 .policy = network_policy.get(),
                                 .pins = config.network_pins,
                                 .max_connections = config.network_max_connections,
                                 .bytes_per_second = config.network_bytes_per_second});
        if (!started) {
            fmt::print(stderr, "stockade {}: {}\n", label, started.error().message);
            return kExitSetupFailed;
        }
        network = std::move(started).value();
    } else if (config.network == NetworkMode::kNone) {
        // Only the resolver, which refuses every query and says which name was asked for.
        auto started = SandboxNetwork::start(SandboxNetworkConfig{.mode = config.network});
        if (!started) {
            fmt::print(stderr, "stockade {}: {}\n", label, started.error().message);
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

    if (network) {
        // The proxy's address for the command; after the operator's --env, so it wins.
        const std::vector<std::string> proxy_env = network->command_env("run");
        config.env.insert(config.env.end(), proxy_env.begin(), proxy_env.end());
    }
    StartStage failed_at = StartStage::kSetup;
    StartOptions options{.label = "run", .failed_at = &failed_at};
    options.before_launch = [&log, label](Isolation level, std::string_view shortfall) {
        if (level == Isolation::kLandlock && !shortfall.empty()) {
            // A degraded mode: no mount view, no pid or network namespace. Say so, and why.
            fmt::print(stderr, "stockade {}: warning: {}; --isolation auto falls back to \"{}\"\n",
                       label, shortfall, sandbox::isolation_name(level));
        } else if (!shortfall.empty()) {
            SPDLOG_LOGGER_DEBUG(log, "isolation={} shortfall=\"{}\"",
                                sandbox::isolation_name(level), shortfall);
        }
        if (level == Isolation::kNone) {
            fmt::print(stderr,
                       "stockade {}: WARNING: --isolation none: the command runs WITHOUT a "
                       "sandbox (development only)\n",
                       label);
        }
    };
    auto started = start_sandbox(config, caller, options);
    if (!started) {
        const Error& error = started.error();
        fmt::print(stderr, "stockade {}: {}\n", label, error.message);
        switch (failed_at) {
            case StartStage::kIsolation:
                return kExitUnavailable;
            case StartStage::kConfigure:
                return kExitUsage;
            case StartStage::kExec:
                // As a shell says it: 127 not found, 126 found but not executable.
                return error.code == Errc::kNotFound ? kExitNotFound : kExitNotExecutable;
            case StartStage::kSetup:
                return error.code == Errc::kUnavailable ? kExitUnavailable : kExitSetupFailed;
        }
        return kExitSetupFailed;
    }
    SPDLOG_LOGGER_DEBUG(log, "sandbox started pid={} isolation={}", started->box.pid(),
                        sandbox::isolation_name(started->spec.isolation));
    if (network) {
        network->serve(std::move(started->box.proxy_listener()));
        if (started->box.dns_socket()) {
            if (auto served = network->serve_resolver(std::move(started->box.dns_socket()));
                !served) {
                // Closed, the socket refuses each query at once, only without naming the host.
                SPDLOG_LOGGER_WARN(log, "the sandbox's resolver: {}", served.error().message);
            }
        }
    }
    const int status = supervise(started->box, started->spec);
    if (network) {
        // What the command could not reach, where the person or job running it sees it.
        if (const std::string line = tools::network_refusals_line(network->all_refusals());
            !line.empty()) {
            fmt::print(stderr, "stockade {}: {}\n", label, line);
        }
    }
    return status;
}

}  // namespace stockade::runner
