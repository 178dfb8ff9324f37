#include "runner/mcp/message_writer.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <string_view>
#include <utility>

#include <spdlog/spdlog.h>

#include "common/log.h"
#include "common/result.h"
#include "common/sigpipe.h"

namespace stockade::mcp {

namespace {

bool is_socket(int fd) {
    struct stat st {};
    return ::fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
}

}  // namespace

MessageWriter::MessageWriter(int fd, std::function<void()> on_broken)
    : fd_(fd), is_socket_(is_socket(fd)), on_broken_(std::move(on_broken)) {}

void MessageWriter::send(std::string line) {
    line.push_back('\n');
    std::lock_guard lock(mu_);
    if (broken_) {
        return;
    }
    std::optional<ScopedSigpipeBlock> sigpipe_blocked;
    if (!is_socket_) {
        sigpipe_blocked.emplace();
    }
    std::string_view rest = line;
    while (!rest.empty()) {
        const ssize_t n = is_socket_ ? ::send(fd_, rest.data(), rest.size(), MSG_NOSIGNAL)
                                     : ::write(fd_, rest.data(), rest.size());
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN) {
                pollfd out{.fd = fd_, .events = POLLOUT, .revents = 0};
                (void)::poll(&out, 1, -1);
                continue;
            }
            const int err = errno;
            static const auto logger = log::get("runner");
            SPDLOG_LOGGER_WARN(logger, "mcp output closed; stopping: {}", errno_string(err));
            broken_ = true;
            if (on_broken_) {
                on_broken_();
            }
            return;
        }
        rest.remove_prefix(static_cast<std::size_t>(n));
    }
}

}  // namespace stockade::mcp
