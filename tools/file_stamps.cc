#include "tools/file_stamps.h"

#include <utility>

#include "common/crypto.h"

namespace stockade::tools {

FileStamp FileStamps::stamp(const std::string& path, std::string_view bytes, int64_t mtime_ns) {
    return stamp(
        path, FileStamp{.sha256 = sha256_hex(bytes), .size = bytes.size(), .mtime_ns = mtime_ns});
}

FileStamp FileStamps::stamp(const std::string& path, FileStamp computed) {
    const std::lock_guard lock(mu_);
    stamps_[path] = computed;
    return computed;
}

void FileStamps::restore(const std::string& path, FileStamp stamp) {
    const std::lock_guard lock(mu_);
    stamps_[path] = std::move(stamp);
}

void FileStamps::forget(const std::string& path) {
    const std::lock_guard lock(mu_);
    stamps_.erase(path);
}

std::optional<FileStamp> FileStamps::get(const std::string& path) const {
    const std::lock_guard lock(mu_);
    const auto it = stamps_.find(path);
    if (it == stamps_.end()) {
        return std::nullopt;
    }
    return it->second;
}

Freshness FileStamps::check(const std::string& path, std::string_view current_bytes) const {
    const std::optional<FileStamp> known = get(path);
    if (!known) {
        return Freshness::kUnread;
    }
    // The size comparison is a cheap early exit; the hash decides.
    if (known->size != current_bytes.size() || known->sha256 != sha256_hex(current_bytes)) {
        return Freshness::kExternallyModified;
    }
    return Freshness::kClean;
}

Freshness FileStamps::check(const std::string& path, uint64_t size, std::string_view sha256) const {
    const std::optional<FileStamp> known = get(path);
    if (!known) {
        return Freshness::kUnread;
    }
    return known->size == size && known->sha256 == sha256 ? Freshness::kClean
                                                          : Freshness::kExternallyModified;
}

}  // namespace stockade::tools
