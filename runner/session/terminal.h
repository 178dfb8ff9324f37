// The user's terminal, relayed to the sandbox's private pseudo-terminal: the sandbox never
// holds the host terminal, so it cannot push input into it (TIOCSTI) or change its modes.
#pragma once

#include <termios.h>

#include <array>
#include <optional>

#include "common/result.h"

namespace stockade::runner {

// Which of our fds 0, 1, 2 are terminals.
std::array<bool, 3> terminal_fds() noexcept;

// Puts a terminal into raw mode for the relay and restores it on destruction.
class RawMode {
public:
    RawMode() = default;
    explicit RawMode(int fd);
    RawMode(const RawMode&) = delete;
    RawMode& operator=(const RawMode&) = delete;
    ~RawMode();

private:
    int fd_ = -1;
    std::optional<termios> saved_;
};

// Copies the window size of `from` (a host terminal) to `to` (the pty master).
void copy_window_size(int from, int to) noexcept;

}  // namespace stockade::runner
