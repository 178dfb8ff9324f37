#include "runner/session/output_budget.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "common/log.h"
#include "common/syscall.h"
#include "common/unique_fd.h"
#include "tools/text.h"

namespace stockade::runner {

namespace {

constexpr const char* kLogDir = "process-logs";

struct Kept {
    int64_t mtime_ns = 0;
    uint64_t bytes = 0;
    std::string name;  // relative to tool-output
    bool log = false;
};

// The regular files directly in `dir` (relative to the tool-output directory: `prefix`).
void list_files(int dir_fd, const std::string& prefix, bool logs, std::vector<Kept>& out) {
    const int fd = ::openat(dir_fd, prefix.empty() ? "." : prefix.c_str(),
                            O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        return;
    }
    std::unique_ptr<DIR, int (*)(DIR*)> dir(::fdopendir(fd), &::closedir);
    if (!dir) {
        (void)::close(fd);
        return;
    }
    for (;;) {
        const dirent* entry = ::readdir(dir.get());  // NOLINT(concurrency-mt-unsafe): ours only
        if (entry == nullptr) {
            return;
        }
        struct stat st {};
        if (::fstatat(::dirfd(dir.get()), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode)) {
            continue;
        }
        out.push_back(
            {.mtime_ns =
                 static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
             .bytes = static_cast<uint64_t>(st.st_size),
             .name = prefix.empty() ? std::string(entry->d_name) : prefix + "/" + entry->d_name,
             .log = logs});
    }
}

}  // namespace

DiskPool::DiskPool(uint64_t cap_bytes, uint64_t used_bytes, ReclaimFn reclaim)
    : cap_(cap_bytes), reclaim_(std::move(reclaim)), used_(used_bytes) {}

uint64_t DiskPool::take(uint64_t want) {
    std::lock_guard lock(mu_);
    if (used_ + want > cap_ && reclaim_) {
        used_ -= std::min(used_, reclaim_(used_ + want - cap_));
    }
    const uint64_t granted = used_ < cap_ ? std::min(want, cap_ - used_) : 0;
    used_ += granted;
    written_ += granted;
    return granted;
}

void DiskPool::give_back(uint64_t bytes) {
    std::lock_guard lock(mu_);
    used_ -= std::min(used_, bytes);
}

void DiskPool::return_unused(uint64_t bytes) {
    std::lock_guard lock(mu_);
    used_ -= std::min(used_, bytes);
    written_ -= std::min(written_, bytes);
}

uint64_t DiskPool::used() const {
    std::lock_guard lock(mu_);
    return used_;
}

uint64_t DiskPool::written() const {
    std::lock_guard lock(mu_);
    return written_;
}

OutputBudget::OutputBudget(uint64_t cap_bytes, int dir_fd, std::shared_ptr<DiskPool> pool)
    : cap_(cap_bytes), dir_fd_(dir_fd), pool_(std::move(pool)) {
    std::vector<Kept> files;
    list_files(dir_fd_, "", false, files);
    list_files(dir_fd_, kLogDir, true, files);
    for (const Kept& f : files) {
        used_ += f.bytes;
    }
}

uint64_t OutputBudget::used() {
    std::lock_guard lock(mu_);
    return used_;
}

uint64_t OutputBudget::take(uint64_t want) {
    std::lock_guard lock(mu_);
    if (used_ + want > cap_ && !nothing_to_prune_) {
        prune_locked(used_ + want - cap_);
    }
    uint64_t granted = used_ < cap_ ? std::min(want, cap_ - used_) : 0;
    pool_short_ = false;
    if (pool_ && granted > 0) {
        uint64_t pooled = pool_->take(granted);
        if (pooled < granted && !nothing_to_prune_) {
            // The tenant is full: this session's own oldest output goes before its new output
            // is refused (ended sessions' went first, in the pool's reclaim).
            prune_locked(granted - pooled);
            pooled += pool_->take(granted - pooled);
        }
        pool_short_ = pooled < granted;
        granted = pooled;
    }
    used_ += granted;
    return granted;
}

bool OutputBudget::take_all(uint64_t want) {
    const uint64_t granted = take(want);
    if (granted == want) {
        return true;
    }
    give_back(granted);
    return false;
}

void OutputBudget::give_back(uint64_t bytes) {
    std::lock_guard lock(mu_);
    bytes = std::min(used_, bytes);
    used_ -= bytes;
    if (pool_) {
        pool_->return_unused(bytes);
    }
}

std::string OutputBudget::limit_met() {
    std::lock_guard lock(mu_);
    if (pool_short_ && pool_) {
        return fmt::format("its tenant's disk quota ({}, shared by the tenant's sessions)",
                           tools::format_size(pool_->cap()));
    }
    return fmt::format("the session's output budget ({})", tools::format_size(cap_));
}

void OutputBudget::set_in_use(const std::string& log_name, bool in_use) {
    std::lock_guard lock(mu_);
    if (in_use) {
        in_use_.insert(log_name);
    } else if (in_use_.erase(log_name) > 0) {
        nothing_to_prune_ = false;
    }
}

uint64_t OutputBudget::prune_locked(uint64_t need) {
    std::vector<Kept> files;
    list_files(dir_fd_, "", false, files);
    list_files(dir_fd_, kLogDir, true, files);
    std::sort(files.begin(), files.end(), [](const Kept& a, const Kept& b) {
        return std::tie(a.mtime_ns, a.name) < std::tie(b.mtime_ns, b.name);
    });
    uint64_t freed = 0;
    for (const Kept& f : files) {
        if (freed >= need) {
            break;
        }
        if (f.log && in_use_.contains(f.name.substr(std::string(kLogDir).size() + 1))) {
            continue;
        }
        if (::unlinkat(dir_fd_, f.name.c_str(), 0) == 0) {
            freed += f.bytes;
            SPDLOG_LOGGER_INFO(log::get("runner"), "output budget: pruned file=\"{}\" bytes={}",
                               f.name, f.bytes);
        }
    }
    used_ -= std::min(used_, freed);
    nothing_to_prune_ = freed < need;
    if (pool_) {
        pool_->give_back(freed);
    }
    return freed;
}

}  // namespace stockade::runner
