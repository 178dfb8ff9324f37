#include "runner/mcp/call_pool.h"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace stockade::mcp {
namespace {

using Admission = CallPool::Admission;

std::shared_ptr<Call> make_call(const std::string& key, std::size_t bytes = 1) {
    auto call = std::make_shared<Call>();
    call->key = key;
    call->bytes = bytes;
    return call;
}

// Calls that block until the test lets them go, recording the order they started in and
// whether each saw its stop requested.
class Gate {
public:
    CallPool::RunFn run() {
        return [this](const std::shared_ptr<Call>& call) {
            std::unique_lock lock(mu_);
            started_.push_back(call->key);
            cv_.notify_all();
            cv_.wait(lock, call->stop.get_token(), [&] { return open_; });
            if (call->stop.stop_requested()) {
                stopped_.push_back(call->key);
            }
        };
    }
    // Waits until `n` calls have started (or a second has passed) and returns them.
    std::vector<std::string> started(std::size_t n) {
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, std::chrono::seconds(5), [&] { return started_.size() >= n; });
        return started_;
    }
    std::vector<std::string> stopped() {
        std::lock_guard lock(mu_);
        return stopped_;
    }
    void open() {
        std::lock_guard lock(mu_);
        open_ = true;
        cv_.notify_all();
    }

private:
    std::mutex mu_;
    std::condition_variable_any cv_;
    std::vector<std::string> started_;
    std::vector<std::string> stopped_;
    bool open_ = false;
};

TEST(CallPoolTest, RunsAtMostItsThreadsAtOnceAndTheRestInArrivalOrder) {
    Gate gate;
    CallPool pool({.threads = 2, .max_calls = 16, .max_bytes = 1 << 20});
    for (const char* key : {"a", "b", "c", "d"}) {
        EXPECT_EQ(pool.submit(make_call(key), gate.run()).admission, Admission::kAdmitted);
    }
    EXPECT_EQ(gate.started(2).size(), 2U);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(gate.started(2).size(), 2U) << "a third call ran beside two blocked ones";
    EXPECT_NE(pool.find("d"), nullptr);  // waiting calls can be found (and cancelled)
    gate.open();
    const auto order = gate.started(4);
    ASSERT_EQ(order.size(), 4U);
    EXPECT_EQ(std::vector<std::string>(order.begin() + 2, order.end()),
              (std::vector<std::string>{"c", "d"}));
}

TEST(CallPoolTest, AnIdInUseIsRefusedUntilItsCallIsReleased) {
    Gate gate;
    CallPool pool({.threads = 1, .max_calls = 16, .max_bytes = 1 << 20});
    auto first = make_call("7");
    ASSERT_EQ(pool.submit(first, gate.run()).admission, Admission::kAdmitted);
    gate.started(1);
    EXPECT_EQ(pool.submit(make_call("7"), gate.run()).admission, Admission::kDuplicateId);
    pool.release(*first);  // the reply is about to leave: the id is free again
    EXPECT_EQ(pool.find("7"), nullptr);
    auto second = make_call("7");
    EXPECT_EQ(pool.submit(second, gate.run()).admission, Admission::kAdmitted);
    pool.release(*first);  // idempotent: the later call under the same id stays
    EXPECT_EQ(pool.find("7"), second);
    gate.open();
}

TEST(CallPoolTest, RefusesPastItsCountOrItsBytesAndSaysHowFullItIs) {
    Gate gate;
    CallPool pool({.threads = 1, .max_calls = 3, .max_bytes = 100});
    ASSERT_EQ(pool.submit(make_call("a", 60), gate.run()).admission, Admission::kAdmitted);
    const auto by_bytes = pool.submit(make_call("b", 41), gate.run());
    EXPECT_EQ(by_bytes.admission, Admission::kFull);
    EXPECT_EQ(by_bytes.calls, 1U);
    EXPECT_EQ(by_bytes.bytes, 60U);
    ASSERT_EQ(pool.submit(make_call("c", 40), gate.run()).admission, Admission::kAdmitted);
    ASSERT_EQ(pool.submit(make_call("d", 0), gate.run()).admission, Admission::kAdmitted);
    EXPECT_EQ(pool.submit(make_call("e", 0), gate.run()).admission, Admission::kFull);
    gate.open();
    pool.shutdown();
    EXPECT_EQ(pool.find("a"), nullptr);
}

TEST(CallPoolTest, ShutdownStopsRunningAndWaitingCallsThenRefusesNewOnes) {
    Gate gate;
    CallPool pool({.threads = 1, .max_calls = 16, .max_bytes = 1 << 20});
    ASSERT_EQ(pool.submit(make_call("running"), gate.run()).admission, Admission::kAdmitted);
    ASSERT_EQ(pool.submit(make_call("waiting"), gate.run()).admission, Admission::kAdmitted);
    gate.started(1);
    EXPECT_EQ(pool.shutdown(), 2U);  // returns only when both have returned
    EXPECT_EQ(gate.stopped(), (std::vector<std::string>{"running", "waiting"}));
    EXPECT_EQ(pool.submit(make_call("late"), gate.run()).admission, Admission::kClosed);
    EXPECT_EQ(pool.shutdown(), 0U);
}

TEST(CallPoolTest, StartsThreadsAsCallsNeedThemAndEndsThemWhenIdle) {
    Gate gate;
    CallPool pool({.threads = 3,
                   .max_calls = 16,
                   .max_bytes = 1 << 20,
                   .linger = std::chrono::milliseconds(20)});
    EXPECT_EQ(pool.threads(), 0U) << "an idle session holds no thread";
    for (const char* key : {"a", "b", "c", "d", "e"}) {
        ASSERT_EQ(pool.submit(make_call(key), gate.run()).admission, Admission::kAdmitted);
    }
    EXPECT_EQ(gate.started(3).size(), 3U);
    EXPECT_EQ(pool.threads(), 3U) << "no more than its limit";
    gate.open();
    EXPECT_EQ(gate.started(5).size(), 5U);
    // Idle past the linger, every thread ends; a later call starts one again.
    for (int i = 0; i < 500 && pool.threads() > 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(pool.threads(), 0U);
    ASSERT_EQ(pool.submit(make_call("f"), gate.run()).admission, Admission::kAdmitted);
    EXPECT_EQ(gate.started(6).size(), 6U);
    pool.shutdown();  // joins every thread
    EXPECT_EQ(pool.threads(), 0U);
}

TEST(CallPoolTest, ReusesAnIdleThreadRatherThanStartingAnother) {
    Gate gate;
    gate.open();
    CallPool pool({.threads = 4, .max_calls = 16, .max_bytes = 1 << 20});
    for (int i = 0; i < 20; ++i) {
        ASSERT_EQ(pool.submit(make_call(std::to_string(i)), gate.run()).admission,
                  Admission::kAdmitted);
        gate.started(static_cast<std::size_t>(i) + 1);
        for (int j = 0; j < 500 && pool.idle_threads() < pool.threads(); ++j) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    }
    EXPECT_EQ(pool.threads(), 1U) << "calls one after another need one thread";
}

}  // namespace
}  // namespace stockade::mcp
