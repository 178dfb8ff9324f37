#include "runner/session/rg_bundle.h"

#include <elf.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include "common/syscall.h"
#include "common/unique_fd.h"
#include "runner/session/worker_binary.h"

namespace stockade::runner {

namespace {

// Larger than any loader, rg or library a host has; a file past it is not one of them.
constexpr size_t kMaxFileBytes = size_t{256} << 20;
constexpr size_t kMaxListBytes = size_t{64} << 10;
constexpr size_t kMaxLibraries = 64;

std::mutex bundle_mutex;
std::vector<int> bundle;  // guarded by bundle_mutex; empty until a call succeeds

// rg on the supervisor's own PATH (absolute entries only), else where Debian puts it.
Result<std::string> find_host_rg() {
    const char* env = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe): never set here
    std::string_view dirs = env != nullptr ? env : "";
    std::vector<std::string> candidates;
    while (!dirs.empty()) {
        const size_t colon = dirs.find(':');
        const std::string_view dir = dirs.substr(0, colon);
        dirs = colon == std::string_view::npos ? std::string_view{} : dirs.substr(colon + 1);
        if (!dir.empty() && dir.front() == '/') {
            candidates.push_back(fmt::format("{}/rg", dir));
        }
    }
    candidates.emplace_back("/usr/bin/rg");
    for (const std::string& path : candidates) {
        if (::access(path.c_str(), X_OK) == 0) {
            return path;
        }
    }
    return Error{Errc::kUnavailable,
                 "the host has no ripgrep (rg) to carry into sandboxes on a stored image: "
                 "install Debian's ripgrep package on the host"};
}

// `loader --list program`, run with an empty environment; its standard output.
Result<std::string> loader_list(const std::string& loader, const std::string& program) {
    ASSIGN_OR_RETURN(FdPair out, make_pipe());
    ASSIGN_OR_RETURN(UniqueFd devnull, open_path("/dev/null", O_RDWR));
    posix_spawn_file_actions_t actions;
    ::posix_spawn_file_actions_init(&actions);
    ::posix_spawn_file_actions_adddup2(&actions, devnull.get(), STDIN_FILENO);
    ::posix_spawn_file_actions_adddup2(&actions, out.second.get(), STDOUT_FILENO);
    ::posix_spawn_file_actions_adddup2(&actions, devnull.get(), STDERR_FILENO);
    std::vector<std::string> args = {loader, "--list", program};
    std::vector<char*> argv;
    for (std::string& a : args) {
        argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    char* envp[] = {nullptr};
    pid_t pid = -1;
    const int rc = ::posix_spawn(&pid, loader.c_str(), &actions, nullptr, argv.data(), envp);
    ::posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
        return errno_error(fmt::format("run {} --list {}", loader, program), rc);
    }
    out.second.reset();
    auto text = read_all(out.first.get(), kMaxListBytes);
    int status = 0;
    (void)retry_eintr([&] { return ::waitpid(pid, &status, 0); });
    if (!text) {
        return std::move(text).error();
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        return Error{Errc::kUnavailable,
                     fmt::format("{} --list {} failed (wait status {})", loader, program, status)};
    }
    return *text;
}

Result<UniqueFd> memfd_of(const std::string& path) {
    ASSIGN_OR_RETURN(UniqueFd file, open_path(path, O_RDONLY | O_CLOEXEC));
    ASSIGN_OR_RETURN(std::string bytes, read_all(file.get(), kMaxFileBytes + 1));
    if (bytes.size() > kMaxFileBytes) {
        return Error{Errc::kInvalidArgument, fmt::format("{} is too large to carry", path)};
    }
    // The memfd's name is what /proc/PID/maps shows for the mapping inside: the file's.
    const std::string_view base = std::string_view(path).substr(path.rfind('/') + 1);
    return make_sealed_memfd(std::string(base).c_str(), std::as_bytes(std::span(bytes)));
}

Result<std::vector<int>> make_bundle() {
    ASSIGN_OR_RETURN(std::string rg, find_host_rg());
    ASSIGN_OR_RETURN(UniqueFd rg_fd, open_path(rg, O_RDONLY | O_CLOEXEC));
    ASSIGN_OR_RETURN(std::string rg_bytes, read_all(rg_fd.get(), kMaxFileBytes));
    ASSIGN_OR_RETURN(std::string loader, elf_interpreter(std::as_bytes(std::span(rg_bytes))));
    std::vector<UniqueFd> fds;
    std::vector<std::string> files = {rg};  // a static rg needs no loader or libraries
    std::vector<std::string> libraries;
    if (!loader.empty()) {
        ASSIGN_OR_RETURN(std::string listed, loader_list(loader, rg));
        ASSIGN_OR_RETURN(libraries, parse_loader_list(listed));
        files = {loader, rg};
    }
    for (const std::string& path : files) {
        ASSIGN_OR_RETURN(UniqueFd fd, memfd_of(path));
        fds.push_back(std::move(fd));
    }
    for (const std::string& path : libraries) {
        ASSIGN_OR_RETURN(UniqueFd fd, memfd_of(path));
        fds.push_back(std::move(fd));
    }
    std::vector<int> out;
    for (UniqueFd& fd : fds) {
        out.push_back(fd.release());
    }
    return out;
}

}  // namespace

Result<std::string> elf_interpreter(std::span<const std::byte> elf) {
    const Error bad{Errc::kInvalidArgument, "not a 64-bit little-endian ELF executable"};
    Elf64_Ehdr header{};
    if (elf.size() < sizeof header) {
        return bad;
    }
    std::memcpy(&header, elf.data(), sizeof header);
    if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
        header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB ||
        header.e_phentsize != sizeof(Elf64_Phdr)) {
        return bad;
    }
    for (size_t i = 0; i < header.e_phnum; ++i) {
        const uint64_t at = header.e_phoff + i * sizeof(Elf64_Phdr);
        if (header.e_phoff > elf.size() || at > elf.size() - sizeof(Elf64_Phdr)) {
            return bad;
        }
        Elf64_Phdr ph{};
        std::memcpy(&ph, elf.data() + at, sizeof ph);
        if (ph.p_type != PT_INTERP) {
            continue;
        }
        if (ph.p_offset > elf.size() || ph.p_filesz > elf.size() - ph.p_offset || ph.p_filesz < 2) {
            return bad;
        }
        std::string path(reinterpret_cast<const char*>(elf.data() + ph.p_offset),
                         static_cast<size_t>(ph.p_filesz));
        if (path.back() != '\0' || path.find('\0') != path.size() - 1 || path.front() != '/') {
            return bad;
        }
        path.pop_back();
        return path;
    }
    return std::string();
}

Result<std::vector<std::string>> parse_loader_list(std::string_view out) {
    std::vector<std::string> libraries;
    while (!out.empty()) {
        const size_t eol = out.find('\n');
        std::string_view line = out.substr(0, eol);
        out = eol == std::string_view::npos ? std::string_view{} : out.substr(eol + 1);
        const size_t arrow = line.find(" => ");
        if (arrow == std::string_view::npos) {
            continue;  // the vDSO, the loader itself
        }
        std::string_view name = line.substr(0, arrow);
        name.remove_prefix(std::min(name.find_first_not_of(" \t"), name.size()));
        std::string_view path = line.substr(arrow + 4);
        if (path.starts_with("not found")) {
            return Error{Errc::kUnavailable,
                         fmt::format("the host's loader finds no {} for rg", name)};
        }
        if (const size_t paren = path.rfind(" ("); paren != std::string_view::npos) {
            path = path.substr(0, paren);
        }
        if (path.empty() || path.front() != '/') {
            return Error{Errc::kInvalidArgument,
                         fmt::format("unexpected line from the loader: \"{}\"", line)};
        }
        if (libraries.size() == kMaxLibraries) {
            return Error{Errc::kInvalidArgument, "rg needs more libraries than expected"};
        }
        libraries.emplace_back(path);
    }
    return libraries;
}

Result<std::vector<int>> rg_bundle_fds() {
    std::lock_guard lock(bundle_mutex);
    if (bundle.empty()) {
        auto made = make_bundle();
        if (!made) {
            return std::move(made).error().wrap("carry the host's ripgrep into the sandbox");
        }
        bundle = std::move(*made);
    }
    return bundle;
}

}  // namespace stockade::runner
