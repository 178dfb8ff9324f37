#include "images/archive_reader.h"

#include <fmt/format.h>

namespace stockade::images {

// libarchive's last message for `a`, never null.
std::string archive_message(const LibArchive& lib, archive* a) {
    const char* text = lib.error_string(a);
    return text != nullptr ? text : "unknown error";
}

Result<ArchivePtr> open_reader(const LibArchive& lib, const LayerSource& layer) {
    ArchivePtr a(lib.read_new(), ArchiveDeleter{&lib});
    if (!a) {
        return Error{Errc::kInternal, "create an archive reader: out of memory"};
    }
    struct Filter {
        const char* name;
        int (*add)(archive*);
    };
    for (const Filter& filter :
         {Filter{"gzip", lib.read_support_filter_gzip},
          Filter{"zstd", lib.read_support_filter_zstd}, Filter{"xz", lib.read_support_filter_xz},
          Filter{"bzip2", lib.read_support_filter_bzip2}}) {
        if (filter.add(a.get()) != ARCHIVE_OK) {
            return Error{Errc::kUnavailable,
                         fmt::format("libarchive {} cannot read {} itself: install a libarchive "
                                     "built with it",
                                     lib.version_number(), filter.name)};
        }
    }
    // An empty layer (no bytes at all) is a layer with no entries.
    if (lib.read_support_format_tar(a.get()) != ARCHIVE_OK ||
        lib.read_support_format_empty(a.get()) != ARCHIVE_OK) {
        return Error{Errc::kInternal,
                     "set up the archive reader: " + archive_message(lib, a.get())};
    }
    const int r = layer.fd >= 0
                      ? lib.read_open_fd(a.get(), layer.fd, kReadBlock)
                      : lib.read_open_memory(a.get(), layer.bytes.data(), layer.bytes.size());
    if (r != ARCHIVE_OK) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("open the archive: {}", archive_message(lib, a.get()))};
    }
    return a;
}

}  // namespace stockade::images
