// Writing to a pipe whose reader is gone without dying of SIGPIPE, in a process that may not
// ignore the signal for everyone (the worker's children must start with the default).
#pragma once

#include <csignal>

namespace stockade {

// Blocks SIGPIPE in the calling thread for the scope, so a closed reader is an EPIPE, and on
// leaving consumes a SIGPIPE the scope's writes left pending (not one that was pending before)
// and restores the mask. Threads that run tools keep their mask, and so do the processes they
// start.
//
//   { ScopedSigpipeBlock guard; n = ::write(fd, data, size); }  // EPIPE, never a signal
class ScopedSigpipeBlock {
public:
    ScopedSigpipeBlock() noexcept;
    ~ScopedSigpipeBlock();
    ScopedSigpipeBlock(const ScopedSigpipeBlock&) = delete;
    ScopedSigpipeBlock& operator=(const ScopedSigpipeBlock&) = delete;
    ScopedSigpipeBlock(ScopedSigpipeBlock&&) = delete;
    ScopedSigpipeBlock& operator=(ScopedSigpipeBlock&&) = delete;

private:
    sigset_t old_{};
    bool active_ = false;
    bool was_pending_ = false;
};

}  // namespace stockade
