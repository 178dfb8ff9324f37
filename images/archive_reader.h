// The one way images/ opens an archive with libarchive: a tar (ustar, pax or GNU), plain or
// compressed with gzip, zstd, xz or bzip2, each filter built into libarchive — one that would
// fall back to an external program is refused, so no archive ever runs one. libarchive is loaded
// on first use (images/libarchive.h). Internal to images/.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "common/result.h"
#include "images/layer_apply.h"
#include "images/libarchive.h"

namespace stockade::images {

// Frees a reader with the library that made it.
struct ArchiveDeleter {
    const LibArchive* lib = nullptr;
    void operator()(archive* a) const noexcept { (void)lib->read_free(a); }
};
using ArchivePtr = std::unique_ptr<archive, ArchiveDeleter>;

inline constexpr std::size_t kReadBlock = std::size_t{64} * 1024;

// libarchive's last message for `a`, never null.
std::string archive_message(const LibArchive& lib, archive* a);

// A reader of `layer` (its bytes or its descriptor, from the current offset), made with `lib`,
// which must outlive it. An empty input is an archive with no entries. kInvalidArgument when it
// is not one.
Result<ArchivePtr> open_reader(const LibArchive& lib, const LayerSource& layer);

}  // namespace stockade::images
