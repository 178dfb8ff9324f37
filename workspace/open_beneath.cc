#include "workspace/open_beneath.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cassert>
#include <climits>
#include <deque>
#include <vector>

#include <fmt/format.h>

#include "common/path.h"
#include "common/syscall.h"
#include "workspace/diagnostics.h"

namespace stockade::workspace {

namespace {

constexpr int kMaxSymlinks = 40;  // the kernel's MAXSYMLINKS
constexpr int kMaxEagainRetries = 16;

// Whether openat2 exists; written once, from "unknown" to "yes" or "no".
enum class Openat2 : uint8_t { kUnknown, kYes, kNo };
std::atomic<Openat2> g_openat2{Openat2::kUnknown};

Error open_error(const std::string& path, int err) {
    return errno_error(fmt::format("open \"{}\"", path), err);
}

Result<UniqueFd> open_openat2(int root_fd, const std::string& path, int flags) {
    open_how how{};
    how.flags = static_cast<unsigned>(flags | O_CLOEXEC);
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    const char* name = path.empty() ? "." : path.c_str();
    for (int attempt = 0;; ++attempt) {
        long fd =
            retry_eintr([&] { return ::syscall(SYS_openat2, root_fd, name, &how, sizeof how); });
        if (fd >= 0) {
            return UniqueFd(static_cast<int>(fd));
        }
        // EAGAIN: a concurrent rename or mount raced the lookup; the kernel asks for a retry.
        if (errno == EAGAIN && attempt < kMaxEagainRetries) {
            continue;
        }
        return open_error(path, errno);
    }
}

std::deque<std::string> split_components(std::string_view path) {
    std::deque<std::string> out;
    for (std::string_view part : path_components(path)) {
        out.emplace_back(part);
    }
    return out;
}

Result<std::string> read_link(int dir_fd, const std::string& name, const std::string& path) {
    std::string target(PATH_MAX, '\0');
    ssize_t n = ::readlinkat(dir_fd, name.c_str(), target.data(), target.size());
    if (n < 0) {
        return open_error(path, errno);
    }
    if (static_cast<size_t>(n) >= target.size()) {
        return open_error(path, ENAMETOOLONG);
    }
    target.resize(static_cast<size_t>(n));
    return target;
}

// The fallback: one component at a time, never letting the kernel follow a symlink. `dirs`
// holds the directories entered beneath the root, so ".." from a link target pops one and can
// never climb above the root.
Result<UniqueFd> open_walk(int root_fd, const std::string& path, int flags) {
    std::deque<std::string> todo = split_components(path);
    std::vector<UniqueFd> dirs;
    int links = 0;
    auto current = [&] {
        return dirs.empty() ? root_fd : dirs.back().get();
    };
    while (!todo.empty()) {
        std::string name = std::move(todo.front());
        todo.pop_front();
        if (name == ".") {
            continue;
        }
        if (name == "..") {
            if (dirs.empty()) {
                return open_error(path, EXDEV);
            }
            dirs.pop_back();
            continue;
        }
        const bool last = todo.empty();
        struct stat st {};
        if (::fstatat(current(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
            return open_error(path, errno);
        }
        if (S_ISLNK(st.st_mode) && !(last && (flags & O_NOFOLLOW) != 0)) {
            if (++links > kMaxSymlinks) {
                return open_error(path, ELOOP);
            }
            ASSIGN_OR_RETURN(std::string target, read_link(current(), name, path));
            if (target.empty()) {
                return open_error(path, ENOENT);
            }
            if (target.front() == '/') {
                return open_error(path, EXDEV);
            }
            std::deque<std::string> expanded = split_components(target);
            todo.insert(todo.begin(), expanded.begin(), expanded.end());
            continue;
        }
        if (last) {
            // O_NOFOLLOW: had the entry become a symlink since fstatat, this fails (ELOOP) or,
            // with O_PATH, opens the link itself; it never follows it.
            int fd = retry_eintr(
                [&] { return ::openat(current(), name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC); });
            if (fd < 0) {
                return open_error(path, errno);
            }
            return UniqueFd(fd);
        }
        int fd = ::openat(current(), name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            return open_error(path, errno == ELOOP ? ENOTDIR : errno);
        }
        dirs.emplace_back(fd);
    }
    // The path ended on "." or ".." (from a link target), or was the root itself.
    int fd = retry_eintr([&] { return ::openat(current(), ".", flags | O_CLOEXEC); });
    if (fd < 0) {
        return open_error(path, errno);
    }
    return UniqueFd(fd);
}

}  // namespace

Status check_relative_path(std::string_view path) {
    auto bad = [&](std::string_view why) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("path \"{}\" is not a normalised relative path: {}",
                                 path.substr(0, 256), why)};
    };
    if (path.empty()) {
        return {};
    }
    if (path.size() >= PATH_MAX) {
        return bad("longer than PATH_MAX");
    }
    if (path.find('\0') != std::string_view::npos) {
        return bad("it contains a NUL byte");
    }
    if (path.front() == '/') {
        return bad("it is absolute");
    }
    size_t start = 0;
    while (start <= path.size()) {
        size_t slash = path.find('/', start);
        if (slash == std::string_view::npos) {
            slash = path.size();
        }
        std::string_view comp = path.substr(start, slash - start);
        if (comp.empty()) {
            return bad("an empty component");
        }
        if (comp == "." || comp == "..") {
            return bad(fmt::format("a \"{}\" component", comp));
        }
        start = slash + 1;
    }
    return {};
}

Result<UniqueFd> open_beneath(int root_fd, const std::string& path, int flags, ResolveMode mode) {
    assert((flags & O_CREAT) == 0 && "open_beneath does not create files");
    switch (mode) {
        case ResolveMode::kOpenat2:
            return open_openat2(root_fd, path, flags);
        case ResolveMode::kWalk:
            return open_walk(root_fd, path, flags);
        case ResolveMode::kAuto:
            break;
    }
    if (g_openat2.load(std::memory_order_relaxed) != Openat2::kNo) {
        auto fd = open_openat2(root_fd, path, flags);
        if (fd || fd.error().sys_errno != ENOSYS) {
            g_openat2.store(Openat2::kYes, std::memory_order_relaxed);
            return fd;
        }
        if (g_openat2.exchange(Openat2::kNo) != Openat2::kNo) {
            // Expected inside the sandbox: its seccomp filter fails openat2 (whose mode it
            // cannot inspect) with ENOSYS.
            diagnose(Severity::kDebug,
                     "openat2 unavailable (ENOSYS), resolving paths with the O_NOFOLLOW "
                     "component walk");
        }
    }
    return open_walk(root_fd, path, flags);
}

}  // namespace stockade::workspace
