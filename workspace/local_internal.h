// What the parts of LocalWorkspace share: local_workspace.cc (construction and files),
// local_rg.cc (rg runs) and local_commands.cc (spawned commands and reaping), and the
// checkpoints' walk (snapshot.cc). Not part of the module's interface.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "common/unique_fd.h"
#include "workspace/exit_report.h"
#include "workspace/workspace.h"

namespace stockade::workspace::local {

// The children this process waits for, shared by every LocalWorkspace: waitpid reaps per
// process, so two tables (two workspaces in one test binary) would steal each other's children.
struct ChildTable {
    std::mutex mu;
    std::map<pid_t, UniqueFd> leaders;  // spawned, not yet reaped: pid → status pipe write end
    std::set<pid_t> waited_elsewhere;   // rg while run_rg waits for it by pid
    // Orphans a command left running, stopped with SIGTERM: pid → when SIGKILL is due. Each is
    // an unreaped child of this process, so its pid cannot be reused while it is listed.
    std::map<pid_t, std::chrono::steady_clock::time_point> stopping;
    // What was stopped for a leader that has not been reaped yet.
    std::map<pid_t, Leftovers> left_by;
};

ChildTable& children();

// The kind of file a stat mode names.
inline FileType file_type(mode_t mode) {
    if (S_ISREG(mode)) {
        return FileType::kFile;
    }
    if (S_ISDIR(mode)) {
        return FileType::kDirectory;
    }
    if (S_ISLNK(mode)) {
        return FileType::kSymlink;
    }
    return FileType::kOther;
}

// A path as messages name it: the root itself is ".".
inline std::string shown(const std::string& path) {
    return path.empty() ? std::string(".") : path;
}

}  // namespace stockade::workspace::local
