// Counters the sessions of one tenant share, for serve --http's /metrics. The host owns them
// and hands each session a pointer; every member is updated lock-free.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "policy/decision.h"

namespace stockade::runner {

struct SessionMeters {
    // Workers started after a session's first: after a crash, a kill, or a hung call.
    std::atomic<uint64_t> worker_restarts{0};
    // Commands running now in the sessions' sandboxes (bash calls and background processes).
    std::atomic<int64_t> processes{0};
    // The policy's decisions on calls (an ask counts whatever the user then answers).
    std::array<std::atomic<uint64_t>, 3> decisions{};  // by policy::Decision

    void decided(policy::Decision decision) noexcept {
        decisions.at(static_cast<std::size_t>(decision)).fetch_add(1, std::memory_order_relaxed);
    }
    [[nodiscard]] uint64_t decided_count(policy::Decision decision) const noexcept {
        return decisions.at(static_cast<std::size_t>(decision)).load(std::memory_order_relaxed);
    }
};

}  // namespace stockade::runner
