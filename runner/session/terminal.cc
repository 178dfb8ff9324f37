#include "runner/session/terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

namespace stockade::runner {

std::array<bool, 3> terminal_fds() noexcept {
    return {::isatty(0) == 1, ::isatty(1) == 1, ::isatty(2) == 1};
}

RawMode::RawMode(int fd) {
    termios tio{};
    if (::tcgetattr(fd, &tio) != 0) {
        return;
    }
    saved_ = tio;
    fd_ = fd;
    ::cfmakeraw(&tio);
    (void)::tcsetattr(fd, TCSANOW, &tio);
}

RawMode::~RawMode() {
    if (saved_) {
        (void)::tcsetattr(fd_, TCSAFLUSH, &*saved_);
    }
}

void copy_window_size(int from, int to) noexcept {
    winsize ws{};
    if (::ioctl(from, TIOCGWINSZ, &ws) == 0) {
        (void)::ioctl(to, TIOCSWINSZ, &ws);
    }
}

}  // namespace stockade::runner
