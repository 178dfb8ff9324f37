// What a build step changed in an image's tree, as one more OCI layer (`stockade image build`).
//
// A step runs over a copy of the image's tree (the upper tree) while the store's own tree (the
// lower one) stays as it was; comparing the two, entry by entry, gives the layer: every entry
// that is new or whose type, mode, owner, size, time or link target differs is written whole,
// and every entry the upper tree no longer has becomes an OCI whiteout (`.wh.NAME`). A file
// that changed in place keeps its time unless the step touched it, which is what a build tool
// does; one changed with its time put back and its size kept is missed, as every naive differ
// (containers/storage's among them) misses it.
//
// The layer is an uncompressed tar written in a fixed order (names sorted, byte by byte), with
// numeric owners only and times no later than `clamp_time`, so the same trees give the same
// bytes, and the same digest. Both trees are read by descriptor, never following a symlink.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>

#include "common/result.h"

namespace stockade::images {

struct LayerDiffOptions {
    // The builder's own ids, written as root's (0): an unprivileged builder's trees are all its
    // own, and what a step made as the sandbox's root is its. Empty: owners as they are.
    std::optional<uid_t> own_uid{};
    std::optional<gid_t> own_gid{};
    // SOURCE_DATE_EPOCH: a later modification time is written as this one.
    std::optional<int64_t> clamp_time{};
};

struct LayerDiffStats {
    uint64_t added = 0;    // entries the lower tree did not have
    uint64_t changed = 0;  // entries it had, different
    uint64_t removed = 0;  // whiteouts
    uint64_t bytes = 0;    // file data written
};

// Writes the layer from `lower_fd` to `upper_fd` (directories) into `out_fd`.
Result<LayerDiffStats> write_layer_diff(int lower_fd, int upper_fd, int out_fd,
                                        const LayerDiffOptions& options);

}  // namespace stockade::images
