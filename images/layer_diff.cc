#include "images/layer_diff.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/host_dir.h"
#include "common/syscall.h"
#include "common/unique_fd.h"
#include "images/libarchive.h"

namespace stockade::images {
namespace {

// Deeper than this, a tree is refused rather than walked (the applier writes no deeper trees
// than the archives it reads, and a step that nests this far has gone wrong).
constexpr int kMaxDepth = 512;
constexpr size_t kCopyBlock = size_t{256} * 1024;

// Free a writer and an entry with the library that made them.
struct WriterDeleter {
    const LibArchive* lib = nullptr;
    void operator()(archive* a) const noexcept { (void)lib->write_free(a); }
};
struct EntryDeleter {
    const LibArchive* lib = nullptr;
    void operator()(archive_entry* e) const noexcept { lib->entry_free(e); }
};

using Entries = std::map<std::string, struct stat>;  // sorted byte by byte

Entries entries_of(int fd) {
    Entries out;
    for (DirEntry& e : list_entries(fd)) {
        out.emplace(std::move(e.name), e.st);
    }
    return out;
}

UniqueFd open_dir_at(int dir, const std::string& name) {
    return UniqueFd(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

class DiffWriter {
public:
    DiffWriter(const LibArchive& lib, archive* out, const LayerDiffOptions& options)
        : lib_(lib), out_(out), options_(options) {}

    Status walk(int lower, int upper, const std::string& prefix, int depth) {
        if (depth > kMaxDepth) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("{} is more than {} directories deep", prefix, kMaxDepth)};
        }
        const Entries old_entries = lower >= 0 ? entries_of(lower) : Entries{};
        const Entries new_entries = entries_of(upper);
        // What is gone first: a whiteout hides the lower layers' entry, never one of this layer.
        for (const auto& [name, st] : old_entries) {
            const auto now = new_entries.find(name);
            const bool gone = now == new_entries.end();
            const bool retyped = !gone && S_ISDIR(st.st_mode) && !S_ISDIR(now->second.st_mode);
            if (gone || retyped) {
                RETURN_IF_ERROR(write_whiteout(prefix + ".wh." + name));
                ++stats_.removed;
            }
        }
        for (const auto& [name, st] : new_entries) {
            const std::string path = prefix + name;
            const auto was = old_entries.find(name);
            const struct stat* old = was == old_entries.end() ? nullptr : &was->second;
            if (old != nullptr && (old->st_mode & S_IFMT) != (st.st_mode & S_IFMT)) {
                old = S_ISDIR(old->st_mode) ? nullptr : old;  // a directory was whited out
            }
            if (S_ISDIR(st.st_mode)) {
                const bool same_type = old != nullptr && S_ISDIR(old->st_mode);
                if (!same_type || !same_metadata(*old, st)) {
                    RETURN_IF_ERROR(write_header(path, st, AE_IFDIR));
                    count(old);
                }
                const UniqueFd sub = open_dir_at(upper, name);
                if (!sub) {
                    return errno_error(fmt::format("open {}", path), errno);
                }
                UniqueFd lower_sub;
                if (same_type) {
                    lower_sub = open_dir_at(lower, name);
                }
                RETURN_IF_ERROR(
                    walk(lower_sub ? lower_sub.get() : -1, sub.get(), path + "/", depth + 1));
            } else if (S_ISREG(st.st_mode)) {
                if (old == nullptr || !S_ISREG(old->st_mode) || !same_metadata(*old, st) ||
                    old->st_size != st.st_size) {
                    RETURN_IF_ERROR(write_file(upper, name, path, st));
                    count(old);
                }
            } else if (S_ISLNK(st.st_mode)) {
                ASSIGN_OR_RETURN(std::string target, link_target(upper, name, path));
                bool same = false;
                if (old != nullptr && S_ISLNK(old->st_mode) && old->st_uid == st.st_uid &&
                    old->st_gid == st.st_gid) {
                    auto before = link_target(lower, name, path);
                    same = before && *before == target;
                }
                if (!same) {
                    RETURN_IF_ERROR(write_header(path, st, AE_IFLNK, &target));
                    count(old);
                }
            }
            // Devices, FIFOs and sockets: an image holds none (the importer skips them).
        }
        return {};
    }

    Status close() {
        if (lib_.write_close(out_) != ARCHIVE_OK) {
            return Error{Errc::kInternal, fmt::format("finish the layer: {}", message())};
        }
        return {};
    }

    [[nodiscard]] const LayerDiffStats& stats() const noexcept { return stats_; }

private:
    void count(const struct stat* old) { ++(old == nullptr ? stats_.added : stats_.changed); }

    [[nodiscard]] static bool same_metadata(const struct stat& a, const struct stat& b) {
        return a.st_mode == b.st_mode && a.st_uid == b.st_uid && a.st_gid == b.st_gid &&
               a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec;
    }

    [[nodiscard]] std::string message() const {
        const char* text = lib_.error_string(out_);
        return text != nullptr ? text : "no reason given";
    }

    [[nodiscard]] int64_t time_of(const struct stat& st) const {
        const int64_t t = st.st_mtim.tv_sec;
        return options_.clamp_time && t > *options_.clamp_time ? *options_.clamp_time : t;
    }

    [[nodiscard]] int64_t owner(uid_t id, const std::optional<uid_t>& own) const {
        return own && *own == id ? 0 : static_cast<int64_t>(id);
    }

    static Result<std::string> link_target(int dir, const std::string& name,
                                           const std::string& path) {
        std::array<char, 4097> text{};
        const ssize_t n = ::readlinkat(dir, name.c_str(), text.data(), text.size() - 1);
        if (n < 0) {
            return errno_error(fmt::format("read the link {}", path), errno);
        }
        return std::string(text.data(), static_cast<size_t>(n));
    }

    // `target`: a symlink's; `hardlink`: the path of the entry this one is a hard link to.
    Status write_header(const std::string& path, const struct stat& st, mode_t type,
                        const std::string* target = nullptr, int64_t size = 0,
                        const std::string* hardlink = nullptr) {
        std::unique_ptr<archive_entry, EntryDeleter> entry(lib_.entry_new(), EntryDeleter{&lib_});
        lib_.entry_set_pathname(entry.get(), path.c_str());
        lib_.entry_set_filetype(entry.get(), type);
        lib_.entry_set_perm(entry.get(), st.st_mode & 07777);
        lib_.entry_set_uid(entry.get(), owner(st.st_uid, options_.own_uid));
        lib_.entry_set_gid(entry.get(), owner(st.st_gid, options_.own_gid));
        lib_.entry_set_mtime(entry.get(), time_of(st), 0);
        lib_.entry_set_size(entry.get(), size);
        if (target != nullptr) {
            lib_.entry_set_symlink(entry.get(), target->c_str());
        }
        if (hardlink != nullptr) {
            lib_.entry_set_hardlink(entry.get(), hardlink->c_str());
        }
        if (lib_.write_header(out_, entry.get()) != ARCHIVE_OK) {
            return Error{Errc::kInternal,
                         fmt::format("write {} into the layer: {}", path, message())};
        }
        return {};
    }

    Status write_whiteout(const std::string& path) {
        struct stat st {};
        st.st_mode = S_IFREG;
        return write_header(path, st, AE_IFREG);
    }

    Status write_file(int dir, const std::string& name, const std::string& path,
                      const struct stat& st) {
        // A second name of a file this layer holds already is a hard link to the first.
        if (st.st_nlink > 1) {
            const auto first = links_.find({st.st_dev, st.st_ino});
            if (first != links_.end()) {
                return write_header(path, st, AE_IFREG, nullptr, 0, &first->second);
            }
            links_.emplace(std::pair{st.st_dev, st.st_ino}, path);
        }
        const int fd = ::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            return errno_error(fmt::format("open {}", path), errno);
        }
        const UniqueFd in(fd);
        RETURN_IF_ERROR(write_header(path, st, AE_IFREG, nullptr, st.st_size));
        std::vector<char> buf(kCopyBlock);
        int64_t left = st.st_size;
        while (left > 0) {
            const ssize_t n = retry_eintr([&] { return ::read(in.get(), buf.data(), buf.size()); });
            if (n < 0) {
                return errno_error(fmt::format("read {}", path), errno);
            }
            if (n == 0) {
                return Error{Errc::kFailedPrecondition,
                             fmt::format("{} shrank while it was written into the layer", path)};
            }
            const auto chunk = std::min<int64_t>(n, left);
            if (lib_.write_data(out_, buf.data(), static_cast<size_t>(chunk)) != chunk) {
                return Error{Errc::kInternal,
                             fmt::format("write {} into the layer: {}", path, message())};
            }
            left -= chunk;
            stats_.bytes += static_cast<uint64_t>(chunk);
        }
        return {};
    }

    const LibArchive& lib_;
    archive* out_;
    const LayerDiffOptions& options_;
    LayerDiffStats stats_{};
    std::map<std::pair<dev_t, ino_t>, std::string> links_{};
};

}  // namespace

Result<LayerDiffStats> write_layer_diff(int lower_fd, int upper_fd, int out_fd,
                                        const LayerDiffOptions& options) {
    ASSIGN_OR_RETURN(const LibArchive* lib, libarchive());
    std::unique_ptr<archive, WriterDeleter> out(lib->write_new(), WriterDeleter{lib});
    if (!out || lib->write_set_format_pax_restricted(out.get()) != ARCHIVE_OK ||
        lib->write_set_bytes_in_last_block(out.get(), 1) != ARCHIVE_OK ||
        lib->write_open_fd(out.get(), out_fd) != ARCHIVE_OK) {
        return Error{Errc::kInternal, "start a layer archive"};
    }
    DiffWriter writer(*lib, out.get(), options);
    RETURN_IF_ERROR(writer.walk(lower_fd, upper_fd, "", 0));
    RETURN_IF_ERROR(writer.close());
    return writer.stats();
}

}  // namespace stockade::images
