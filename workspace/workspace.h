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

namespace stockade::workspace {

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

class Workspace {
public:
    virtual ~Workspace() = default;

    // The host path of a root as the model sees it (the workspace is mounted at its host path).
    [[nodiscard]] virtual std::string root_path(Root root) const = 0;

    // Follows symlinks that stay beneath the root; kNotFound when missing.
    virtual Result<FileInfo> stat(Root root, const std::string& path) = 0;
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
