// The sandbox's root, as an ordered list of mount operations. Built in the supervisor from a
// SandboxSpec (pure: no syscalls), executed by the child after clone (sandbox/child.cc), which
// must not allocate — so every path here is final and absolute, relative to the new root.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sandbox/spec.h"

namespace stockade::sandbox {

enum class MountOpKind {
    kBind,      // move a tree captured before the root was built (open_tree) to `target`
    kTmpfs,     // a fresh tmpfs at `target` with `data` ("mode=1777,size=...")
    kProc,      // a fresh procfs for the sandbox's pid namespace
    kDevpts,    // a new devpts instance
    kMask,      // bind /dev/null over a file, or an empty read-only tmpfs over a directory
    kReadOnly,  // make an existing mount point (and everything below it) read-only
    kSymlink,   // symlink(`data`, `target`)
    kFile,      // write `data` to a new file `target` (mode `mode`), or over an existing one
    // The spec's masked_paths and read_only_paths, after every bind. `target` is reached
    // without following any symlink (a symlink fails the launch); a missing target is skipped.
    kPin,           // a directory becomes a mount point of its own (same flags): no rename/rmdir
    kReadOnlyPath,  // a read-only bind of the path (file or directory) over itself
    kMaskPath,      // an empty read-only file (mode 000) over a file, an empty read-only
                    // directory (mode 000) over a directory, from a private tmpfs
};

struct MountOp {
    MountOpKind kind = MountOpKind::kBind;
    std::string target{};  // absolute path inside the sandbox
    std::string data{};    // source (kBind), options, link text or file content
    bool writable = false;
    bool optional = false;  // a missing source or target is skipped
    bool is_dir = true;     // kBind: the source is a directory (else a file)
    bool device = false;    // kBind: a device node (its mount must allow devices)
    bool image = false;     // kBind: Bind::image
    uint32_t mode = 0644;
    int source_index = -1;  // kBind: index into the plan's sources
};

struct MountPlan {
    std::vector<std::string> sources;  // host paths to capture before the root is built
    // Per source: the descriptor it was opened by (Bind::source_fd), which is what is captured
    // (the path must still lead to that very directory), or -1: the path itself.
    std::vector<int> source_fds;
    std::vector<MountOp> ops;  // in execution order
};

// Files below /proc that are masked, and the directories made read-only, as Docker does.
extern const char* const kProcMaskedFiles[];
extern const char* const kProcMaskedDirs[];
extern const char* const kProcReadOnly[];

// Orders the spec's binds, tmpfs mounts, /dev, /proc, generated files and symlinks, then the
// masked and read-only paths (with the pins that keep read-only paths' parents in place).
// `source_is_dir` tells, per spec bind, whether the host source is a directory.
MountPlan make_mount_plan(const SandboxSpec& spec, const std::vector<bool>& source_is_dir);

// The directories to pin for the spec's read-only and masked paths: for each path, every
// directory strictly between the deepest writable bind target holding it and the path itself,
// parents first, without duplicates and without bind targets (already mount points). A masked
// path's parents are pinned too: moving one away would take the mask along, and the file
// under a new name would be unmasked in every later sandbox, which masks the rule's paths.
std::vector<std::string> pinned_directories(const SandboxSpec& spec);

}  // namespace stockade::sandbox
