#include "runner/mcp/call_pool.h"

#include <algorithm>
#include <system_error>
#include <utility>

namespace stockade::mcp {

CallPool::CallPool(CallPoolLimits limits) : limits_(limits) {}

CallPool::~CallPool() {
    shutdown();
}

CallPool::Submitted CallPool::submit(std::shared_ptr<Call> call, RunFn run) {
    std::vector<std::thread> ended;
    {
        std::lock_guard lock(mu_);
        Submitted decided{
            .admission = Admission::kAdmitted, .calls = calls_.size(), .bytes = bytes_};
        if (closed_) {
            decided.admission = Admission::kClosed;
        } else if (calls_.contains(call->key)) {
            decided.admission = Admission::kDuplicateId;
        } else if (calls_.size() >= limits_.max_calls || bytes_ + call->bytes > limits_.max_bytes) {
            decided.admission = Admission::kFull;
        }
        if (decided.admission != Admission::kAdmitted) {
            return decided;
        }
        ended = take_ended();
        // A thread only when every idle one has a task already: the queue holds the tasks no
        // thread has taken yet.
        const bool spawn = queue_.size() + 1 > idle_ &&
                           running_.size() < std::max<std::size_t>(1, limits_.threads);
        if (spawn) {
            try {
                std::thread thread([this] { work(); });
                const auto id = thread.get_id();
                running_.emplace(id, std::move(thread));
            } catch (const std::system_error&) {
                if (running_.empty()) {  // nothing would ever run it: refuse it as too many
                    decided.admission = Admission::kFull;
                    return decided;
                }  // else it waits for a running thread
            }
        }
        calls_.emplace(call->key, call);
        bytes_ += call->bytes;
        queue_.emplace_back([this, call = std::move(call), run = std::move(run)] {
            run(call);
            release(*call);
        });
    }
    queued_.notify_one();
    for (auto& thread : ended) {
        thread.join();
    }
    return {};
}

void CallPool::work() {
    std::unique_lock lock(mu_);
    for (;;) {
        if (queue_.empty()) {
            if (closed_) {
                break;
            }
            ++idle_;
            const bool woken = queued_.wait_for(lock, limits_.linger,
                                                [this] { return !queue_.empty() || closed_; });
            --idle_;
            if (!woken) {
                break;  // idle for the whole linger
            }
            continue;
        }
        std::function<void()> task = std::move(queue_.front());
        queue_.pop_front();
        lock.unlock();
        task();
        task = nullptr;  // the call's captures go before the lock is taken again
        lock.lock();
    }
    // The std::thread of this very thread cannot be joined here: the next submit or the
    // shutdown does it.
    auto self = running_.extract(std::this_thread::get_id());
    ended_threads_.push_back(std::move(self.mapped()));
    ended_.notify_all();
}

std::vector<std::thread> CallPool::take_ended() {
    return std::exchange(ended_threads_, {});
}

std::size_t CallPool::threads() const {
    std::lock_guard lock(mu_);
    return running_.size();
}

std::size_t CallPool::idle_threads() const {
    std::lock_guard lock(mu_);
    return idle_;
}

void CallPool::release(const Call& call) {
    std::lock_guard lock(mu_);
    if (auto it = calls_.find(call.key); it != calls_.end() && it->second.get() == &call) {
        calls_.erase(it);
        bytes_ -= call.bytes;
    }
}

std::shared_ptr<Call> CallPool::find(const std::string& key) const {
    std::lock_guard lock(mu_);
    auto it = calls_.find(key);
    return it == calls_.end() ? nullptr : it->second;
}

std::size_t CallPool::size() const {
    std::lock_guard lock(mu_);
    return calls_.size();
}

std::size_t CallPool::shutdown() {
    std::size_t stopped = 0;
    {
        std::lock_guard lock(mu_);
        if (closed_) {
            return 0;
        }
        closed_ = true;
        for (auto& [key, call] : calls_) {
            call->stop.request_stop();
            ++stopped;
        }
    }
    queued_.notify_all();
    std::vector<std::thread> ended;
    {
        std::unique_lock lock(mu_);
        ended_.wait(lock, [this] { return running_.empty(); });
        ended = take_ended();
    }
    for (auto& thread : ended) {
        thread.join();
    }
    return stopped;
}

}  // namespace stockade::mcp
