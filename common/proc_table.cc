#include "common/proc_table.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <memory>
#include <span>

#include <fmt/format.h>

#include "common/syscall.h"
#include "common/unique_fd.h"

namespace stockade {

namespace {

using DirPtr = std::unique_ptr<DIR, int (*)(DIR*)>;

// The next space-separated integer of `text` from `at`; nullopt when there is none.
std::optional<int> next_int(std::string_view text, size_t& at) {
    while (at < text.size() && text[at] == ' ') {
        ++at;
    }
    int value = 0;
    const auto [end, ec] = std::from_chars(text.data() + at, text.data() + text.size(), value);
    if (ec != std::errc{}) {
        return std::nullopt;
    }
    at = static_cast<size_t>(end - text.data());
    return value;
}

bool all_digits(std::string_view name) {
    return !name.empty() && name.find_first_not_of("0123456789") == std::string_view::npos;
}

// Reads a small /proc file beneath `dir` into `buf`; the bytes read, or 0 when it is gone.
size_t read_small(int dir, const std::string& name, std::span<char> buf) {
    const int fd = retry_eintr([&] { return ::openat(dir, name.c_str(), O_RDONLY | O_CLOEXEC); });
    if (fd < 0) {
        return 0;
    }
    const ssize_t n = retry_eintr([&] { return ::read(fd, buf.data(), buf.size()); });
    (void)::close(fd);
    return n > 0 ? static_cast<size_t>(n) : 0;
}

// All of a /proc file beneath `dir` (up to `cap` bytes); empty when it is gone.
std::string read_all(int dir, const std::string& name, size_t cap) {
    std::string out;
    const int fd = retry_eintr([&] { return ::openat(dir, name.c_str(), O_RDONLY | O_CLOEXEC); });
    if (fd < 0) {
        return out;
    }
    std::array<char, 4096> buf{};
    while (out.size() < cap) {
        const ssize_t n = retry_eintr([&] { return ::read(fd, buf.data(), buf.size()); });
        if (n <= 0) {
            break;
        }
        out.append(buf.data(), static_cast<size_t>(n));
    }
    (void)::close(fd);
    return out;
}

Result<DirPtr> open_dir(const std::string& path) {
    ASSIGN_OR_RETURN(UniqueFd fd, open_path(path, O_RDONLY | O_DIRECTORY));
    DirPtr dir(::fdopendir(fd.get()), &::closedir);
    if (!dir) {
        return errno_error(fmt::format("open \"{}\"", path), errno);
    }
    (void)fd.release();  // the DIR owns it now
    return dir;
}

}  // namespace

std::optional<ProcStat> parse_proc_stat(std::string_view text) {
    const size_t open = text.find(" (");
    const size_t close = text.rfind(')');
    if (open == std::string_view::npos || close == std::string_view::npos || close < open + 2) {
        return std::nullopt;
    }
    ProcStat st;
    size_t at = 0;
    const std::optional<int> pid = next_int(text.substr(0, open), at);
    if (!pid || at != open) {
        return std::nullopt;
    }
    st.pid = *pid;
    st.comm = std::string(text.substr(open + 2, close - open - 2));
    at = close + 1;
    while (at < text.size() && text[at] == ' ') {
        ++at;
    }
    if (at >= text.size()) {
        return std::nullopt;
    }
    st.state = text[at++];
    const std::optional<int> ppid = next_int(text, at);
    const std::optional<int> pgrp = next_int(text, at);
    const std::optional<int> session = next_int(text, at);
    if (!ppid || !pgrp || !session) {
        return std::nullopt;
    }
    st.ppid = *ppid;
    st.pgrp = *pgrp;
    st.session = *session;
    return st;
}

Status for_each_process(const std::function<bool(const ProcStat&)>& visit) {
    ASSIGN_OR_RETURN(DirPtr dir, open_dir("/proc"));
    std::array<char, 1024> buf{};
    for (;;) {
        errno = 0;
        const dirent* entry = ::readdir(dir.get());  // NOLINT(concurrency-mt-unsafe): ours only
        if (entry == nullptr) {
            if (errno != 0) {
                return errno_error("read /proc", errno);
            }
            return {};
        }
        const std::string_view name(entry->d_name);
        if (!all_digits(name)) {
            continue;
        }
        const size_t n = read_small(::dirfd(dir.get()), fmt::format("{}/stat", name), buf);
        if (n == 0) {
            continue;  // exited meanwhile
        }
        if (auto st = parse_proc_stat(std::string_view(buf.data(), n)); st && !visit(*st)) {
            return {};
        }
    }
}

Result<std::vector<int>> own_children() {
    ASSIGN_OR_RETURN(DirPtr tasks, open_dir("/proc/self/task"));
    std::vector<int> out;
    for (;;) {
        errno = 0;
        const dirent* entry = ::readdir(tasks.get());  // NOLINT(concurrency-mt-unsafe): ours
        if (entry == nullptr) {
            if (errno != 0) {
                return errno_error("read /proc/self/task", errno);
            }
            return out;
        }
        const std::string_view tid(entry->d_name);
        if (!all_digits(tid)) {
            continue;
        }
        // "pid pid pid ": the pids limit bounds how many there are.
        const std::string text =
            read_all(::dirfd(tasks.get()), fmt::format("{}/children", tid), size_t{8} << 20);
        size_t at = 0;
        while (auto pid = next_int(text, at)) {
            out.push_back(*pid);
        }
    }
}

}  // namespace stockade
