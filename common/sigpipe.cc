#include "common/sigpipe.h"

#include <pthread.h>

#include <cerrno>
#include <ctime>

namespace stockade {

namespace {

sigset_t sigpipe_only() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    return set;
}

bool sigpipe_pending() {
    sigset_t pending;
    sigemptyset(&pending);
    return sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
}

}  // namespace

ScopedSigpipeBlock::ScopedSigpipeBlock() noexcept {
    const sigset_t block = sigpipe_only();
    active_ = pthread_sigmask(SIG_BLOCK, &block, &old_) == 0;
    was_pending_ = active_ && sigpipe_pending();
}

ScopedSigpipeBlock::~ScopedSigpipeBlock() {
    if (!active_) {
        return;
    }
    // Only a signal our writes raised is ours to take: one pending before, or one the thread
    // had blocked anyway, is left for whoever expects it.
    if (sigismember(&old_, SIGPIPE) == 0 && !was_pending_ && sigpipe_pending()) {
        const sigset_t set = sigpipe_only();
        const timespec no_wait{};
        while (sigtimedwait(&set, nullptr, &no_wait) < 0 && errno == EINTR) {
        }
    }
    (void)pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

}  // namespace stockade
