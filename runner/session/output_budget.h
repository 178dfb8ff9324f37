// What a session may keep on disk of its tool output: spilled results (tool-output/*.txt) and
// process logs (tool-output/process-logs/*.log) share one budget (512 MB by default, the
// seed's cap). Every byte written there is taken from it first, the notes a log writes about
// itself and the tail it adds at its end included, so what the directory holds never exceeds
// the cap. When a write would go past it, the session's oldest files that nothing writes any
// more are pruned first; what still does not fit is not written, and the writer says so.
//
// Thread-safe: the session's call threads spill while the process manager's reader thread
// writes logs.
//
// Under serve --http the sessions of one tenant also draw on a DiskPool: what all of them may
// keep at once, the tool output of sessions that ended included.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>

namespace stockade::runner {

// The disk one tenant's sessions share. Every byte a session's budget grants is taken from it,
// and given back when that session prunes it; the tool output of sessions that ended stays
// counted until `reclaim` (the tenant's state directory pruned oldest session first, sessions
// in use skipped) removes it. Thread-safe.
class DiskPool {
public:
    // `reclaim(need)`: frees at least `need` bytes of ended sessions if it can; returns what it
    // freed. Called with the pool's lock held (so never twice at once).
    using ReclaimFn = std::function<uint64_t(uint64_t need)>;
    DiskPool(uint64_t cap_bytes, uint64_t used_bytes, ReclaimFn reclaim);
    DiskPool(const DiskPool&) = delete;
    DiskPool& operator=(const DiskPool&) = delete;

    // Takes up to `want` bytes, reclaiming ended sessions' output first if it must.
    uint64_t take(uint64_t want);
    void give_back(uint64_t bytes);      // deleted: no longer held
    void return_unused(uint64_t bytes);  // taken and then not written: neither held nor written

    [[nodiscard]] uint64_t cap() const noexcept { return cap_; }
    [[nodiscard]] uint64_t used() const;
    [[nodiscard]] uint64_t written() const;  // every byte granted since the start, less unused

private:
    const uint64_t cap_;
    const ReclaimFn reclaim_;
    mutable std::mutex mu_;
    uint64_t used_;         // guarded by mu_
    uint64_t written_ = 0;  // guarded by mu_
};

class OutputBudget {
public:
    // `dir_fd`: the session's tool-output directory (outlives the budget). What it holds now
    // counts from the start (a resumed session). `pool`: the tenant's, or null.
    OutputBudget(uint64_t cap_bytes, int dir_fd, std::shared_ptr<DiskPool> pool = nullptr);
    OutputBudget(const OutputBudget&) = delete;
    OutputBudget& operator=(const OutputBudget&) = delete;

    // Takes up to `want` bytes, pruning old files first if it must; returns what it granted.
    uint64_t take(uint64_t want);
    // Takes all of `want` or nothing (a spilled result is written whole or not at all).
    bool take_all(uint64_t want);
    // Returns bytes taken and then not written (a note shorter than the room taken for it).
    void give_back(uint64_t bytes);
    // A log that is still being written (process-logs/<name>) is never pruned; `false` once
    // its process has ended and its output is drained.
    void set_in_use(const std::string& log_name, bool in_use);

    [[nodiscard]] uint64_t cap() const noexcept { return cap_; }
    [[nodiscard]] uint64_t used();
    // Which limit a write that did not fit met, for the message that says so: "the session's
    // output budget (512.0 MiB)" or "its tenant's disk quota (...)".
    [[nodiscard]] std::string limit_met();

private:
    // Preconditions: mu_ held. Removes the directory's oldest files not in use until `need`
    // bytes are freed (or nothing is left to remove). What was granted counts as written.
    // Returns what it freed (given back to the pool).
    uint64_t prune_locked(uint64_t need);

    const uint64_t cap_;
    const int dir_fd_;
    const std::shared_ptr<DiskPool> pool_;
    std::mutex mu_;
    bool pool_short_ = false;        // guarded by mu_: the pool, not the cap, refused last
    uint64_t used_ = 0;              // guarded by mu_
    std::set<std::string> in_use_;   // guarded by mu_: log names
    bool nothing_to_prune_ = false;  // guarded by mu_: until a log stops being in use
};

}  // namespace stockade::runner
