// Tar archives built in memory with libarchive's writer, for the images tests: a layer, a
// root file system, an OCI layout or a docker-archive made of such entries.
#pragma once

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace stockade::images {

constexpr la_int64_t kMtime = 1'700'000'000;

// One archive entry; a regular file unless `type` says otherwise.
struct Entry {
    std::string path;
    mode_t type = AE_IFREG;
    mode_t perm = 0644;
    std::string data{};
    std::string symlink{};
    std::string hardlink{};
    std::vector<std::pair<std::string, std::string>> xattrs{};
    std::size_t zeros = 0;  // that many zero bytes of data instead of `data`
    la_int64_t uid = 1234;
    la_int64_t gid = 5678;
};

inline Entry dir(std::string path, mode_t perm = 0755) {
    return Entry{.path = std::move(path), .type = AE_IFDIR, .perm = perm};
}
inline Entry file(std::string path, std::string data = "x", mode_t perm = 0644) {
    return Entry{.path = std::move(path), .perm = perm, .data = std::move(data)};
}
inline Entry link(std::string path, std::string target) {
    return Entry{
        .path = std::move(path), .type = AE_IFLNK, .perm = 0777, .symlink = std::move(target)};
}
inline Entry hardlink(std::string path, std::string target) {
    return Entry{.path = std::move(path), .hardlink = std::move(target)};
}

// The entries, owned by root as a real image's are.
inline std::vector<Entry> owned_by_root(std::vector<Entry> entries) {
    for (Entry& e : entries) {
        e.uid = 0;
        e.gid = 0;
    }
    return entries;
}

enum class Compression { kNone, kGzip, kZstd };

// A pax tar of `entries`, compressed as asked, in memory.
inline std::string make_tar(const std::vector<Entry>& entries,
                            Compression compression = Compression::kNone) {
    std::string out;
    archive* a = archive_write_new();
    EXPECT_EQ(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
    switch (compression) {
        case Compression::kNone:
            break;
        case Compression::kGzip:
            EXPECT_EQ(archive_write_add_filter_gzip(a), ARCHIVE_OK);
            break;
        case Compression::kZstd:
            EXPECT_EQ(archive_write_add_filter_zstd(a), ARCHIVE_OK);
            break;
    }
    auto write = [](archive*, void* client, const void* buf, std::size_t n) -> la_ssize_t {
        static_cast<std::string*>(client)->append(static_cast<const char*>(buf), n);
        return static_cast<la_ssize_t>(n);
    };
    // No padding after the last block: a zstd reader takes trailing zeros for a broken frame.
    EXPECT_EQ(archive_write_set_bytes_in_last_block(a, 1), ARCHIVE_OK);
    EXPECT_EQ(archive_write_open(a, &out, nullptr, write, nullptr), ARCHIVE_OK);
    for (const Entry& e : entries) {
        archive_entry* entry = archive_entry_new();
        archive_entry_set_pathname(entry, e.path.c_str());
        archive_entry_set_mtime(entry, kMtime, 0);
        archive_entry_set_uid(entry, e.uid);
        archive_entry_set_gid(entry, e.gid);
        if (!e.hardlink.empty()) {
            archive_entry_set_hardlink(entry, e.hardlink.c_str());
            archive_entry_set_filetype(entry, AE_IFREG);
            archive_entry_set_perm(entry, e.perm);
            archive_entry_set_size(entry, 0);
        } else {
            archive_entry_set_filetype(entry, e.type);
            archive_entry_set_perm(entry, e.perm);
            if (e.type == AE_IFLNK) {
                archive_entry_set_symlink(entry, e.symlink.c_str());
            }
            if (e.type == AE_IFCHR || e.type == AE_IFBLK) {
                archive_entry_set_rdev(entry, makedev(1, 3));
            }
            const std::size_t size =
                e.type == AE_IFREG ? (e.zeros > 0 ? e.zeros : e.data.size()) : 0;
            archive_entry_set_size(entry, static_cast<la_int64_t>(size));
        }
        for (const auto& [key, value] : e.xattrs) {
            archive_entry_xattr_add_entry(entry, key.c_str(), value.data(), value.size());
        }
        EXPECT_EQ(archive_write_header(a, entry), ARCHIVE_OK) << archive_error_string(a);
        if (e.zeros > 0) {
            const std::string block(1 << 20, '\0');
            for (std::size_t done = 0; done < e.zeros; done += block.size()) {
                const std::size_t n = std::min(block.size(), e.zeros - done);
                EXPECT_EQ(archive_write_data(a, block.data(), n), static_cast<la_ssize_t>(n));
            }
        } else if (!e.data.empty()) {
            EXPECT_EQ(archive_write_data(a, e.data.data(), e.data.size()),
                      static_cast<la_ssize_t>(e.data.size()));
        }
        archive_entry_free(entry);
    }
    EXPECT_EQ(archive_write_close(a), ARCHIVE_OK);
    EXPECT_EQ(archive_write_free(a), ARCHIVE_OK);
    return out;
}

}  // namespace stockade::images
