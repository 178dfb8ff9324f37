// Host directories the supervisor works in — a workspace, a tenant's workspace root, the state
// directory and what lies in it — held by descriptor (DESIGN.md §2, "Host paths").
//
// A sandbox can change what a path names on the host: it renames, removes and plants symlinks in
// its own workspace, and a tenant names directories beneath its root. So the supervisor opens a
// trusted root once (a path the operator gave: the command line, the tenants file, the
// environment), resolves everything beneath it by descriptor, one component at a time, refusing
// any symlink or mount point on the way, and hands the descriptors on — to the sandbox's bind,
// its Landlock rules, the policy's walk of the workspace, the state files. A path string is kept
// beside each descriptor for messages, logs and mount targets, and is never opened again.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"

namespace stockade {

// An open directory and the absolute path it had when it was opened. Copies share the
// descriptor, which closes with the last of them.
class HostDir {
public:
    HostDir() = default;

    // Opens a directory an operator named (symlinks in `path` are followed: the operator chose
    // them). A relative path is taken from the current directory.
    static Result<HostDir> open(const std::string& path);
    // Takes a directory descriptor opened elsewhere (open_dir_beneath); its path is read back
    // from the kernel (/proc/self/fd), so it names where the directory really is.
    static Result<HostDir> adopt(UniqueFd fd);

    [[nodiscard]] bool valid() const noexcept { return fd_ != nullptr; }
    [[nodiscard]] int fd() const noexcept { return fd_ ? fd_->get() : -1; }
    [[nodiscard]] const std::string& path() const noexcept { return path_; }

private:
    HostDir(std::shared_ptr<const UniqueFd> fd, std::string path)
        : fd_(std::move(fd)), path_(std::move(path)) {}

    std::shared_ptr<const UniqueFd> fd_;
    std::string path_;
};

// The path the kernel has for `fd` (readlink of /proc/self/fd/N): absolute, without symlinks.
// A directory removed since it was opened is kNotFound.
Result<std::string> path_of_fd(int fd);

// The components of a relative directory name a client or a tenant gives ("projects/api"):
// each made of [A-Za-z0-9._-], at most 255 bytes, none "." or ".."; no leading, trailing or
// doubled '/'; at most 32 of them and 1024 bytes in all. Pure. kInvalidArgument otherwise, with
// a message that says what is allowed.
Result<std::vector<std::string>> split_dir_name(std::string_view name);

// How open_dir_beneath creates a missing directory.
struct DirCreation {
    mode_t mode = 0750;  // whatever the umask
    // The owner of what it creates, when set (the caller must be allowed to chown).
    std::optional<uid_t> uid{};
    std::optional<gid_t> gid{};
};

// Opens the directory `components` names beneath `root`, one component at a time, each with
// openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)
// (where the kernel lacks openat2: openat with O_NOFOLLOW and a check that the device did not
// change). A symlink on the way is refused (kPermissionDenied, sys_errno ELOOP), as is a mount
// point (EXDEV) and anything that is not a directory (ENOTDIR): nothing is ever followed out of
// `root`. With `create`, a missing component is made (mkdirat) and given its mode and owner
// through the descriptor it was opened by.
Result<UniqueFd> open_dir_beneath(int root, const std::vector<std::string>& components,
                                  const std::optional<DirCreation>& create = std::nullopt);

// The entries of directory `fd` but "." and "..", each with what fstatat (not following a
// symlink) says of it; entries gone since readdir are left out.
struct DirEntry {
    std::string name;
    struct stat st {};
};
std::vector<DirEntry> list_entries(int fd);

// What the regular files beneath directory `fd` hold, in bytes (symlinks are not followed;
// at most 16 levels deep).
uint64_t tree_bytes(int fd);

// Deletes everything in directory `fd` (a symlink is removed, never followed; at most 16
// levels deep): by descriptor, so a tree a sandbox wrote cannot redirect it.
void remove_tree_contents(int fd);

// `path` is `dir` or lies beneath it (both absolute and normalised: no "." "..", no trailing
// or doubled '/'). Pure.
bool path_within(std::string_view path, std::string_view dir);

}  // namespace stockade
