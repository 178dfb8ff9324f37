// The tools/call of one connection that are running or waiting to run: at most `threads` run
// at once on an Asio thread pool, the rest wait in arrival order; admission is bounded by
// count and by the bytes of their requests, and ids are unique among them.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include <boost/asio/thread_pool.hpp>

#include "runner/mcp/call.h"

namespace stockade::mcp {

struct CallPoolLimits {
    std::size_t threads = 8;                        // calls running at once
    std::size_t max_calls = 256;                    // running + waiting
    std::size_t max_bytes = std::size_t{64} << 20;  // Call::bytes of running + waiting
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

    // Gives the call's key and bytes back, before `run` has returned (to reply only once they
    // are free). Idempotent; a later call under the same key is not touched.
    void release(const Call& call);

private:
    const CallPoolLimits limits_;
    boost::asio::thread_pool threads_;
    mutable std::mutex mu_;
    std::unordered_map<std::string, std::shared_ptr<Call>> calls_;  // guarded by mu_
    std::size_t bytes_ = 0;                                         // guarded by mu_
    bool closed_ = false;                                           // guarded by mu_
};

}  // namespace stockade::mcp
