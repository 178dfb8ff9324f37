// The layer writer. One LayerWriter reads one layer, entry by entry, in archive order:
//   1. count the entry against max_entries, normalise its name (normalize_entry_path);
//   2. charge its declared data against max_bytes before anything is written;
//   3. resolve its parent beneath the root (openat2, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS),
//      making missing parents;
//   4. a whiteout removes from lower layers; anything else replaces what is at the leaf (but a
//      directory over a directory merges), then is made relative to the parent's descriptor;
//   5. owner, user.* xattrs, mode without setuid/setgid, times — through the new descriptor.
// Directories keep mode | 0700 until LayerApplier::finish(), which gives them their final modes
// and times deepest first.
#include "images/layer_apply.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <set>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "common/syscall.h"
#include "common/unique_fd.h"
#include "images/archive_reader.h"
#include "images/libarchive.h"

namespace stockade::images {
namespace {

using InodeKey = std::pair<dev_t, ino_t>;

constexpr std::string_view kWhiteoutPrefix = ".wh.";
constexpr std::string_view kWhiteoutMetaPrefix = ".wh..wh.";
constexpr std::string_view kOpaqueMarker = ".wh..wh..opq";
// Directories deeper than this are not removed (each level holds a descriptor while its
// contents go): the layer is refused instead.
constexpr int kMaxRemoveDepth = 512;

// A byte count as --max-size takes it where it is whole ("8G", "64M"), else in bytes.
std::string size_text(uint64_t bytes) {
    for (const auto& [shift, unit] : {std::pair{30, 'G'}, std::pair{20, 'M'}, std::pair{10, 'K'}}) {
        if (bytes != 0 && bytes % (uint64_t{1} << shift) == 0) {
            return fmt::format("{}{}", bytes >> shift, unit);
        }
    }
    return fmt::format("{} bytes", bytes);
}

int open_beneath_once(int root, const std::string& path, int flags) {
    open_how how{};
    how.flags = static_cast<unsigned>(flags) | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    const char* name = path.empty() ? "." : path.c_str();
    const long fd =
        retry_eintr([&] { return ::syscall(SYS_openat2, root, name, &how, sizeof how); });
    return fd >= 0 ? static_cast<int>(fd) : -errno;
}

// Opens `path` (normalised, "" for the root itself) beneath `root`; relative symlinks that stay
// beneath it are followed, any other is EXDEV or ELOOP. Returns the descriptor or -errno.
int open_beneath(int root, const std::string& path, int flags) {
    int fd = -EAGAIN;
    // EAGAIN: a rename raced with the lookup (openat2(2)); only ours could, so it settles.
    for (int attempt = 0; attempt < 8 && fd == -EAGAIN; ++attempt) {
        fd = open_beneath_once(root, path, flags);
    }
    return fd;
}

InodeKey key_of(const struct stat& st) {
    return {st.st_dev, st.st_ino};
}

// "a/b/c" -> {"a/b", "c"}; "c" -> {"", "c"}.
std::pair<std::string, std::string> split_leaf(const std::string& path) {
    const std::size_t slash = path.rfind('/');
    if (slash == std::string::npos) {
        return {"", path};
    }
    return {path.substr(0, slash), path.substr(slash + 1)};
}

// The names in directory `fd` but "." and "..".
Result<std::vector<std::string>> list_names(int fd) {
    const int dup = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dup < 0) {
        return errno_error("duplicate a directory's descriptor", errno);
    }
    DIR* dir = ::fdopendir(dup);
    if (dir == nullptr) {
        const int err = errno;
        (void)::close(dup);
        return errno_error("read a directory", err);
    }
    std::unique_ptr<DIR, int (*)(DIR*)> owned(dir, ::closedir);
    ::rewinddir(dir);
    std::vector<std::string> names;
    errno = 0;
    // NOLINTNEXTLINE(concurrency-mt-unsafe): the DIR stream is this call's own.
    while (const dirent* entry = ::readdir(dir)) {
        const std::string_view name = entry->d_name;
        if (name != "." && name != "..") {
            names.emplace_back(name);
        }
    }
    if (errno != 0) {
        return errno_error("read a directory", errno);
    }
    return names;
}

// Writes one layer. Holds what only this layer needs: which inodes it wrote, for whiteouts.
class LayerWriter {
public:
    LayerWriter(const LibArchive& lib, int root, const ApplyOptions& options, ApplyStats& stats,
                std::map<InodeKey, LayerApplier::DirFixup>& dirs)
        : lib_(lib), root_(root), options_(options), stats_(stats), dirs_(dirs) {}

    Status run(archive* a) {
        for (;;) {
            archive_entry* entry = nullptr;
            const int r = lib_.read_next_header(a, &entry);
            if (r == ARCHIVE_EOF) {
                return ok_status();
            }
            if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
                return archive_error(a, "read the next entry");
            }
            RETURN_IF_ERROR(write_entry(a, entry));
            if (ended_early_) {
                return ok_status();
            }
        }
    }

private:
    Error archive_error(archive* a, std::string_view what) const {
        return Error{Errc::kInvalidArgument,
                     fmt::format("{}: {}; the archive is damaged or not a tar layer", what,
                                 archive_message(lib_, a))};
    }

    Error refuse(std::string_view name, std::string_view what) const {
        return Error{Errc::kInvalidArgument,
                     fmt::format("entry {}: {}; {}", quote_entry_name(name), what, kEntryRemedy)};
    }

    Error past_byte_limit(std::string_view name, uint64_t more) const {
        return Error{
            Errc::kResourceExhausted,
            fmt::format("entry {}: {} more bytes would take the image past its limit of "
                        "{} of uncompressed data ({} bytes so far); reading stopped "
                        "there, before they were written. If the image is genuine, "
                        "raise the limit with --max-size (e.g. --max-size {})",
                        quote_entry_name(name), more, size_text(options_.max_bytes), stats_.bytes,
                        size_text(std::max(options_.max_bytes, options_.max_bytes * 2)))};
    }

    // Counts `n` bytes of entry data against max_bytes, before they are written.
    Status charge(std::string_view name, uint64_t n) {
        if (n > options_.max_bytes - std::min(stats_.bytes, options_.max_bytes)) {
            return past_byte_limit(name, n);
        }
        stats_.bytes += n;
        return ok_status();
    }

    Status write_entry(archive* a, archive_entry* entry) {
        if (stats_.entries >= options_.max_entries) {
            return Error{Errc::kResourceExhausted,
                         fmt::format("more than {} entries: past the image's limit on entries; "
                                     "reading stopped there. If the image is genuine, raise the "
                                     "limit with --max-entries",
                                     options_.max_entries)};
        }
        ++stats_.entries;
        const char* raw = lib_.entry_pathname(entry);
        if (raw == nullptr) {
            return refuse("", "the entry has no name (or one that cannot be read)");
        }
        ASSIGN_OR_RETURN(const std::string path, normalize_entry_path(raw));
        const la_int64_t size = lib_.entry_size_is_set(entry) != 0 ? lib_.entry_size(entry) : 0;
        const auto declared = static_cast<uint64_t>(std::max<la_int64_t>(size, 0));
        const char* link_target = lib_.entry_hardlink(entry);
        const mode_t type = lib_.entry_filetype(entry);

        if (path.empty()) {
            // "./" or "/": the root itself, whose mode and owner the store decides.
            if (type != AE_IFDIR || link_target != nullptr) {
                return refuse(raw, "the root of the image can only be a directory");
            }
            return charge(raw, declared);
        }
        auto [dir, leaf] = split_leaf(path);
        const bool whiteout_entry = leaf.starts_with(kWhiteoutPrefix);
        // Data that is not written (a whiteout's, a hardlink's, a device's) is decompressed all
        // the same when libarchive skips it: it counts too. A file's is counted as it is read.
        if (type != AE_IFREG || link_target != nullptr || whiteout_entry) {
            RETURN_IF_ERROR(charge(raw, declared));
        }
        if (whiteout_entry) {
            return whiteout(raw, dir, leaf);
        }
        if (link_target != nullptr) {
            return hardlink(raw, dir, leaf, link_target);
        }
        switch (type) {
            case AE_IFREG:
                return regular_file(a, entry, raw, dir, leaf, declared);
            case AE_IFDIR:
                return directory(entry, raw, path, dir, leaf);
            case AE_IFLNK:
                return symlink(entry, raw, dir, leaf);
            case AE_IFCHR:
            case AE_IFBLK:
                ++stats_.devices_skipped;
                return ok_status();
            case AE_IFIFO:
                ++stats_.fifos_skipped;
                return ok_status();
            case AE_IFSOCK:
                ++stats_.sockets_skipped;
                return ok_status();
            default:
                return refuse(raw, fmt::format("the entry has an unknown type ({:#o})", type));
        }
    }

    // --- parents --------------------------------------------------------------------------

    Error parent_error(std::string_view name, const std::string& dir, int err) const {
        switch (err) {
            case EXDEV:
            case ELOOP:
                return refuse(name,
                              fmt::format("its parent {} lies through a symbolic link that "
                                          "is absolute, loops or leads out of the image's root, "
                                          "which is never followed",
                                          quote_entry_name(dir)));
            case ENOTDIR:
                return refuse(
                    name, fmt::format("its parent {} is not a directory", quote_entry_name(dir)));
            default:
                return errno_error(fmt::format("entry {}: open its parent {}",
                                               quote_entry_name(name), quote_entry_name(dir)),
                                   err);
        }
    }

    // Marks `dir` and each directory above it as written by this layer (so an opaque marker or
    // a whiteout in this layer keeps them), once per directory name and layer.
    void mark_ancestors(const std::string& dir) {
        if (dir.empty() || marked_.contains(dir)) {
            return;
        }
        std::size_t end = 0;
        while (end != std::string::npos) {
            end = dir.find('/', end + 1);
            const std::string prefix = dir.substr(0, end);
            if (!marked_.insert(prefix).second) {
                continue;
            }
            const UniqueFd fd(open_beneath(root_, prefix, O_PATH | O_DIRECTORY));
            struct stat st {};
            if (fd && ::fstat(fd.get(), &st) == 0) {
                written_.insert(key_of(st));
            }
        }
    }

    // The parent directory of an entry, beneath the root; with `create`, missing directories
    // are made (mode 0755, as an image tool would) and count as written by this layer.
    Result<UniqueFd> open_parent(std::string_view name, const std::string& dir, bool create) {
        int fd = open_beneath(root_, dir, O_RDONLY | O_DIRECTORY);
        if (fd == -ENOENT && create) {
            fd = make_parents(dir);
        }
        if (fd < 0) {
            return parent_error(name, dir, -fd);
        }
        UniqueFd parent(fd);
        if (create) {
            mark_ancestors(dir);
        }
        return parent;
    }

    // Opens each prefix of `dir` beneath the root and makes the missing ones. Returns the
    // descriptor of `dir` or -errno.
    int make_parents(const std::string& dir) {
        UniqueFd above(::fcntl(root_, F_DUPFD_CLOEXEC, 0));
        if (!above) {
            return -errno;
        }
        std::size_t start = 0;
        for (;;) {
            const std::size_t slash = dir.find('/', start);
            const std::string prefix = dir.substr(0, slash);
            const std::string component =
                dir.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
            int fd = open_beneath(root_, prefix, O_RDONLY | O_DIRECTORY);
            if (fd == -ENOENT) {
                if (::mkdirat(above.get(), component.c_str(), 0700) != 0 && errno != EEXIST) {
                    return -errno;
                }
                fd = open_beneath(root_, prefix, O_RDONLY | O_DIRECTORY);
                if (fd >= 0) {
                    (void)::fchmod(fd, 0755);
                    struct stat st {};
                    if (::fstat(fd, &st) == 0) {
                        // An implicit directory has no time of its own: the epoch, so that the
                        // same layers give the same tree.
                        dirs_[key_of(st)] = LayerApplier::DirFixup{prefix, 0755, {}};
                        written_.insert(key_of(st));
                    }
                }
            }
            if (fd < 0) {
                return fd;
            }
            above.reset(fd);
            if (slash == std::string::npos) {
                return above.release();
            }
            start = slash + 1;
        }
    }

    // --- removal ----------------------------------------------------------------------------

    // Removes `name` in directory `parent`, a directory with everything in it, by descriptor;
    // a symlink is removed, never followed.
    Status remove_entry(int parent, const std::string& name, int depth = 0) {
        struct stat st {};
        if (::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
            return errno == ENOENT
                       ? ok_status()
                       : errno_error(fmt::format("stat {}", quote_entry_name(name)), errno);
        }
        if (!S_ISDIR(st.st_mode)) {
            if (::unlinkat(parent, name.c_str(), 0) != 0 && errno != ENOENT) {
                return errno_error(fmt::format("remove {}", quote_entry_name(name)), errno);
            }
            return ok_status();
        }
        if (depth >= kMaxRemoveDepth) {
            return Error{Errc::kResourceExhausted,
                         fmt::format("remove {}: directories nest deeper than {} levels",
                                     quote_entry_name(name), kMaxRemoveDepth)};
        }
        {
            const UniqueFd sub(retry_eintr([&] {
                return ::openat(parent, name.c_str(),
                                O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            }));
            if (!sub) {
                return errno_error(fmt::format("open {}", quote_entry_name(name)), errno);
            }
            // Removing needs write and search permission, which finish() may not have left.
            (void)::fchmod(sub.get(), 0700);
            ASSIGN_OR_RETURN(const std::vector<std::string> names, list_names(sub.get()));
            for (const std::string& child : names) {
                RETURN_IF_ERROR(remove_entry(sub.get(), child, depth + 1));
            }
        }
        if (::unlinkat(parent, name.c_str(), AT_REMOVEDIR) != 0) {
            return errno_error(fmt::format("remove directory {}", quote_entry_name(name)), errno);
        }
        dirs_.erase(key_of(st));
        return ok_status();
    }

    // Removes from directory `dir` whatever this layer did not write, at every depth: what lower
    // layers put there.
    Status remove_lower(int dir, int depth = 0) {
        if (depth >= kMaxRemoveDepth) {
            return Error{Errc::kResourceExhausted,
                         fmt::format("directories nest deeper than {} levels", kMaxRemoveDepth)};
        }
        ASSIGN_OR_RETURN(const std::vector<std::string> names, list_names(dir));
        for (const std::string& name : names) {
            RETURN_IF_ERROR(hide_lower(dir, name, depth));
        }
        return ok_status();
    }

    // Hides `name` in `parent` as lower layers wrote it: gone if this layer did not write it; if
    // it did and it is a directory, only what lower layers left in it goes.
    Status hide_lower(int parent, const std::string& name, int depth = 0) {
        struct stat st {};
        if (::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
            return errno == ENOENT
                       ? ok_status()
                       : errno_error(fmt::format("stat {}", quote_entry_name(name)), errno);
        }
        if (!written_.contains(key_of(st))) {
            return remove_entry(parent, name);
        }
        if (!S_ISDIR(st.st_mode)) {
            return ok_status();
        }
        const UniqueFd sub(retry_eintr([&] {
            return ::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }));
        if (!sub) {
            return errno_error(fmt::format("open {}", quote_entry_name(name)), errno);
        }
        return remove_lower(sub.get(), depth + 1);
    }

    // Clears the leaf for a new entry: what is there goes, but a directory stays for a new
    // directory (the two merge). Returns whether a directory is there to merge with.
    Result<bool> make_room(int parent, const std::string& leaf, bool for_directory) {
        struct stat st {};
        if (::fstatat(parent, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno == ENOENT) {
                return false;
            }
            return errno_error(fmt::format("stat {}", quote_entry_name(leaf)), errno);
        }
        if (S_ISDIR(st.st_mode) && for_directory) {
            return true;
        }
        RETURN_IF_ERROR(remove_entry(parent, leaf));
        return false;
    }

    // --- entries ----------------------------------------------------------------------------

    Status whiteout(std::string_view name, const std::string& dir, const std::string& leaf) {
        if (leaf == kOpaqueMarker) {
            // The directory itself is this layer's: only what lower layers put in it goes.
            auto parent = open_parent(name, dir, false);
            if (!parent && parent.error().sys_errno == ENOENT) {
                ++stats_.whiteouts;
                return ok_status();
            }
            if (!parent) {
                return std::move(parent).error();
            }
            mark_ancestors(dir);
            struct stat st {};
            if (::fstat(parent->get(), &st) == 0) {
                written_.insert(key_of(st));
            }
            ++stats_.whiteouts;
            return remove_lower(parent->get());
        }
        if (leaf.starts_with(kWhiteoutMetaPrefix)) {
            // Other aufs metadata (.wh..wh.plnk, .wh..wh.aufs): meaningless here, never written.
            return ok_status();
        }
        const std::string hidden = leaf.substr(kWhiteoutPrefix.size());
        if (hidden.empty() || hidden == "." || hidden == "..") {
            return refuse(name, "a whiteout must name an entry beside it");
        }
        auto parent = open_parent(name, dir, false);
        ++stats_.whiteouts;
        if (!parent && parent.error().sys_errno == ENOENT) {
            return ok_status();
        }
        if (!parent) {
            return std::move(parent).error();
        }
        return hide_lower(parent->get(), hidden);
    }

    // Gives an entry made through `fd` (a file or a directory) its owner and xattrs.
    Status owner_and_xattrs(archive_entry* entry, std::string_view name, int fd) {
        if (options_.preserve_owner && ::fchown(fd, static_cast<uid_t>(lib_.entry_uid(entry)),
                                                static_cast<gid_t>(lib_.entry_gid(entry))) != 0) {
            return errno_error(fmt::format("entry {}: set its owner", quote_entry_name(name)),
                               errno);
        }
        for (const auto& [key, value] : xattrs_of(entry)) {
            if (!key.starts_with("user.")) {
                // security.capability would grant capabilities; trusted.* and the rest are not
                // the image's to set.
                ++stats_.xattrs_dropped;
            } else if (::fsetxattr(fd, key.c_str(), value.data(), value.size(), 0) != 0) {
                ++stats_.xattrs_not_stored;
            }
        }
        return ok_status();
    }

    // The entry's xattrs by name. A pax header may carry one twice (libarchive's own
    // LIBARCHIVE.xattr.* and the SCHILY.xattr.* others read), and libarchive lists both: the
    // later wins.
    std::map<std::string, std::string> xattrs_of(archive_entry* entry) const {
        std::map<std::string, std::string> out;
        lib_.entry_xattr_reset(entry);
        const char* key = nullptr;
        const void* value = nullptr;
        std::size_t size = 0;
        while (lib_.entry_xattr_next(entry, &key, &value, &size) == ARCHIVE_OK) {
            if (key != nullptr) {
                out[key] = std::string(static_cast<const char*>(value), size);
            }
        }
        return out;
    }

    // The entry's permission bits without setuid and setgid (the sticky bit stays).
    mode_t safe_mode(archive_entry* entry) {
        const mode_t mode = lib_.entry_perm(entry) & 07777;
        if ((mode & 06000) != 0) {
            ++stats_.setid_stripped;
        }
        return mode & 01777;
    }

    timespec mtime_of(archive_entry* entry) const {
        timespec t{};
        if (lib_.entry_mtime_is_set(entry) != 0) {
            t.tv_sec = lib_.entry_mtime(entry);
            t.tv_nsec = lib_.entry_mtime_nsec(entry);
        }
        return t;
    }

    Status regular_file(archive* a, archive_entry* entry, std::string_view name,
                        const std::string& dir, const std::string& leaf, uint64_t declared) {
        // Refused before any byte of it is written, when its header says it is too big.
        RETURN_IF_ERROR(charge(name, declared));
        ASSIGN_OR_RETURN(const UniqueFd parent, open_parent(name, dir, true));
        RETURN_IF_ERROR(make_room(parent.get(), leaf, false));
        const UniqueFd fd(retry_eintr([&] {
            return ::openat(parent.get(), leaf.c_str(),
                            O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        }));
        if (!fd) {
            return errno_error(fmt::format("entry {}: create it", quote_entry_name(name)), errno);
        }
        struct stat st {};
        if (::fstat(fd.get(), &st) == 0) {
            written_.insert(key_of(st));
        }
        uint64_t charged = declared;
        uint64_t end = 0;
        for (;;) {
            const void* block = nullptr;
            std::size_t size = 0;
            la_int64_t offset = 0;
            const int r = lib_.read_data_block(a, &block, &size, &offset);
            if (r == ARCHIVE_EOF) {
                break;
            }
            if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
                // Every byte its header declared has arrived, and the input ends where the
                // padding to the next 512-byte block should be: a layer whose writer left the
                // padding and the end-of-archive blocks out (umoci does). The entry is whole,
                // and nothing can follow it.
                const char* why = lib_.error_string(a);
                if (end >= declared && why != nullptr &&
                    std::string_view(why).starts_with("Truncated input file")) {
                    ended_early_ = true;
                    break;
                }
                return archive_error(
                    a, fmt::format("entry {}: read its data", quote_entry_name(name)));
            }
            if (offset < 0) {
                return refuse(name, "its data has a negative offset");
            }
            const uint64_t block_end = static_cast<uint64_t>(offset) + size;
            if (block_end > charged) {
                // More data than its header declared: counted before it is written.
                RETURN_IF_ERROR(charge(name, block_end - charged));
                charged = block_end;
            }
            const auto* bytes = static_cast<const char*>(block);
            std::size_t done = 0;
            while (done < size) {
                const ssize_t n = retry_eintr([&] {
                    return ::pwrite(fd.get(), bytes + done, size - done,
                                    static_cast<off_t>(static_cast<uint64_t>(offset) + done));
                });
                if (n < 0) {
                    return errno_error(fmt::format("entry {}: write it", quote_entry_name(name)),
                                       errno);
                }
                done += static_cast<std::size_t>(n);
            }
            end = std::max(end, block_end);
        }
        // A sparse file's trailing hole.
        if (declared > end && ::ftruncate(fd.get(), static_cast<off_t>(declared)) != 0) {
            return errno_error(fmt::format("entry {}: set its size", quote_entry_name(name)),
                               errno);
        }
        RETURN_IF_ERROR(owner_and_xattrs(entry, name, fd.get()));
        // After fchown, which would clear the setuid bits anyway; stripped here all the same.
        if (::fchmod(fd.get(), safe_mode(entry)) != 0) {
            return errno_error(fmt::format("entry {}: set its mode", quote_entry_name(name)),
                               errno);
        }
        const timespec t = mtime_of(entry);
        const timespec times[2] = {t, t};
        if (::futimens(fd.get(), times) != 0) {
            return errno_error(fmt::format("entry {}: set its time", quote_entry_name(name)),
                               errno);
        }
        ++stats_.files;
        return ok_status();
    }

    Status directory(archive_entry* entry, std::string_view name, const std::string& path,
                     const std::string& dir, const std::string& leaf) {
        ASSIGN_OR_RETURN(const UniqueFd parent, open_parent(name, dir, true));
        ASSIGN_OR_RETURN(const bool merge, make_room(parent.get(), leaf, true));
        if (!merge && ::mkdirat(parent.get(), leaf.c_str(), 0700) != 0) {
            return errno_error(fmt::format("entry {}: create it", quote_entry_name(name)), errno);
        }
        const UniqueFd fd(retry_eintr([&] {
            return ::openat(parent.get(), leaf.c_str(),
                            O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }));
        struct stat st {};
        if (!fd || ::fstat(fd.get(), &st) != 0) {
            return errno_error(fmt::format("entry {}: open it", quote_entry_name(name)), errno);
        }
        RETURN_IF_ERROR(owner_and_xattrs(entry, name, fd.get()));
        const mode_t mode = safe_mode(entry);
        // Owner-writable until finish(), so later entries and layers can fill it.
        if (::fchmod(fd.get(), mode | 0700) != 0) {
            return errno_error(fmt::format("entry {}: set its mode", quote_entry_name(name)),
                               errno);
        }
        written_.insert(key_of(st));
        dirs_[key_of(st)] = LayerApplier::DirFixup{path, mode, mtime_of(entry)};
        ++stats_.directories;
        return ok_status();
    }

    Status symlink(archive_entry* entry, std::string_view name, const std::string& dir,
                   const std::string& leaf) {
        const char* target = lib_.entry_symlink(entry);
        if (target == nullptr || *target == '\0') {
            return refuse(name, "the symbolic link has no target");
        }
        ASSIGN_OR_RETURN(const UniqueFd parent, open_parent(name, dir, true));
        RETURN_IF_ERROR(make_room(parent.get(), leaf, false));
        // The target is kept as its text: it is resolved only inside the sandbox, whose root
        // this tree is (and parents through it are resolved beneath the root here).
        if (::symlinkat(target, parent.get(), leaf.c_str()) != 0) {
            return errno_error(fmt::format("entry {}: create it", quote_entry_name(name)), errno);
        }
        struct stat st {};
        if (::fstatat(parent.get(), leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
            written_.insert(key_of(st));
        }
        if (options_.preserve_owner &&
            ::fchownat(parent.get(), leaf.c_str(), static_cast<uid_t>(lib_.entry_uid(entry)),
                       static_cast<gid_t>(lib_.entry_gid(entry)), AT_SYMLINK_NOFOLLOW) != 0) {
            return errno_error(fmt::format("entry {}: set its owner", quote_entry_name(name)),
                               errno);
        }
        count_xattrs_of_link(entry);
        const timespec t = mtime_of(entry);
        const timespec times[2] = {t, t};
        if (::utimensat(parent.get(), leaf.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0) {
            return errno_error(fmt::format("entry {}: set its time", quote_entry_name(name)),
                               errno);
        }
        ++stats_.symlinks;
        return ok_status();
    }

    // A symlink cannot hold user.* xattrs: all of them are counted, none stored.
    void count_xattrs_of_link(archive_entry* entry) {
        for (const auto& [key, value] : xattrs_of(entry)) {
            if (key.starts_with("user.")) {
                ++stats_.xattrs_not_stored;
            } else {
                ++stats_.xattrs_dropped;
            }
        }
    }

    Status hardlink(std::string_view name, const std::string& dir, const std::string& leaf,
                    std::string_view raw_target) {
        auto target = normalize_entry_path(raw_target);
        auto refuse_link = [&](std::string_view why) {
            return refuse(
                name, fmt::format("its hardlink target {} {}", quote_entry_name(raw_target), why));
        };
        if (!target) {
            return refuse_link("is not a name beneath the root (" + target.error().message + ")");
        }
        if (target->empty()) {
            return refuse_link("is the root, a directory");
        }
        if (*target == (dir.empty() ? leaf : dir + "/" + leaf)) {
            return refuse_link("is the entry itself");
        }
        const auto [target_dir, target_leaf] = split_leaf(*target);
        const int target_parent_fd = open_beneath(root_, target_dir, O_RDONLY | O_DIRECTORY);
        if (target_parent_fd < 0) {
            const int err = -target_parent_fd;
            return refuse_link(
                err == ENOENT    ? "does not exist"
                : err == ENOTDIR ? "lies beneath something not a directory"
                : err == EXDEV || err == ELOOP
                    ? "lies through a symbolic link that is absolute, loops or leads out "
                      "of the image's root"
                    : "cannot be opened (" + errno_string(err) + ")");
        }
        const UniqueFd target_parent(target_parent_fd);
        struct stat st {};
        if (::fstatat(target_parent.get(), target_leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
            return refuse_link(errno == ENOENT ? "does not exist"
                                               : "cannot be read (" + errno_string(errno) + ")");
        }
        if (S_ISDIR(st.st_mode)) {
            return refuse_link("is a directory");
        }
        ASSIGN_OR_RETURN(const UniqueFd parent, open_parent(name, dir, true));
        RETURN_IF_ERROR(make_room(parent.get(), leaf, false));
        // Flags 0: a symlink target is linked itself, never followed.
        if (::linkat(target_parent.get(), target_leaf.c_str(), parent.get(), leaf.c_str(), 0) !=
            0) {
            if (errno == ENOENT) {
                // The entry replaced a directory that held its own target.
                return refuse_link("was removed by this very entry");
            }
            return errno_error(fmt::format("entry {}: link it to {}", quote_entry_name(name),
                                           quote_entry_name(raw_target)),
                               errno);
        }
        written_.insert(key_of(st));
        ++stats_.hardlinks;
        return ok_status();
    }

    const LibArchive& lib_;
    int root_;
    const ApplyOptions& options_;
    ApplyStats& stats_;
    std::map<InodeKey, LayerApplier::DirFixup>& dirs_;
    // The input ended right after an entry's data, without the padding after it (run()).
    bool ended_early_ = false;
    // What this layer wrote, by inode: a whiteout or opaque marker in the same layer keeps it
    // (OCI image spec: whiteouts apply to lower layers only), in whatever order it comes.
    std::set<InodeKey> written_;
    // Directory names whose ancestors are already in written_.
    std::unordered_set<std::string> marked_;
};

}  // namespace

Status LayerApplier::apply(const LayerSource& layer) {
    auto wrap = [&](Error e) {
        return std::move(e).wrap(fmt::format("layer {}", quote_entry_name(layer.name)));
    };
    auto lib = libarchive();
    if (!lib) {
        return wrap(std::move(lib).error());
    }
    auto reader = open_reader(**lib, layer);
    if (!reader) {
        return wrap(std::move(reader).error());
    }
    LayerWriter writer(**lib, root_, options_, stats_, dirs_);
    if (auto done = writer.run(reader->get()); !done) {
        return wrap(std::move(done).error());
    }
    return ok_status();
}

Status LayerApplier::finish() {
    std::vector<const DirFixup*> order;
    order.reserve(dirs_.size());
    for (const auto& [key, fixup] : dirs_) {
        order.push_back(&fixup);
    }
    // Deepest first: a directory made unreadable or read-only must not stop its children's.
    std::sort(order.begin(), order.end(), [](const DirFixup* a, const DirFixup* b) {
        const auto depth = [](const std::string& p) {
            return std::count(p.begin(), p.end(), '/');
        };
        return depth(a->path) != depth(b->path) ? depth(a->path) > depth(b->path)
                                                : a->path < b->path;
    });
    for (const DirFixup* fixup : order) {
        const UniqueFd fd(open_beneath(root_, fixup->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW));
        struct stat st {};
        if (!fd || ::fstat(fd.get(), &st) != 0 || !dirs_.contains(key_of(st)) ||
            &dirs_.at(key_of(st)) != fixup) {
            // Reached no more by the name it was made by (a later entry went through a
            // symlink to it, or replaced a parent): left owner-writable, the store's tree is
            // read-only to sandboxes all the same.
            continue;
        }
        if (::fchmod(fd.get(), fixup->mode) != 0) {
            return errno_error(
                fmt::format("set the mode of directory {}", quote_entry_name(fixup->path)), errno);
        }
        const timespec times[2] = {fixup->mtime, fixup->mtime};
        if (::futimens(fd.get(), times) != 0) {
            return errno_error(
                fmt::format("set the time of directory {}", quote_entry_name(fixup->path)), errno);
        }
    }
    dirs_.clear();
    return ok_status();
}

Status apply_layer(int root_fd, const LayerSource& layer, const ApplyOptions& options,
                   ApplyStats& stats) {
    LayerApplier applier(root_fd, options, stats);
    Status applied = applier.apply(layer);
    stats = applier.stats();
    RETURN_IF_ERROR(applied);
    return applier.finish();
}

}  // namespace stockade::images
