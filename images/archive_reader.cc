#include "images/archive_reader.h"

#include <fmt/format.h>

namespace stockade::images {

// libarchive's last message for `a`, never null.
std::string archive_message(archive* a) {
    const char* text = archive_error_string(a);
    return text != nullptr ? text : "unknown error";
}

Result<ArchivePtr> open_reader(const LayerSource& layer) {
    ArchivePtr a(archive_read_new());
    if (!a) {
        return Error{Errc::kInternal, "create an archive reader: out of memory"};
    }
    struct Filter {
        const char* name;
        int (*add)(archive*);
    };
    for (const Filter& filter : {Filter{"gzip", archive_read_support_filter_gzip},
                                 Filter{"zstd", archive_read_support_filter_zstd},
                                 Filter{"xz", archive_read_support_filter_xz},
                                 Filter{"bzip2", archive_read_support_filter_bzip2}}) {
        if (filter.add(a.get()) != ARCHIVE_OK) {
            return Error{Errc::kUnavailable,
                         fmt::format("libarchive {} cannot read {} itself: install a libarchive "
                                     "built with it",
                                     archive_version_number(), filter.name)};
        }
    }
    // An empty layer (no bytes at all) is a layer with no entries.
    if (archive_read_support_format_tar(a.get()) != ARCHIVE_OK ||
        archive_read_support_format_empty(a.get()) != ARCHIVE_OK) {
        return Error{Errc::kInternal, "set up the archive reader: " + archive_message(a.get())};
    }
    const int r = layer.fd >= 0
                      ? archive_read_open_fd(a.get(), layer.fd, kReadBlock)
                      : archive_read_open_memory(a.get(), layer.bytes.data(), layer.bytes.size());
    if (r != ARCHIVE_OK) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("open the archive: {}", archive_message(a.get()))};
    }
    return a;
}

}  // namespace stockade::images
