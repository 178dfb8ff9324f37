// FileLocks: one mutex per path, so that concurrent write/edit calls on the same file run one
// after the other (read-modify-write under the lock), while different files proceed in
// parallel. Entries are dropped when the last holder or waiter lets go.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace stockade::tools {

class FileLocks {
    struct Entry {
        std::mutex mu;
        size_t users = 0;  // guarded by FileLocks::mu_
    };

public:
    // Holds the path's mutex until destroyed.
    class Guard {
    public:
        Guard(Guard&& other) noexcept;
        Guard& operator=(Guard&&) = delete;
        Guard(const Guard&) = delete;
        Guard& operator=(const Guard&) = delete;
        ~Guard();

    private:
        friend class FileLocks;
        Guard(FileLocks* owner, std::string path, Entry* entry);

        FileLocks* owner_ = nullptr;
        std::string path_;
        Entry* entry_ = nullptr;
    };

    FileLocks() = default;
    FileLocks(const FileLocks&) = delete;
    FileLocks& operator=(const FileLocks&) = delete;
    ~FileLocks() = default;

    // Blocks until the path is free. Keys are the absolute display paths.
    [[nodiscard]] Guard lock(const std::string& path);

    // How many paths currently have a holder or a waiter (for tests).
    [[nodiscard]] size_t active() const;

private:
    void release(const std::string& path, Entry* entry);

    mutable std::mutex mu_;
    std::unordered_map<std::string, std::unique_ptr<Entry>> entries_;  // guarded by mu_
};

}  // namespace stockade::tools
