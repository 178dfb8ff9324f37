#include "sandbox/mount_plan.h"

#include <algorithm>

#include <fmt/format.h>

namespace stockade::sandbox {

const char* const kProcMaskedFiles[] = {
    "/proc/kcore",
    "/proc/kallsyms",
    "/proc/sysrq-trigger",
    "/proc/timer_list",
    "/proc/keys",
    "/proc/key-users",
    "/proc/latency_stats",
    "/proc/sched_debug",
    "/proc/kpagecount",
    "/proc/kpageflags",
    "/proc/kpagecgroup",
    "/proc/vmallocinfo",
    "/proc/config.gz",
    "/proc/kmsg",
    "/proc/modules",
    "/proc/slabinfo",
    "/proc/buddyinfo",
    "/proc/pagetypeinfo",
    nullptr,
};
const char* const kProcMaskedDirs[] = {"/proc/acpi",     "/proc/scsi",   "/proc/asound",
                                       "/proc/firmware", "/proc/driver", "/proc/dynamic_debug",
                                       nullptr};
const char* const kProcReadOnly[] = {"/proc/sys", "/proc/irq",     "/proc/bus",
                                     "/proc/fs",  "/proc/sysvipc", nullptr};

namespace {

bool is_under(const std::string& path, const std::string& dir) {
    if (dir == "/") {
        return true;
    }
    return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                           path[dir.size()] == '/');
}

std::vector<std::string> sorted_unique(std::vector<std::string> paths) {
    std::sort(paths.begin(), paths.end());
    paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
    return paths;
}

}  // namespace

MountPlan make_mount_plan(const SandboxSpec& spec, const std::vector<bool>& source_is_dir) {
    MountPlan plan;
    auto add_bind = [&](size_t i) {
        const Bind& bind = spec.binds[i];
        plan.sources.push_back(bind.source);
        plan.source_fds.push_back(bind.source_fd);
        plan.ops.push_back(MountOp{.kind = MountOpKind::kBind,
                                   .target = bind.target,
                                   .data = bind.source,
                                   .writable = bind.writable,
                                   .optional = bind.optional,
                                   .is_dir = i < source_is_dir.size() ? source_is_dir[i] : true,
                                   .image = bind.image,
                                   .source_index = static_cast<int>(plan.sources.size() - 1)});
    };
    // 1. The image: read-only binds that are not below the sandbox's own /tmp, /dev or /proc.
    //    Writable binds (the workspace, --rw) and user binds below /tmp come after /tmp exists.
    auto is_late = [](const Bind& bind) {
        return bind.writable || is_under(bind.target, "/tmp") || is_under(bind.target, "/dev") ||
               is_under(bind.target, "/proc");
    };
    for (size_t i = 0; i < spec.binds.size(); ++i) {
        if (!is_late(spec.binds[i])) {
            add_bind(i);
        }
    }
    for (const auto& link : spec.symlinks) {
        plan.ops.push_back(
            MountOp{.kind = MountOpKind::kSymlink, .target = link.target, .data = link.link_text});
    }
    for (const auto& file : spec.files) {
        plan.ops.push_back(MountOp{.kind = MountOpKind::kFile,
                                   .target = file.target,
                                   .data = file.content,
                                   .mode = file.mode});
    }
    // 2. Fresh /tmp, /dev (devices bound from the host, a new devpts instance, /dev/shm), /proc.
    plan.ops.push_back(MountOp{.kind = MountOpKind::kTmpfs,
                               .target = "/tmp",
                               .data = fmt::format("mode=1777,size={}", spec.limits.tmp_bytes),
                               .writable = true});
    plan.ops.push_back(MountOp{.kind = MountOpKind::kTmpfs,
                               .target = "/dev",
                               .data = "mode=0755,size=65536,nr_inodes=64",
                               .writable = true});
    for (const char* dev : {"null", "zero", "full", "random", "urandom", "tty"}) {
        std::string path = fmt::format("/dev/{}", dev);
        plan.sources.push_back(path);
        plan.source_fds.push_back(-1);
        plan.ops.push_back(MountOp{.kind = MountOpKind::kBind,
                                   .target = path,
                                   .data = path,
                                   .writable = true,
                                   .is_dir = false,
                                   .device = true,
                                   .source_index = static_cast<int>(plan.sources.size() - 1)});
    }
    plan.ops.push_back(MountOp{.kind = MountOpKind::kDevpts,
                               .target = "/dev/pts",
                               .data = "newinstance,ptmxmode=0666,mode=0620",
                               .writable = true});
    plan.ops.push_back(
        MountOp{.kind = MountOpKind::kSymlink, .target = "/dev/ptmx", .data = "pts/ptmx"});
    plan.ops.push_back(MountOp{.kind = MountOpKind::kTmpfs,
                               .target = "/dev/shm",
                               .data = fmt::format("mode=1777,size={}", spec.limits.shm_bytes),
                               .writable = true});
    plan.ops.push_back(
        MountOp{.kind = MountOpKind::kSymlink, .target = "/dev/fd", .data = "/proc/self/fd"});
    plan.ops.push_back(
        MountOp{.kind = MountOpKind::kSymlink, .target = "/dev/stdin", .data = "/proc/self/fd/0"});
    plan.ops.push_back(
        MountOp{.kind = MountOpKind::kSymlink, .target = "/dev/stdout", .data = "/proc/self/fd/1"});
    plan.ops.push_back(
        MountOp{.kind = MountOpKind::kSymlink, .target = "/dev/stderr", .data = "/proc/self/fd/2"});
    plan.ops.push_back(MountOp{.kind = MountOpKind::kReadOnly, .target = "/dev"});
    plan.ops.push_back(MountOp{.kind = MountOpKind::kProc, .target = "/proc", .writable = true});
    for (const char* const* p = kProcMaskedFiles; *p != nullptr; ++p) {
        plan.ops.push_back(
            MountOp{.kind = MountOpKind::kMask, .target = *p, .optional = true, .is_dir = false});
    }
    for (const char* const* p = kProcMaskedDirs; *p != nullptr; ++p) {
        plan.ops.push_back(
            MountOp{.kind = MountOpKind::kMask, .target = *p, .optional = true, .is_dir = true});
    }
    for (const char* const* p = kProcReadOnly; *p != nullptr; ++p) {
        plan.ops.push_back(MountOp{.kind = MountOpKind::kReadOnly, .target = *p, .optional = true});
    }
    // 3. The workspace and the user's binds, in the order given, over the fresh tree.
    for (size_t i = 0; i < spec.binds.size(); ++i) {
        if (is_late(spec.binds[i])) {
            add_bind(i);
        }
    }
    // 4. Policy paths, over every bind: pins, then read-only paths, then masks (a mask over a
    //    read-only tree is read-only anyway; a read-only bind over a mask would be skipped as
    //    missing). Each list sorted, so that parents come before children.
    for (const std::string& dir : pinned_directories(spec)) {
        plan.ops.push_back(MountOp{.kind = MountOpKind::kPin, .target = dir, .optional = true});
    }
    std::vector<std::string> masked = sorted_unique(spec.masked_paths);
    for (const std::string& path : sorted_unique(spec.read_only_paths)) {
        if (!std::binary_search(masked.begin(), masked.end(), path)) {
            plan.ops.push_back(
                MountOp{.kind = MountOpKind::kReadOnlyPath, .target = path, .optional = true});
        }
    }
    for (const std::string& path : masked) {
        plan.ops.push_back(
            MountOp{.kind = MountOpKind::kMaskPath, .target = path, .optional = true});
    }
    return plan;
}

std::vector<std::string> pinned_directories(const SandboxSpec& spec) {
    std::vector<std::string> targets;
    for (const Bind& bind : spec.binds) {
        targets.push_back(bind.target);
    }
    std::sort(targets.begin(), targets.end());
    std::vector<std::string> pins;
    auto add_for = [&](const std::string& path) {
        // The deepest bind holding the path decides: only beneath a writable one can a parent
        // be renamed.
        const Bind* holder = nullptr;
        for (const Bind& bind : spec.binds) {
            if (is_under(path, bind.target) &&
                (holder == nullptr || bind.target.size() >= holder->target.size())) {
                holder = &bind;
            }
        }
        if (holder == nullptr || !holder->writable || path == holder->target) {
            return;
        }
        const std::string& root = holder->target;
        size_t at = root == "/" ? 0 : root.size();
        for (;;) {
            size_t slash = path.find('/', at + 1);
            if (slash == std::string::npos) {
                break;
            }
            std::string dir = path.substr(0, slash);
            if (!std::binary_search(targets.begin(), targets.end(), dir)) {
                pins.push_back(std::move(dir));
            }
            at = slash;
        }
    };
    for (const auto* list : {&spec.read_only_paths, &spec.masked_paths}) {
        for (const std::string& path : *list) {
            add_for(path);
        }
    }
    return sorted_unique(std::move(pins));
}

}  // namespace stockade::sandbox
