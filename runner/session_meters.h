// Counters the sessions of one tenant share, for serve --http's /metrics. The host owns them
// and hands each session a pointer; every member is updated lock-free.
#pragma once

#include <atomic>
#include <cstdint>

namespace stockade::runner {

struct SessionMeters {
    // Workers started after a session's first: after a crash, a kill, or a hung call.
    std::atomic<uint64_t> worker_restarts{0};
    // Commands running now in the sessions' sandboxes (bash calls and background processes).
    std::atomic<int64_t> processes{0};
};

}  // namespace stockade::runner
