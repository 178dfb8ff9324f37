#include "common/host_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>

#include <fmt/format.h>

#include "common/syscall.h"

namespace stockade {
namespace {

constexpr std::size_t kMaxComponents = 32;
constexpr std::size_t kMaxNameBytes = 1024;

// openat2 is missing before Linux 5.6: remembered once it says ENOSYS.
std::atomic<bool> g_no_openat2{false};

bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
}

// Opens directory `name` (one component) beneath `parent` without following anything. Returns
// the descriptor or -errno.
int open_component_once(int parent, const std::string& name);

// As open_component_once, but a symlink is always ELOOP (O_DIRECTORY | O_NOFOLLOW on a link
// says ENOTDIR).
int open_component(int parent, const std::string& name) {
    const int fd = open_component_once(parent, name);
    struct stat st {};
    if (fd == -ENOTDIR && ::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISLNK(st.st_mode)) {
        return -ELOOP;
    }
    return fd;
}

int open_component_once(int parent, const std::string& name) {
    const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    if (!g_no_openat2.load(std::memory_order_relaxed)) {
        open_how how{};
        how.flags = static_cast<uint64_t>(flags);
        how.resolve =
            RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
        const long fd = retry_eintr(
            [&] { return ::syscall(SYS_openat2, parent, name.c_str(), &how, sizeof how); });
        if (fd >= 0) {
            return static_cast<int>(fd);
        }
        if (errno != ENOSYS) {
            return -errno;
        }
        g_no_openat2.store(true, std::memory_order_relaxed);
    }
    struct stat above {};
    if (::fstat(parent, &above) != 0) {
        return -errno;
    }
    const int fd = retry_eintr([&] { return ::openat(parent, name.c_str(), flags); });
    if (fd < 0) {
        return -errno;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || st.st_dev != above.st_dev) {
        (void)::close(fd);
        return -EXDEV;
    }
    return fd;
}

Error component_error(const std::vector<std::string>& components, std::size_t upto, int err) {
    std::string shown;
    for (std::size_t i = 0; i <= upto && i < components.size(); ++i) {
        shown += (i == 0 ? "" : "/") + components[i];
    }
    switch (err) {
        case ELOOP:
            return Error{
                Errc::kPermissionDenied,
                fmt::format("\"{}\" is a symbolic link, which is never followed here", shown), err};
        case EXDEV:
            return Error{Errc::kPermissionDenied,
                         fmt::format("\"{}\" is a mount point or leaves the directory, which is "
                                     "never crossed here",
                                     shown),
                         err};
        case ENOTDIR:
            return Error{Errc::kInvalidArgument, fmt::format("\"{}\" is not a directory", shown),
                         err};
        default:
            return errno_error(fmt::format("open \"{}\"", shown), err);
    }
}

}  // namespace

Result<HostDir> HostDir::open(const std::string& path) {
    const int fd =
        retry_eintr([&] { return ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); });
    if (fd < 0) {
        return errno_error(fmt::format("open directory \"{}\"", path), errno);
    }
    return adopt(UniqueFd(fd));
}

Result<HostDir> HostDir::adopt(UniqueFd fd) {
    ASSIGN_OR_RETURN(std::string path, path_of_fd(fd.get()));
    return HostDir(std::make_shared<const UniqueFd>(std::move(fd)), std::move(path));
}

Result<std::string> path_of_fd(int fd) {
    const std::string link = fmt::format("/proc/self/fd/{}", fd);
    char buf[PATH_MAX + 1];
    const ssize_t n = ::readlink(link.c_str(), buf, PATH_MAX);
    if (n < 0) {
        return errno_error(fmt::format("read the path of descriptor {}", fd), errno);
    }
    std::string path(buf, static_cast<std::size_t>(n));
    if (path.empty() || path.front() != '/') {
        return Error{
            Errc::kInvalidArgument,
            fmt::format("descriptor {} is not a file of this mount namespace (\"{}\")", fd, path)};
    }
    if (path.ends_with(" (deleted)")) {
        return Error{Errc::kNotFound, fmt::format("\"{}\" was removed since it was opened",
                                                  path.substr(0, path.size() - 10))};
    }
    return path;
}

Result<std::vector<std::string>> split_dir_name(std::string_view name) {
    auto refuse = [&]() -> Error {
        return Error{
            Errc::kInvalidArgument,
            fmt::format("\"{}\" is not a directory name: give a relative path of at most {} "
                        "names made of letters, digits, '.', '_' and '-' (none \".\" or \"..\"), "
                        "separated by single '/', e.g. projects/api",
                        name.substr(0, 200), kMaxComponents)};
    };
    if (name.empty() || name.size() > kMaxNameBytes) {
        return refuse();
    }
    std::vector<std::string> components;
    std::size_t start = 0;
    for (;;) {
        const std::size_t slash = name.find('/', start);
        const std::string_view part = name.substr(
            start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
        if (part.empty() || part.size() > 255 || part == "." || part == ".." ||
            !std::all_of(part.begin(), part.end(), name_char) ||
            components.size() == kMaxComponents) {
            return refuse();
        }
        components.emplace_back(part);
        if (slash == std::string_view::npos) {
            return components;
        }
        start = slash + 1;
    }
}

Result<UniqueFd> open_dir_beneath(int root, const std::vector<std::string>& components,
                                  const std::optional<DirCreation>& create) {
    const int first = ::fcntl(root, F_DUPFD_CLOEXEC, 0);
    if (first < 0) {
        return errno_error("duplicate the root's descriptor", errno);
    }
    UniqueFd dir(first);
    for (std::size_t i = 0; i < components.size(); ++i) {
        const std::string& name = components[i];
        bool created = false;
        if (create) {
            if (::mkdirat(dir.get(), name.c_str(), create->mode) == 0) {
                created = true;
            } else if (errno != EEXIST) {
                return errno_error(fmt::format("create \"{}\"", name), errno);
            }
        }
        const int fd = open_component(dir.get(), name);
        if (fd < 0) {
            return component_error(components, i, -fd);
        }
        dir.reset(fd);
        if (created) {
            // Through the descriptor: whatever the name holds by now is what is changed.
            (void)::fchmod(dir.get(), create->mode);
            if ((create->uid || create->gid) &&
                ::fchown(dir.get(), create->uid.value_or(static_cast<uid_t>(-1)),
                         create->gid.value_or(static_cast<gid_t>(-1))) != 0) {
                return errno_error(fmt::format("give \"{}\" its owner", name), errno);
            }
        }
    }
    return dir;
}

namespace {

constexpr int kMaxTreeDepth = 16;

// Calls `visit(name, st)` for each entry of directory `fd` but "." and ".." (lstat-like).
template <class Visit>
void for_each_entry(int fd, Visit visit) {
    const int dup = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    DIR* dir = dup >= 0 ? ::fdopendir(dup) : nullptr;
    if (dir == nullptr) {
        if (dup >= 0) {
            (void)::close(dup);
        }
        return;
    }
    ::rewinddir(dir);
    while (const dirent* entry = ::readdir(dir)) {
        const std::string_view name = entry->d_name;
        if (name == "." || name == "..") {
            continue;
        }
        struct stat st {};
        if (::fstatat(fd, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
            visit(std::string(name), st);
        }
    }
    ::closedir(dir);
}

UniqueFd open_subdir(int fd, const std::string& name) {
    return UniqueFd(retry_eintr([&] {
        return ::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }));
}

uint64_t tree_bytes_at(int fd, int depth) {
    uint64_t bytes = 0;
    for_each_entry(fd, [&](const std::string& name, const struct stat& st) {
        if (S_ISREG(st.st_mode)) {
            bytes += static_cast<uint64_t>(st.st_size);
        } else if (S_ISDIR(st.st_mode) && depth < kMaxTreeDepth) {
            if (const UniqueFd sub = open_subdir(fd, name); sub) {
                bytes += tree_bytes_at(sub.get(), depth + 1);
            }
        }
    });
    return bytes;
}

void remove_contents_at(int fd, int depth) {
    for_each_entry(fd, [&](const std::string& name, const struct stat& st) {
        if (S_ISDIR(st.st_mode)) {
            if (const UniqueFd sub = open_subdir(fd, name); sub && depth < kMaxTreeDepth) {
                remove_contents_at(sub.get(), depth + 1);
            }
            (void)::unlinkat(fd, name.c_str(), AT_REMOVEDIR);
        } else {
            (void)::unlinkat(fd, name.c_str(), 0);
        }
    });
}

}  // namespace

std::vector<DirEntry> list_entries(int fd) {
    std::vector<DirEntry> out;
    for_each_entry(fd, [&](const std::string& name, const struct stat& st) {
        out.push_back(DirEntry{name, st});
    });
    return out;
}

uint64_t tree_bytes(int fd) {
    return tree_bytes_at(fd, 0);
}

void remove_tree_contents(int fd) {
    remove_contents_at(fd, 0);
}

bool path_within(std::string_view path, std::string_view dir) {
    if (dir == "/") {
        return !path.empty() && path.front() == '/';
    }
    return path == dir ||
           (path.size() > dir.size() && path.starts_with(dir) && path[dir.size()] == '/');
}

}  // namespace stockade
