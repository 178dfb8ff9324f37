#include "runner/mcp/call_pool.h"

#include <algorithm>
#include <utility>

#include <boost/asio/post.hpp>

namespace stockade::mcp {

CallPool::CallPool(CallPoolLimits limits)
    : limits_(limits), threads_(std::max<std::size_t>(1, limits.threads)) {}

CallPool::~CallPool() {
    shutdown();
}

CallPool::Submitted CallPool::submit(std::shared_ptr<Call> call, RunFn run) {
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
        calls_.emplace(call->key, call);
        bytes_ += call->bytes;
    }
    boost::asio::post(threads_, [this, call = std::move(call), run = std::move(run)] {
        run(call);
        release(*call);
    });
    return {};
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
    threads_.join();
    return stopped;
}

}  // namespace stockade::mcp
