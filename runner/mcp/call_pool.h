// The tools/call of one connection that are running or waiting to run: at most `threads` run
// at once, the rest wait in arrival order; admission is bounded by count and by the bytes of
// their requests, and ids are unique among them.
//
// Threads start when calls need them and end after a while without work: an idle session holds
// none. That matters to a server of many sessions beyond the memory: every sandbox starts with
// a fork-like clone, whose cost grows with the supervisor's mappings, and each thread's stack is
// some of them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "runner/mcp/call.h"

namespace stockade::mcp {

struct CallPoolLimits {
    std::size_t threads = 8;                        // calls running at once
    std::size_t max_calls = 256;                    // running + waiting
    std::size_t max_bytes = std::size_t{64} << 20;  // Call::bytes of running + waiting
    std::chrono::milliseconds linger{10'000};       // an idle thread ends after this long
};

class CallPool {
public:
    explicit CallPool(CallPoolLimits limits);
    ~CallPool();  // shutdown()
    CallPool(const CallPool&) = delete;
    CallPool& operator=(const CallPool&) = delete;

    using RunFn = std::function<void(const std::shared_ptr<Call>&)>;

    enum class Admission { kAdmitted, kDuplicateId, kFull, kClosed };
    struct Submitted {
        Admission admission = Admission::kAdmitted;
        std::size_t calls = 0;  // running + waiting when it was decided
        std::size_t bytes = 0;
    };

    // Queues `run(call)`. The call can be found by its key, and counts against the limits,
    // from now until release(call) or until `run` returns.
    Submitted submit(std::shared_ptr<Call> call, RunFn run);

    // The call running or waiting under `key`, or null.
    std::shared_ptr<Call> find(const std::string& key) const;

    // Calls running or waiting.
    [[nodiscard]] std::size_t size() const;

    // Requests stop on every call (one still waiting then starts with its stop requested, and
    // `run` should return at once), waits for all of them, and refuses later submits. Returns
    // how many calls it stopped.
    std::size_t shutdown();

    // Threads alive now, running or idle, and of them those idle (for tests and metrics).
    [[nodiscard]] std::size_t threads() const;
    [[nodiscard]] std::size_t idle_threads() const;

    // Gives the call's key and bytes back, before `run` has returned (to reply only once they
    // are free). Idempotent; a later call under the same key is not touched.
    void release(const Call& call);

private:
    void work();                            // a thread's loop: queued tasks, until idle too long
    std::vector<std::thread> take_ended();  // mu_ held: the threads that ended, to join unlocked

    const CallPoolLimits limits_;
    mutable std::mutex mu_;
    std::condition_variable queued_;  // a task was queued, or the pool closed
    std::condition_variable ended_;   // a thread ended
    std::unordered_map<std::string, std::shared_ptr<Call>> calls_;  // guarded by mu_
    std::size_t bytes_ = 0;                                         // guarded by mu_
    bool closed_ = false;                                           // guarded by mu_
    std::deque<std::function<void()>> queue_;                       // guarded by mu_
    std::unordered_map<std::thread::id, std::thread> running_;      // guarded by mu_
    std::vector<std::thread> ended_threads_;                        // guarded by mu_
    std::size_t idle_ = 0;  // threads waiting for a task; guarded by mu_
};

}  // namespace stockade::mcp
