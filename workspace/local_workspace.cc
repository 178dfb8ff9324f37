#include "workspace/local_workspace.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <queue>

#include <fmt/format.h>

#include "common/defer.h"
#include "common/syscall.h"
#include "workspace/local_internal.h"

namespace stockade::workspace {

namespace {

using Clock = std::chrono::steady_clock;
using local::file_type;
using local::shown;

constexpr mode_t kNewFileMode = 0644;
constexpr mode_t kNewDirMode = 0755;
constexpr size_t kReadChunk = 64 << 10;

std::string_view root_label(Root root) {
    switch (root) {
        case Root::kWorkspace:
            return "workspace";
        case Root::kSpill:
            return "spill directory";
    }
    return "root";
}

// An Error for `op` on `path` from errno. Escapes get the one message the model should see.
Error fs_error(Root root, std::string_view op, const std::string& path, int err) {
    if (err == EXDEV) {
        return Error{Errc::kPermissionDenied,
                     fmt::format("path \"{}\" leaves the {} through a symlink", shown(path),
                                 root_label(root)),
                     err};
    }
    if (err == ELOOP) {
        return Error{Errc::kPermissionDenied,
                     fmt::format("path \"{}\" leaves the {} through a symlink, or its symlinks "
                                 "loop: {}",
                                 shown(path), root_label(root), errno_string(err)),
                     err};
    }
    return errno_error(fmt::format("{} \"{}\"", op, shown(path)), err);
}

int64_t mtime_ns(const struct stat& st) {
    return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 +
           static_cast<int64_t>(st.st_mtim.tv_nsec);
}

FileInfo info_from(const struct stat& st) {
    return FileInfo{.type = file_type(st.st_mode),
                    .size = static_cast<uint64_t>(st.st_size),
                    .mtime_ns = mtime_ns(st),
                    .mode = static_cast<uint32_t>(st.st_mode & 07777)};
}

// ".<name>.stockade-<16 hex>.tmp", within NAME_MAX.
std::string temp_name(const std::string& name) {
    static std::atomic<uint64_t> counter{0};
    uint64_t nonce = 0;
    if (::getrandom(&nonce, sizeof nonce, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof nonce)) {
        nonce = (static_cast<uint64_t>(::getpid()) << 32U) ^
                static_cast<uint64_t>(Clock::now().time_since_epoch().count()) ^ ++counter;
    }
    return fmt::format(".{}.stockade-{:016x}.tmp", name.substr(0, 200), nonce);
}

Result<std::string> read_link_at(int dir_fd, const std::string& name) {
    std::string target(PATH_MAX, '\0');
    ssize_t n = ::readlinkat(dir_fd, name.c_str(), target.data(), target.size());
    if (n < 0) {
        return errno_error("readlink", errno);
    }
    target.resize(static_cast<size_t>(n));
    return target;
}

}  // namespace

// ---- Construction ---------------------------------------------------------------------------

LocalWorkspace::LocalWorkspace(RootDir workspace, RootDir spill, Options options)
    : workspace_(std::move(workspace)), spill_(std::move(spill)), options_(std::move(options)) {}

Result<LocalWorkspace> LocalWorkspace::open(std::string workspace_root, std::string spill_root,
                                            Options options) {
    auto open_root = [](const std::string& path, std::string_view what) -> Result<UniqueFd> {
        auto fd = open_path(path, O_PATH | O_DIRECTORY);
        if (!fd) {
            return std::move(fd).error().wrap(fmt::format("open {}", what));
        }
        return fd;
    };
    ASSIGN_OR_RETURN(UniqueFd ws_fd, open_root(workspace_root, "workspace root"));
    UniqueFd spill_fd;
    if (!spill_root.empty()) {
        ASSIGN_OR_RETURN(spill_fd, open_root(spill_root, "spill root"));
    }
    return LocalWorkspace(RootDir{std::move(workspace_root), std::move(ws_fd)},
                          RootDir{std::move(spill_root), std::move(spill_fd)}, std::move(options));
}

std::string LocalWorkspace::root_path(Root root) const {
    switch (root) {
        case Root::kWorkspace:
            return workspace_.path;
        case Root::kSpill:
            return spill_.path;
    }
    return {};
}

Result<int> LocalWorkspace::root_fd(Root root) const {
    switch (root) {
        case Root::kWorkspace:
            return workspace_.fd.get();
        case Root::kSpill:
            if (!spill_.fd) {
                return Error{Errc::kUnavailable, "this session has no spill directory"};
            }
            return spill_.fd.get();
    }
    return Error{Errc::kInvalidArgument, "unknown root"};
}

Result<int> LocalWorkspace::writable_root_fd(Root root, std::string_view op,
                                             const std::string& path) const {
    if (root == Root::kSpill) {
        return Error{Errc::kPermissionDenied,
                     fmt::format("{} \"{}\": the spill directory is read-only", op, shown(path)),
                     EROFS};
    }
    return root_fd(root);
}

Result<UniqueFd> LocalWorkspace::resolve(Root root, std::string_view op, const std::string& path,
                                         int flags) const {
    RETURN_IF_ERROR(check_relative_path(path));
    ASSIGN_OR_RETURN(int dir, root_fd(root));
    auto fd = open_beneath(dir, path, flags, options_.resolve);
    if (!fd) {
        return fs_error(root, op, path, fd.error().sys_errno);
    }
    return fd;
}

// ---- Files ----------------------------------------------------------------------------------

Result<FileInfo> LocalWorkspace::stat(Root root, const std::string& path) {
    ASSIGN_OR_RETURN(UniqueFd fd, resolve(root, "stat", path, O_PATH));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
        return fs_error(root, "stat", path, errno);
    }
    return info_from(st);
}

Result<RealPath> LocalWorkspace::real_path(Root root, const std::string& path) {
    RETURN_IF_ERROR(check_relative_path(path));
    ASSIGN_OR_RETURN(int dir, root_fd(root));
    // What /proc shows for a descriptor is its path in this process's view; the root's own
    // is the prefix every path beneath it has there.
    auto seen = [](int fd) {
        return read_link_at(AT_FDCWD, fmt::format("/proc/self/fd/{}", fd));
    };
    ASSIGN_OR_RETURN(std::string root_seen, seen(dir));
    std::string prefix = path;
    std::string missing;  // the components that do not exist, as given
    for (;;) {
        auto fd = open_beneath(dir, prefix, O_PATH, options_.resolve);
        if (fd) {
            ASSIGN_OR_RETURN(std::string target, seen(fd->get()));
            std::string relative;
            if (target == root_seen) {
                relative.clear();
            } else if (target.starts_with(root_seen == "/" ? root_seen : root_seen + "/")) {
                relative = target.substr(root_seen == "/" ? 1 : root_seen.size() + 1);
            } else {
                return Error{Errc::kInternal,
                             fmt::format("realpath \"{}\": it resolved outside the {} (\"{}\")",
                                         shown(path), root_label(root), target)};
            }
            if (!missing.empty()) {
                relative = relative.empty() ? missing : relative + "/" + missing;
            }
            return RealPath{.path = std::move(relative), .exists = missing.empty()};
        }
        if (fd.error().sys_errno != ENOENT || prefix.empty()) {
            return fs_error(root, "realpath", path, fd.error().sys_errno);
        }
        const size_t slash = prefix.rfind('/');
        const std::string last = slash == std::string::npos ? prefix : prefix.substr(slash + 1);
        missing = missing.empty() ? last : last + "/" + missing;
        prefix = slash == std::string::npos ? std::string() : prefix.substr(0, slash);
    }
}

Result<ReadData> LocalWorkspace::read(Root root, const std::string& path, uint64_t max_bytes) {
    // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
    ASSIGN_OR_RETURN(UniqueFd fd, resolve(root, "read", path, O_RDONLY | O_NONBLOCK | O_NOCTTY));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
        return fs_error(root, "read", path, errno);
    }
    if (S_ISDIR(st.st_mode)) {
        return Error{Errc::kFailedPrecondition,
                     fmt::format("read \"{}\": it is a directory", shown(path)), EISDIR};
    }
    if (!S_ISREG(st.st_mode)) {
        return Error{Errc::kFailedPrecondition,
                     fmt::format("read \"{}\": not a regular file", shown(path))};
    }
    ReadData data;
    data.info = info_from(st);
    const size_t limit = static_cast<size_t>(std::min<uint64_t>(max_bytes, SIZE_MAX / 2));
    size_t got = 0;
    data.bytes.resize(std::min<size_t>(limit, static_cast<size_t>(st.st_size)));
    for (;;) {
        if (got == data.bytes.size()) {
            if (got == limit) {
                break;
            }
            data.bytes.resize(std::min(limit, std::max(got * 2, got + kReadChunk)));
        }
        ssize_t n = retry_eintr(
            [&] { return ::read(fd.get(), data.bytes.data() + got, data.bytes.size() - got); });
        if (n < 0) {
            return fs_error(root, "read", path, errno);
        }
        if (n == 0) {
            break;
        }
        got += static_cast<size_t>(n);
    }
    data.bytes.resize(got);
    if (got == limit) {
        char probe = 0;
        ssize_t n = retry_eintr([&] { return ::read(fd.get(), &probe, 1); });
        data.truncated = n > 0;
    }
    return data;
}

Result<WriteOutcome> LocalWorkspace::write(const WriteRequest& request) {
    const std::string& path = request.path;
    RETURN_IF_ERROR(check_relative_path(path));
    ASSIGN_OR_RETURN(int root, writable_root_fd(request.root, "write", path));
    if (path.empty()) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("write: the path names the {} itself, not a file",
                                 root_label(request.root))};
    }
    const size_t slash = path.rfind('/');
    const std::string parent = slash == std::string::npos ? "" : path.substr(0, slash);
    const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    if (request.make_parents && !parent.empty()) {
        RETURN_IF_ERROR(make_dirs(request.root, parent));
    }
    auto dir = open_beneath(root, parent, O_RDONLY | O_DIRECTORY, options_.resolve);
    if (!dir) {
        const int err = dir.error().sys_errno;
        if ((err == ENOENT || err == ENOTDIR) && !request.make_parents) {
            return Error{
                Errc::kNotFound,
                fmt::format("write \"{}\": parent directory \"{}\" does not exist", path, parent),
                err};
        }
        return fs_error(request.root, "write", path, err);
    }

    bool created = false;
    mode_t mode = 0;
    struct stat st {};
    if (::fstatat(dir->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISLNK(st.st_mode)) {
            auto target = read_link_at(dir->get(), name);
            return Error{Errc::kFailedPrecondition,
                         fmt::format("write \"{}\": it is a symbolic link to \"{}\" (relative to "
                                     "its directory); write to the link's target instead",
                                     path, target ? *target : std::string("?")),
                         ELOOP};
        }
        if (S_ISDIR(st.st_mode)) {
            return Error{Errc::kFailedPrecondition,
                         fmt::format("write \"{}\": it is a directory", path), EISDIR};
        }
        if (!S_ISREG(st.st_mode)) {
            return Error{Errc::kFailedPrecondition,
                         fmt::format("write \"{}\": not a regular file", path)};
        }
        mode = st.st_mode & 07777;
    } else if (errno == ENOENT) {
        created = true;
        // New files never get setuid/setgid/sticky bits.
        mode = static_cast<mode_t>(request.mode.value_or(kNewFileMode) & 0777U);
    } else {
        return fs_error(request.root, "write", path, errno);
    }

    std::string tmp_name;
    UniqueFd tmp;
    for (int attempt = 0; attempt < 16 && !tmp; ++attempt) {
        tmp_name = temp_name(name);
        int fd = retry_eintr([&] {
            return ::openat(dir->get(), tmp_name.c_str(),
                            O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        });
        if (fd >= 0) {
            tmp.reset(fd);
        } else if (errno != EEXIST) {
            return fs_error(request.root, "write", path, errno);
        }
    }
    if (!tmp) {
        return fs_error(request.root, "write", path, EEXIST);
    }
    Defer remove_tmp{[&] {
        (void)::unlinkat(dir->get(), tmp_name.c_str(), 0);
    }};

    if (auto st_write = write_all(tmp.get(), request.bytes); !st_write) {
        return std::move(st_write).error().wrap(fmt::format("write \"{}\"", path));
    }
    if (::fchmod(tmp.get(), mode) != 0) {
        return fs_error(request.root, "write: fchmod", path, errno);
    }
    if (::fsync(tmp.get()) != 0) {
        return fs_error(request.root, "write: fsync", path, errno);
    }
    struct stat written {};
    if (::fstat(tmp.get(), &written) != 0) {
        return fs_error(request.root, "write: fstat", path, errno);
    }
    if (::renameat(dir->get(), tmp_name.c_str(), dir->get(), name.c_str()) != 0) {
        return fs_error(request.root, "write: rename", path, errno);
    }
    remove_tmp.dismiss();
    (void)::fsync(dir->get());  // the rename's durability; some filesystems refuse, harmlessly
    return WriteOutcome{.created = created, .info = info_from(written)};
}

Status LocalWorkspace::make_dirs(Root root, const std::string& path) {
    RETURN_IF_ERROR(check_relative_path(path));
    ASSIGN_OR_RETURN(int root_dir, writable_root_fd(root, "mkdir", path));
    UniqueFd parent;  // invalid: the root itself
    size_t start = 0;
    while (start < path.size()) {
        size_t slash = path.find('/', start);
        if (slash == std::string::npos) {
            slash = path.size();
        }
        const std::string name = path.substr(start, slash - start);
        const std::string prefix = path.substr(0, slash);
        const int at = parent ? parent.get() : root_dir;
        if (::mkdirat(at, name.c_str(), kNewDirMode) != 0 && errno != EEXIST) {
            return fs_error(root, "mkdir", prefix, errno);
        }
        // Whatever now stands at `prefix` (a directory we made, or one that was there, or a
        // symlink to one) is entered only through a resolution beneath the root.
        auto next = open_beneath(root_dir, prefix, O_PATH | O_DIRECTORY, options_.resolve);
        if (!next) {
            if (next.error().sys_errno == ENOTDIR) {
                return Error{Errc::kFailedPrecondition,
                             fmt::format("mkdir \"{}\": it exists and is not a directory", prefix),
                             ENOTDIR};
            }
            return fs_error(root, "mkdir", prefix, next.error().sys_errno);
        }
        parent = std::move(*next);
        start = slash + 1;
    }
    return {};
}

Result<std::vector<DirEntry>> LocalWorkspace::list(Root root, const std::string& path,
                                                   size_t max_entries) {
    ASSIGN_OR_RETURN(UniqueFd at, resolve(root, "list", path, O_PATH));
    struct stat st {};
    if (::fstat(at.get(), &st) != 0) {
        return fs_error(root, "list", path, errno);
    }
    if (!S_ISDIR(st.st_mode)) {
        return Error{Errc::kFailedPrecondition,
                     fmt::format("list \"{}\": not a directory", shown(path)), ENOTDIR};
    }
    int fd =
        retry_eintr([&] { return ::openat(at.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); });
    if (fd < 0) {
        return fs_error(root, "list", path, errno);
    }
    std::unique_ptr<DIR, int (*)(DIR*)> dir(::fdopendir(fd), &::closedir);
    if (!dir) {
        int err = errno;
        (void)::close(fd);
        return fs_error(root, "list", path, err);
    }

    // The max_entries smallest names, without holding a huge directory in memory.
    std::priority_queue<std::string> smallest;
    for (;;) {
        errno = 0;
        // readdir is safe on a DIR* that only this call uses; readdir_r is deprecated.
        const dirent* entry = ::readdir(dir.get());  // NOLINT(concurrency-mt-unsafe)
        if (entry == nullptr) {
            if (errno != 0) {
                return fs_error(root, "list", path, errno);
            }
            break;
        }
        std::string_view name(entry->d_name);
        if (name == "." || name == ".." || max_entries == 0) {
            continue;
        }
        if (smallest.size() < max_entries) {
            smallest.emplace(name);
        } else if (name < smallest.top()) {
            smallest.pop();
            smallest.emplace(name);
        }
    }
    std::vector<std::string> names;
    names.reserve(smallest.size());
    while (!smallest.empty()) {
        names.push_back(smallest.top());
        smallest.pop();
    }
    std::reverse(names.begin(), names.end());

    std::vector<DirEntry> entries;
    entries.reserve(names.size());
    for (std::string& name : names) {
        struct stat est {};
        if (::fstatat(::dirfd(dir.get()), name.c_str(), &est, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno == ENOENT) {
                continue;  // removed while we listed
            }
            return fs_error(root, "list", path.empty() ? name : fmt::format("{}/{}", path, name),
                            errno);
        }
        entries.push_back(DirEntry{.name = std::move(name),
                                   .type = file_type(est.st_mode),
                                   .size = static_cast<uint64_t>(est.st_size),
                                   .mtime_ns = mtime_ns(est)});
    }
    return entries;
}

}  // namespace stockade::workspace
