// What a session may keep on disk of its tool output: spilled results (tool-output/*.txt) and
// process logs (tool-output/process-logs/*.log) share one budget (512 MB by default, the
// seed's cap). When a write would go past it, the session's oldest files that nothing writes
// any more are pruned first; what still does not fit is not written, and the writer says so
// (a log keeps its beginning and, at its end, the tail its process still held in memory,
// which may take the budget past its cap by that tail).
//
// Thread-safe: the session's call threads spill while the process manager's reader thread
// writes logs.
#pragma once

#include <cstdint>
#include <mutex>
#include <set>
#include <string>

namespace stockade::runner {

class OutputBudget {
public:
    // `dir_fd`: the session's tool-output directory (outlives the budget). What it holds now
    // counts from the start (a resumed session).
    OutputBudget(uint64_t cap_bytes, int dir_fd);
    OutputBudget(const OutputBudget&) = delete;
    OutputBudget& operator=(const OutputBudget&) = delete;

    // Takes up to `want` bytes, pruning old files first if it must; returns what it granted.
    uint64_t take(uint64_t want);
    // Counts bytes written whatever the budget: the tail of a log that stopped at the budget
    // (at most a process's ring, 2 MiB), which the budget may exceed by that much.
    void add(uint64_t bytes);
    // A log that is still being written (process-logs/<name>) is never pruned; `false` once
    // its process has ended and its output is drained.
    void set_in_use(const std::string& log_name, bool in_use);

    [[nodiscard]] uint64_t cap() const noexcept { return cap_; }
    [[nodiscard]] uint64_t used();

private:
    // Preconditions: mu_ held. Removes the directory's oldest files not in use until `need`
    // bytes are freed (or nothing is left to remove). What was granted counts as written.
    void prune_locked(uint64_t need);

    const uint64_t cap_;
    const int dir_fd_;
    std::mutex mu_;
    uint64_t used_ = 0;              // guarded by mu_
    std::set<std::string> in_use_;   // guarded by mu_: log names
    bool nothing_to_prune_ = false;  // guarded by mu_: until a log stops being in use
};

}  // namespace stockade::runner
