#include "tools/file_locks.h"

#include <utility>

namespace stockade::tools {

FileLocks::Guard::Guard(FileLocks* owner, std::string path, Entry* entry)
    : owner_(owner), path_(std::move(path)), entry_(entry) {}

FileLocks::Guard::Guard(Guard&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)),
      path_(std::move(other.path_)),
      entry_(std::exchange(other.entry_, nullptr)) {}

FileLocks::Guard::~Guard() {
    if (owner_ != nullptr) {
        owner_->release(path_, entry_);
    }
}

FileLocks::Guard FileLocks::lock(const std::string& path) {
    Entry* entry = nullptr;
    {
        const std::lock_guard lock(mu_);
        auto& slot = entries_[path];
        if (!slot) {
            slot = std::make_unique<Entry>();
        }
        ++slot->users;
        entry = slot.get();
    }
    // Outside mu_: waiting here must not block other paths.
    entry->mu.lock();
    return {this, path, entry};
}

void FileLocks::release(const std::string& path, Entry* entry) {
    entry->mu.unlock();
    const std::lock_guard lock(mu_);
    if (--entry->users == 0) {
        entries_.erase(path);
    }
}

size_t FileLocks::active() const {
    const std::lock_guard lock(mu_);
    return entries_.size();
}

}  // namespace stockade::tools
