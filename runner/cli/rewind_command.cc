#include "runner/cli/rewind_command.h"

#include <limits.h>
#include <signal.h>
#include <stdlib.h>

#include <fmt/format.h>

#include "common/host_dir.h"
#include "runner/cli/exit_codes.h"
#include "runner/cli/serve_command.h"
#include "runner/session/event_log.h"
#include "runner/session/session.h"
#include "runner/session/state_dir.h"

namespace stockade::runner {

namespace {

constexpr int kExitIncomplete = 1;

std::string real(const std::string& path) {
    char buf[PATH_MAX];
    if (::realpath(path.c_str(), buf) == nullptr) {
        return path;
    }
    return buf;
}

}  // namespace

int rewind_command(const RewindOptions& options) {
    (void)::signal(SIGPIPE, SIG_IGN);
    constexpr std::string_view kMe = "stockade rewind";
    if (!valid_session_id(options.session)) {
        fmt::print(stderr, "{}: \"{}\" is not a session id (stockade log lists them)\n", kMe,
                   options.session);
        return kExitUsage;
    }
    if (options.to.empty()) {
        fmt::print(stderr,
                   "{}: say which call to rewind to: --to CALL (stockade log {} shows the calls "
                   "and their checkpoints)\n",
                   kMe, options.session);
        return kExitUsage;
    }
    const std::string state_dir =
        options.state_dir.empty() ? default_state_dir() : options.state_dir;
    auto state = resolve_state_dir(state_dir);
    if (!state) {
        fmt::print(stderr, "{}: {}\n", kMe, state.error().message);
        return kExitUsage;
    }
    // The workspace the session worked on, from its own log: a rewind elsewhere would write
    // the session's files into another tree.
    auto dir = open_dir_beneath(state->fd(), {"sessions", options.session});
    if (!dir) {
        fmt::print(stderr,
                   "{}: no session {} in {} (a serve --http session lives beneath tenants/ and "
                   "is rewound by its server: POST /admin/sessions/ID/rewind)\n",
                   kMe, options.session, state->path());
        return kExitUsage;
    }
    const std::string shown =
        fmt::format("{}/sessions/{}/events.jsonl", state->path(), options.session);
    auto replay = EventLog::read_supervisor_log(dir->get(), "events.jsonl", shown);
    if (!replay) {
        fmt::print(stderr, "{}: {}\n", kMe, replay.error().message);
        return kExitUsage;
    }
    std::string recorded;
    for (const auto& event : replay->events) {
        if (event.value("type", "") == "SessionStarted") {
            recorded = event.value("workspace", "");
            break;
        }
    }
    RunOptions sandbox = options.sandbox;
    if (sandbox.workspace.empty()) {
        sandbox.workspace = recorded;
    } else if (!recorded.empty() && real(sandbox.workspace) != recorded) {
        fmt::print(stderr,
                   "{}: session {} worked on {}, not {}: drop --workspace, or name that "
                   "directory\n",
                   kMe, options.session, recorded, sandbox.workspace);
        return kExitUsage;
    }
    sandbox.checkpoints = "on";
    auto config = session_config_from_flags(sandbox.workspace, state->path(), options.session, "",
                                            "", options.policy, sandbox, false);
    if (!config) {
        fmt::print(stderr, "{}: {}\n", kMe, config.error().message);
        return kExitUsage;
    }
    config->state = *state;
    auto session = Session::open(std::move(config).value());
    if (!session) {
        if (session.error().code == Errc::kFailedPrecondition) {
            fmt::print(stderr,
                       "{}: {}. A session that is running is rewound by its own server (serve "
                       "--http: POST /admin/sessions/{}/rewind); end a stdio session first.\n",
                       kMe, session.error().message, options.session);
            return kExitIncomplete;
        }
        fmt::print(stderr, "{}: {}\n", kMe, session.error().message);
        return kExitSetupFailed;
    }
    // The sandbox first: a host that cannot give one fails here, before anything is planned.
    if (auto started = (*session)->start_worker(); !started) {
        fmt::print(stderr, "{}: {}\n", kMe, started.error().message);
        return kExitSetupFailed;
    }
    auto report = (*session)->rewind(
        RewindRequest{.to = options.to, .dry_run = options.dry_run, .force = options.force});
    if (!report) {
        fmt::print(stderr, "{}: {}\n", kMe, report.error().message);
        return report.error().code == Errc::kNotFound ? kExitUsage : kExitIncomplete;
    }
    if (options.json) {
        fmt::print("{}\n",
                   report->to_json().dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
    } else {
        fmt::print("{}", rewind_report_text(*report));
    }
    const bool complete =
        report->conflicts.empty() && report->unrewindable.empty() && report->failed.empty();
    return complete ? 0 : kExitIncomplete;
}

}  // namespace stockade::runner
