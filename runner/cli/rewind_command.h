// `stockade rewind SESSION --to CALL [--dry-run] [--force]`: puts a session's workspace back as
// it was just before one of its calls (runner/session/checkpoints.h, docs/rewind.md). For a
// session that is not running: a worker is started for it as --resume does, and the rewind is
// recorded in its event log. A running serve --http session is rewound by its server (POST
// /admin/sessions/ID/rewind).
#pragma once

#include <string>

#include "runner/cli/sandbox_flags.h"

namespace stockade::runner {

struct RewindOptions {
    std::string session{};
    std::string to{};
    bool dry_run = false;
    bool force = false;
    bool json = false;
    std::string state_dir{};
    PolicyFlags policy{};
    RunOptions sandbox{};  // --workspace (default: the session's), isolation, image, ...
};

// Exit 0 when everything was put back (or, with --dry-run, could be), 1 when something was
// left (a conflict, a file that cannot be restored, a failure) or the session cannot be
// rewound now, 2 for a usage error (no such session or call, a workspace that is not the
// session's).
int rewind_command(const RewindOptions& options);

}  // namespace stockade::runner
