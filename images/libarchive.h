// libarchive, loaded when images/ first reads or writes an archive: only `stockade image
// import|pull|build` do, so `stockade run` and `serve` never map it and what it brings (libxml2,
// ICU and its 30 MB of data, nettle, the compressors). Linked, they cost every start 2.5 million
// cycles in the dynamic loader and 3.6 MiB of RSS (bench/startup.sh). It stays THE archive
// library: nothing in images/ parses an archive itself. Internal to images/.
#pragma once

#include <archive.h>
#include <archive_entry.h>

#include "common/result.h"

namespace stockade::images {

// The soname loaded: libarchive's ABI 13 (3.x), Debian's libarchive13.
inline constexpr const char* kLibArchiveSoname = "libarchive.so.13";

// X(name): each libarchive function images/ calls, without its "archive_" prefix.
#define STOCKADE_LIBARCHIVE_FUNCTIONS(X) \
    X(version_number)                    \
    X(error_string)                      \
    /* Reading. */                       \
    X(read_new)                          \
    X(read_free)                         \
    X(read_support_filter_gzip)          \
    X(read_support_filter_zstd)          \
    X(read_support_filter_xz)            \
    X(read_support_filter_bzip2)         \
    X(read_support_format_tar)           \
    X(read_support_format_empty)         \
    X(read_support_format_raw)           \
    X(read_open_fd)                      \
    X(read_open_memory)                  \
    X(read_next_header)                  \
    X(read_data)                         \
    X(read_data_block)                   \
    /* Writing. */                       \
    X(write_new)                         \
    X(write_free)                        \
    X(write_set_format_pax_restricted)   \
    X(write_set_bytes_in_last_block)     \
    X(write_open_fd)                     \
    X(write_header)                      \
    X(write_data)                        \
    X(write_close)                       \
    /* Entries. */                       \
    X(entry_new)                         \
    X(entry_free)                        \
    X(entry_pathname)                    \
    X(entry_filetype)                    \
    X(entry_perm)                        \
    X(entry_uid)                         \
    X(entry_gid)                         \
    X(entry_size)                        \
    X(entry_size_is_set)                 \
    X(entry_mtime)                       \
    X(entry_mtime_nsec)                  \
    X(entry_mtime_is_set)                \
    X(entry_hardlink)                    \
    X(entry_symlink)                     \
    X(entry_xattr_reset)                 \
    X(entry_xattr_next)                  \
    X(entry_set_pathname)                \
    X(entry_set_filetype)                \
    X(entry_set_perm)                    \
    X(entry_set_uid)                     \
    X(entry_set_gid)                     \
    X(entry_set_mtime)                   \
    X(entry_set_size)                    \
    X(entry_set_symlink)                 \
    X(entry_set_hardlink)

// The loaded library's functions: lib.read_next_header(a, &entry) calls
// archive_read_next_header. Each field has the type <archive.h> declares, and none is null in a
// table libarchive() returns.
struct LibArchive {
#define STOCKADE_LIBARCHIVE_FIELD(name) decltype(&::archive_##name) name = nullptr;
    STOCKADE_LIBARCHIVE_FUNCTIONS(STOCKADE_LIBARCHIVE_FIELD)
#undef STOCKADE_LIBARCHIVE_FIELD
};

// libarchive, loaded by the first call (from any thread; the later ones return the same table,
// or the same error). kUnavailable, naming the package to install, when the library is missing
// or lacks one of the functions.
Result<const LibArchive*> libarchive();

// Loads `soname` now, whatever was loaded before; never unloaded. libarchive() is this, once,
// with kLibArchiveSoname; the tests load others.
Result<LibArchive> load_libarchive(const char* soname);

}  // namespace stockade::images
