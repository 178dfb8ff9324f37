// The Workspace seam: every file operation and every rg run of the tools goes through this
// interface. The worker implements it with real syscalls inside the sandbox (LocalWorkspace);
// the supervisor talks to the worker through RemoteWorkspace. Tools never touch files directly.
//
// Paths are relative to a root (the workspace, or the read-only spill directory) and already
// normalised by the caller: no leading '/', no "." or ".." components, "" is the root itself.
// Implementations resolve them beneath the root's descriptor: no symlink or ".." may leave it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"

namespace stockade::workspace {

// Checkpoints' messages (workspace/snapshot.h).
struct Snapshot;
struct SnapshotRequest;
struct RestoreOutcome;
struct RestoreRequest;

enum class Root : uint8_t {
    kWorkspace,  // the project, read-write
    kSpill,      // the session's spilled outputs, read-only
};

enum class FileType : uint8_t { kFile, kDirectory, kSymlink, kOther };

struct FileInfo {
    FileType type = FileType::kFile;
    uint64_t size = 0;
    int64_t mtime_ns = 0;  // nanoseconds since the epoch
    uint32_t mode = 0;     // permission bits (07777)
};

struct DirEntry {
    std::string name{};
    FileType type = FileType::kFile;
    uint64_t size = 0;
    int64_t mtime_ns = 0;
};

struct ReadData {
    std::string bytes{};  // at most max_bytes
    FileInfo info{};
    bool truncated = false;  // the file holds more than max_bytes
};

struct WriteRequest {
    Root root = Root::kWorkspace;
    std::string path{};
    std::string bytes{};
    std::optional<uint32_t> mode{};  // new files: 0644 unless given; existing files keep theirs
    bool make_parents = true;
};

struct WriteOutcome {
    bool created = false;
    FileInfo info{};
};

// One ripgrep run in the worker, cwd = the root. `args` never contain the pattern as a bare
// positional: callers pass it through -e/--regexp or --glob so it cannot become an option.
struct RgRequest {
    Root root = Root::kWorkspace;
    std::vector<std::string> args{};
    size_t max_output_bytes = 4 << 20;
    std::chrono::milliseconds timeout{10'000};
};

// rg's stderr is kept up to this size; the rest is dropped (it holds error messages only).
inline constexpr size_t kRgMaxErrBytes = 64 << 10;

struct RgOutcome {
    int exit_code = 0;  // rg: 0 matches, 1 none, 2 error; -1 if killed by the timeout
    std::string out{};
    std::string err{};       // at most kRgMaxErrBytes
    bool truncated = false;  // out was cut at max_output_bytes
    bool timed_out = false;
};

// One command started in the sandbox for the `bash` and `process` tools (DESIGN.md §1). The
// child runs in its own session and process group (pgid = sid = pid), with the worker's
// environment plus `env`, cwd beneath the workspace root, signals reset to their defaults.
struct SpawnRequest {
    // argv[0] without a '/' is looked up on the worker's PATH; not found → kNotFound with the
    // message "<argv[0]>: command not found".
    std::vector<std::string> argv{};
    std::string cwd{};               // relative to the workspace root, "" = the root itself
    std::vector<std::string> env{};  // NAME=VALUE entries added to (or replacing in) the env
    // Output on a new PTY from the sandbox's own devpts (stdout and stderr both the slave);
    // otherwise stdout and stderr share one pipe (interleaved as written).
    bool pty = false;
    // With pty: the slave is also stdin and the controlling terminal (REPLs, `bash -i`,
    // Ctrl-C through the line discipline). Without pty: stdin is a pipe. When false, stdin is
    // /dev/null and there is no controlling terminal (so nothing can block on /dev/tty).
    bool interactive = false;
    uint16_t rows = 50;  // PTY window size
    uint16_t cols = 200;
};

struct SpawnedProcess {
    int pid = 0;  // the leader's pid in the sandbox's pid namespace; also its pgid and sid
    // Set by whoever owns the worker (SessionWorker: its generation) so that a later
    // signal_group cannot reach a process of another worker; LocalWorkspace leaves it 0.
    uint64_t epoch = 0;
    UniqueFd output{};  // read end of the stdout+stderr pipe, or the PTY master (read/write)
    UniqueFd input{};   // write end of the stdin pipe (interactive without pty), else invalid
    UniqueFd pidfd{};   // the leader's pidfd; invalid where pidfd_open is unavailable
    // When the worker reaps the leader it writes its wait status here (4 bytes, int32
    // little-endian, as waitpid returns it) and closes it. EOF without 4 bytes: the worker
    // died first, the status is unknown.
    UniqueFd status{};
};

// A path as the worker's view resolves it (Workspace::real_path).
struct RealPath {
    std::string path{};   // beneath the root, normalised; "" is the root itself
    bool exists = false;  // the whole path exists; else its longest existing prefix was resolved
};

// The processes of the sandbox, counted by session (each command the worker spawns leads its
// own session, so a session id is a SpawnedProcess::pid while that command lives).
struct ProcessCensus {
    struct Session {
        int sid = 0;
        uint32_t processes = 0;
        std::string name{};  // the command name (comm) of its leader, or of one member
    };
    uint32_t total = 0;               // every process but the worker itself
    std::vector<Session> sessions{};  // sorted by sid
};

struct ProcessGroupRef {
    uint64_t epoch = 0;
    int pgid = 0;  // a SpawnedProcess::pid
};

class Workspace {
public:
    virtual ~Workspace() = default;

    // The host path of a root as the model sees it (the workspace is mounted at its host path).
    [[nodiscard]] virtual std::string root_path(Root root) const = 0;

    // Follows symlinks that stay beneath the root; kNotFound when missing.
    virtual Result<FileInfo> stat(Root root, const std::string& path) = 0;
    // Where `path` leads: symlinks followed as every other call follows them (beneath the
    // root), the longest existing prefix resolved and the rest appended as given. For policy
    // checks on the file a name reaches, not the name.
    virtual Result<RealPath> real_path(Root root, const std::string& path) = 0;
    // A regular file's first `max_bytes`; kFailedPrecondition for anything else (EISDIR for a
    // directory), kNotFound when missing.
    virtual Result<ReadData> read(Root root, const std::string& path, uint64_t max_bytes) = 0;
    // Atomic: temp file in the same directory, fsync, rename. Mode kept for existing files.
    // A path whose last component is a symlink is refused (kFailedPrecondition, naming the
    // link's target): the rename would replace the link, not write through it.
    virtual Result<WriteOutcome> write(const WriteRequest& request) = 0;
    // mkdir -p beneath the root.
    virtual Status make_dirs(Root root, const std::string& path) = 0;
    // Entries of a directory (not "." or ".."), sorted by name (bytewise), at most max_entries.
    // Symlinks are reported as kSymlink, not followed. To learn whether there were more, ask
    // for one more entry than you will show.
    virtual Result<std::vector<DirEntry>> list(Root root, const std::string& path,
                                               size_t max_entries) = 0;
    virtual Result<RgOutcome> run_rg(const RgRequest& request) = 0;

    // Starts a command (see SpawnRequest). The caller owns every descriptor returned; the
    // worker keeps none of them but the status pipe's write end.
    virtual Result<SpawnedProcess> spawn(const SpawnRequest& request) = 0;
    // Sends `signal` to the process group. true: at least one process was signalled; false:
    // the group has no member left (also for a group of another epoch). Groups <= 1 and the
    // worker's own are refused (kInvalidArgument). A group whose leader was already reaped is
    // signalled only if a live member still holds its id, so a recycled pid is never hit.
    virtual Result<bool> signal_group(ProcessGroupRef group, int signal) = 0;
    // Names of the executables on the worker's PATH, sorted, unique (for "Did you mean …?").
    virtual Result<std::vector<std::string>> path_commands() = 0;
    // Counts the processes of the sandbox by session, for `process list` and for saying what
    // holds a full process limit.
    virtual Result<ProcessCensus> census() = 0;

    // Checkpoints (workspace/snapshot.h): what changed in the workspace since the last walk,
    // and putting files back. A workspace that cannot take them says so (kUnavailable).
    virtual Result<Snapshot> snapshot(const SnapshotRequest& request);
    virtual Result<RestoreOutcome> restore(const RestoreRequest& request);
};

// Normalises a model-supplied path against the roots: absolute paths must lie beneath a root's
// host path; relative ones are taken from the workspace. Lexical only (no syscalls): "..",
// ".", duplicate slashes. A path outside every root fails with kPermissionDenied and a
// model-facing sentence.
struct ResolvedPath {
    Root root = Root::kWorkspace;
    std::string relative{};  // normalised, "" for the root itself
    std::string display{};   // absolute, as the model sees it
};
Result<ResolvedPath> resolve_path(std::string_view input, const std::string& workspace_root,
                                  const std::string& spill_root);

}  // namespace stockade::workspace
