#include "runner/mcp/server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <exception>
#include <string_view>
#include <vector>

#include <spdlog/spdlog.h>

#include "common/log.h"
#include "runner/mcp/line_framer.h"
#include "runner/mcp/message_writer.h"

namespace stockade::mcp {

namespace {

constexpr std::size_t kReadChunk = std::size_t{64} << 10;

std::shared_ptr<spdlog::logger> logger() {
    static const auto runner_logger = log::get("runner");
    return runner_logger;
}

// Makes the stop eventfd readable. Async-signal-safe. A failed write means the counter is
// already non-zero (EAGAIN) or the fd is gone: stop is then already signalled or impossible.
void signal_stop(int fd) noexcept {
    const std::uint64_t one = 1;
    if (::write(fd, &one, sizeof one) != static_cast<ssize_t>(sizeof one)) {
        return;
    }
}

void deliver_lines(Connection& connection, std::vector<FramedLine>& lines) {
    for (auto& line : lines) {
        if (line.oversized) {
            connection.reject_oversized();
        } else {
            connection.deliver(line.text);
        }
    }
    lines.clear();
}

// Frames the lines of in_fd and delivers them, until EOF, an error, or stop_fd is readable.
Status read_loop(Connection& connection, std::size_t max_message_bytes, int in_fd, int stop_fd) {
    LineFramer framer(max_message_bytes);
    std::vector<FramedLine> lines;
    std::vector<char> buffer(kReadChunk);
    std::array<pollfd, 2> fds{pollfd{.fd = in_fd, .events = POLLIN, .revents = 0},
                              pollfd{.fd = stop_fd, .events = POLLIN, .revents = 0}};
    for (;;) {
        if (::poll(fds.data(), fds.size(), -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            return errno_error("poll mcp input", errno);
        }
        if (fds[1].revents != 0) {
            SPDLOG_LOGGER_INFO(logger(), "mcp server stop requested");
            return ok_status();
        }
        if (fds[0].revents == 0) {
            continue;
        }
        const ssize_t n = ::read(in_fd, buffer.data(), buffer.size());
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) {
                continue;
            }
            return errno_error("read mcp input", errno);
        }
        if (n == 0) {
            framer.finish(lines);
            deliver_lines(connection, lines);
            SPDLOG_LOGGER_INFO(logger(), "mcp input closed");
            return ok_status();
        }
        framer.feed(std::string_view(buffer.data(), static_cast<std::size_t>(n)), lines);
        deliver_lines(connection, lines);
    }
}

}  // namespace

McpServer::McpServer(ToolHost& host, ServerOptions options)
    : host_(host),
      options_(std::move(options)),
      stop_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    if (!stop_fd_) {
        SPDLOG_LOGGER_ERROR(logger(), "eventfd for mcp stop failed: {}", errno_string(errno));
    }
}

McpServer::~McpServer() = default;

void McpServer::request_stop() noexcept {
    signal_stop(stop_fd_.get());
}

Status McpServer::run(int in_fd, int out_fd) {
    if (!stop_fd_) {
        return Error{
            .code = Errc::kUnavailable, .message = "mcp server: no stop eventfd", .sys_errno = 0};
    }
    const int stop_fd = stop_fd_.get();
    MessageWriter out(out_fd, [stop_fd] { signal_stop(stop_fd); });
    Status status = ok_status();
    {
        Connection connection(host_, options_, out);
        try {
            status = read_loop(connection, options_.max_message_bytes, in_fd, stop_fd);
        } catch (const std::exception& e) {
            status = Error{.code = Errc::kInternal,
                           .message = std::string("mcp server: ") + e.what(),
                           .sys_errno = 0};
        }
    }  // the connection shuts down: its calls are stopped and waited for
    return status;
}

}  // namespace stockade::mcp
