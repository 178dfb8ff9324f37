// FileStamps: the session's record of what the agent last saw of each file (TOOL_PROTOCOL
// §1.4). read, write and edit stamp a file on success; write and edit refuse to touch an
// existing file that is unstamped (never read) or whose bytes no longer match the stamp
// (changed on disk since). Rebuilt on resume from FileRead/FileModified events via restore().
//
// Keys are the absolute paths the model sees (workspace::ResolvedPath::display).
// Thread-safe: calls may come from several tool threads at once.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace stockade::tools {

struct FileStamp {
    std::string sha256{};  // hex digest of the bytes as read or written
    uint64_t size = 0;
    int64_t mtime_ns = 0;

    bool operator==(const FileStamp&) const = default;
};

enum class Freshness : uint8_t {
    kUnread,              // no stamp: the agent has not read the file this session
    kClean,               // the bytes on disk are the bytes the agent last saw
    kExternallyModified,  // the bytes changed since
};

class FileStamps {
public:
    // Records `bytes` (the whole file) as what the agent now knows of `path`.
    FileStamp stamp(const std::string& path, std::string_view bytes, int64_t mtime_ns);
    // The same with the bytes' digest already computed (sha256_hex of them, size their length).
    FileStamp stamp(const std::string& path, FileStamp computed);
    // Re-installs a stamp recorded earlier (resume from the event log).
    void restore(const std::string& path, FileStamp stamp);
    void forget(const std::string& path);

    [[nodiscard]] std::optional<FileStamp> get(const std::string& path) const;
    // Compares the file's current bytes with the stamp (by content hash, not mtime).
    [[nodiscard]] Freshness check(const std::string& path, std::string_view current_bytes) const;
    // The same with the current bytes' digest already computed (sha256_hex) and their size.
    [[nodiscard]] Freshness check(const std::string& path, uint64_t size,
                                  std::string_view sha256) const;

private:
    mutable std::mutex mu_;
    std::unordered_map<std::string, FileStamp> stamps_;  // guarded by mu_
};

}  // namespace stockade::tools
