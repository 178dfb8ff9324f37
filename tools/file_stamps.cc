#include "tools/file_stamps.h"

#include <utility>

#include "common/crypto.h"

namespace stockade::tools {

FileStamp FileStamps::stamp(const std::string& path, std::string_view bytes, int64_t mtime_ns) {
    FileStamp s{.sha256 = sha256_hex(bytes), .size = bytes.size(), .mtime_ns = mtime_ns};
    const std::lock_guard lock(mu_);
    stamps_[path] = s;
    return s;
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

}  // namespace stockade::tools
