// Layer application: the part of `stockade image import|pull` that turns an image's layers
// (tar archives, possibly gzip- or zstd-compressed) into one flattened tree beneath a directory
// descriptor (DESIGN.md §8; issue 23).
//
// An image comes from anyone, so every archive is hostile until proven otherwise. Archives are
// read with libarchive and never parsed by hand; entries are written by our own writer, which
// never hands a path string to the kernel beyond the root's descriptor: every parent is resolved
// with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) — a relative symlink that stays inside
// the root may be followed, one that is absolute or climbs out fails — and the leaf is made
// relative to its parent's descriptor without following anything (mkdirat, openat O_CREAT |
// O_EXCL | O_NOFOLLOW, symlinkat, linkat). So no entry, hardlink or symlink planted by an earlier
// entry or layer can place a byte outside the root.
//
// What is refused (an Error naming the layer and the entry; the CLI maps it to exit 65):
//   - a name that is empty, holds a NUL byte, a ".." component or an overlong name
//     (kInvalidArgument);
//   - an entry whose parent lies through an absolute symlink, a symlink loop or one that leads
//     out, or is not a directory (kInvalidArgument);
//   - a hardlink to a missing target, a directory, or outside the root (kInvalidArgument);
//   - more uncompressed data than ApplyOptions::max_bytes, or more entries than max_entries
//     (kResourceExhausted), found while reading, so a gzip bomb stops before it fills the disk.
// What is changed, and counted in ApplyStats: setuid and setgid bits are stripped; device nodes,
// FIFOs and sockets are skipped; xattrs other than user.* (security.capability above all) are
// dropped. OCI whiteouts (.wh.NAME, .wh..wh..opq) remove what lower layers wrote and are never
// written themselves.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "common/result.h"
#include "images/entry_path.h"

namespace stockade::images {

// One layer's archive: a tar (ustar, pax or GNU), plain or compressed with gzip, zstd, xz or
// bzip2 (libarchive's filters, never an external program), read from memory or from a
// descriptor.
struct LayerSource {
    // Borrowed bytes, which must outlive the apply() call.
    static LayerSource from_memory(std::string name, std::span<const std::byte> bytes) {
        return LayerSource{std::move(name), bytes, -1};
    }
    // A borrowed descriptor, read from its current offset to its end; never closed here.
    static LayerSource from_fd(std::string name, int fd) {
        return LayerSource{std::move(name), {}, fd};
    }

    std::string name;  // named in every message: "sha256:…", "layer 2 of 5", a file name
    std::span<const std::byte> bytes{};
    int fd = -1;
};

struct ApplyOptions {
    // Give each entry its uid and gid from the archive (fchown, fchownat AT_SYMLINK_NOFOLLOW).
    // Only for a caller allowed to chown; otherwise everything belongs to the caller.
    bool preserve_owner = false;
    // Limits on ApplyStats::bytes and ApplyStats::entries, which add up over every layer an
    // applier applies: the limits are the whole image's.
    uint64_t max_bytes = uint64_t{8} << 30;
    uint64_t max_entries = 1'000'000;
};

// What was applied, over every layer so far.
struct ApplyStats {
    uint64_t entries = 0;  // archive entries read, whatever became of them
    // Uncompressed entry data: what regular files hold, and what skipped entries carried (which
    // libarchive decompresses all the same to get past it).
    uint64_t bytes = 0;
    uint64_t files = 0;
    uint64_t directories = 0;
    uint64_t symlinks = 0;
    uint64_t hardlinks = 0;
    uint64_t whiteouts = 0;          // .wh.NAME and .wh..wh..opq entries applied
    uint64_t setid_stripped = 0;     // entries whose setuid or setgid bit was removed
    uint64_t devices_skipped = 0;    // character and block devices
    uint64_t fifos_skipped = 0;      // FIFOs
    uint64_t sockets_skipped = 0;    // sockets
    uint64_t xattrs_dropped = 0;     // security.*, trusted.* and any other non-user.* xattr
    uint64_t xattrs_not_stored = 0;  // user.* xattrs the file system refused (best effort)
};

// Applies an image's layers, lowest first, beneath `root_fd`, then gives directories their
// modes and times (finish). Directories stay owner-writable (mode | 0700) until finish(), so
// that a later entry or layer can write into a directory the image makes read-only without
// privileges; and their times are set last, when nothing changes them any more.
//
// The root should be a fresh, private directory (the store's temporary tree): the writer
// assumes nobody else changes it while it works. On error, what was written stays for the
// caller to remove with the temporary tree.
class LayerApplier {
public:
    // `root_fd` is borrowed and must stay open while the applier is used. `stats` is where
    // counting starts (what earlier appliers of the same image counted), the limits included.
    LayerApplier(int root_fd, ApplyOptions options, ApplyStats stats = {})
        : root_(root_fd), options_(options), stats_(stats) {}

    // Applies one layer over what the previous ones wrote.
    Status apply(const LayerSource& layer);
    // Sets the directories' final modes and times, deepest first. Call once, after the last
    // apply().
    Status finish();

    [[nodiscard]] const ApplyStats& stats() const noexcept { return stats_; }

    // A directory's final mode and time, keyed by (device, inode); `path` is how it was last
    // reached, to find it again in finish() (and checked to be the same directory there).
    struct DirFixup {
        std::string path;
        mode_t mode = 0755;
        struct timespec mtime {};
    };

private:
    int root_;
    ApplyOptions options_;
    ApplyStats stats_{};
    std::map<std::pair<dev_t, ino_t>, DirFixup> dirs_;
};

// One layer in one call (apply, then finish). Counting goes on from `stats`, which the limits
// include, and `stats` is updated even when the layer is refused.
Status apply_layer(int root_fd, const LayerSource& layer, const ApplyOptions& options,
                   ApplyStats& stats);

}  // namespace stockade::images
