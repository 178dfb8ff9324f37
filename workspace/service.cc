#include "workspace/service.h"

#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <sys/signalfd.h>

#include <algorithm>
#include <array>
#include <csignal>

#include <fmt/format.h>

#include "common/defer.h"
#include "common/log.h"
#include "common/result.h"
#include "common/syscall.h"
#include "common/unique_fd.h"
#include "workspace/channel.h"

namespace stockade::workspace {

namespace {

template <class... Ts>
struct Overloaded : Ts... {
    using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

// Wraps a Result<T> of the workspace into the reply's Result<ReplyValue>.
template <class T>
Result<channel::ReplyValue> as_reply(Result<T> r) {
    if (!r) {
        return std::move(r).error();
    }
    return channel::ReplyValue{std::move(r).value()};
}

Result<channel::ReplyValue> dispatch(Workspace& ws, channel::RequestArgs& args) {
    using namespace channel;  // NOLINT(google-build-using-namespace): the message types
    return std::visit(
        Overloaded{
            [](HelloArgs&) -> Result<ReplyValue> { return ReplyValue{HelloResult{}}; },
            [&](StatArgs& a) { return as_reply(ws.stat(a.root, a.path)); },
            [&](ReadArgs& a) { return as_reply(ws.read(a.root, a.path, a.max_bytes)); },
            [&](WriteRequest& a) { return as_reply(ws.write(a)); },
            [&](MkdirsArgs& a) -> Result<ReplyValue> {
                Status st = ws.make_dirs(a.root, a.path);
                if (!st) {
                    return std::move(st).error();
                }
                return ReplyValue{MkdirsResult{}};
            },
            [&](ListArgs& a) {
                return as_reply(ws.list(a.root, a.path, static_cast<size_t>(a.max_entries)));
            },
            [&](RgRequest& a) { return as_reply(ws.run_rg(a)); },
            [&](SpawnRequest& a) { return as_reply(ws.spawn(a)); },
            [&](SignalArgs& a) -> Result<ReplyValue> {
                ASSIGN_OR_RETURN(
                    bool delivered,
                    ws.signal_group(ProcessGroupRef{.epoch = 0, .pgid = a.pgid}, a.signal));
                return ReplyValue{SignalResult{delivered}};
            },
            [&](CommandsArgs&) -> Result<ReplyValue> {
                ASSIGN_OR_RETURN(std::vector<std::string> names, ws.path_commands());
                return ReplyValue{CommandsResult{std::move(names)}};
            },
            [&](RealPathArgs& a) { return as_reply(ws.real_path(a.root, a.path)); },
            [&](CensusArgs&) { return as_reply(ws.census()); },
        },
        args);
}

// Encodes a reply; one that cannot be sent becomes an error reply with the same id (which
// drops, and closes, any descriptors the result held).
Result<std::string> encode_or_fail(channel::Reply& reply) {
    auto frame = channel::encode_reply(reply);
    if (frame || !reply.result) {
        return frame;
    }
    reply = channel::Reply{reply.id, std::move(frame).error().wrap("reply")};
    return channel::encode_reply(reply);
}

// Reads every queued SIGCHLD off the (non-blocking) signalfd: one wakeup, one reap.
void drain_signalfd(int fd) {
    signalfd_siginfo info{};
    while (retry_eintr([&] { return ::read(fd, &info, sizeof info); }) ==
           static_cast<ssize_t>(sizeof info)) {
    }
}

}  // namespace

constexpr size_t kTrimAfterBytes = size_t{1} << 20;

int serve_channel(int fd, LocalWorkspace& ws) {
    return serve_channel(fd, ws, [&ws] { return ws.reap_children(); });
}

int serve_channel(int fd, Workspace& ws, ReapHook on_child_exit) {
    auto log = log::get("workspace");
    const bool reaps = static_cast<bool>(on_child_exit);
    std::optional<std::chrono::milliseconds> again;  // when the hook wants to run next
    auto reap = [&] {
        if (reaps) {
            again = on_child_exit();
        }
    };
    // SIGCHLD is taken through a signalfd, so it must stay pending rather than be delivered
    // (its default action discards it). Children get an empty mask back from spawn.
    sigset_t sigchld_set;
    sigemptyset(&sigchld_set);
    sigaddset(&sigchld_set, SIGCHLD);
    sigset_t old_mask;
    sigemptyset(&old_mask);
    bool mask_changed = false;
    UniqueFd sigchld;
    if (reaps) {
        mask_changed = ::pthread_sigmask(SIG_BLOCK, &sigchld_set, &old_mask) == 0;
        sigchld.reset(::signalfd(-1, &sigchld_set, SFD_NONBLOCK | SFD_CLOEXEC));
        if (!sigchld) {
            SPDLOG_LOGGER_WARN(log, "worker: no signalfd ({}): reaping children every {} ms",
                               errno_string(errno), kReapIntervalMs);
        }
    }
    Defer restore_mask{[&] {
        if (mask_changed) {
            (void)::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
        }
    }};

    bool greeted = false;
    uint64_t served = 0;
    for (;;) {
        if (reaps) {
            // Idle: wait for a request or a child's exit, whichever comes first.
            std::array<pollfd, 2> fds{pollfd{fd, POLLIN, 0}, pollfd{sigchld.get(), POLLIN, 0}};
            const nfds_t count = sigchld ? 2 : 1;
            int timeout = sigchld ? -1 : kReapIntervalMs;
            if (again) {
                const auto wanted =
                    static_cast<int>(std::clamp<int64_t>(again->count(), 0, 60'000));
                timeout = timeout < 0 ? wanted : std::min(timeout, wanted);
            }
            const int ready = ::poll(fds.data(), count, timeout);
            if (ready < 0) {
                if (errno == EINTR) {
                    continue;
                }
                SPDLOG_LOGGER_ERROR(log, "worker channel: poll: {}", errno_string(errno));
                return 1;
            }
            if (count == 2 && fds[1].revents != 0) {
                drain_signalfd(sigchld.get());
                reap();
            } else if (ready == 0) {
                reap();
            }
            if (fds[0].revents == 0) {
                continue;
            }
        }
        auto received = channel::recv_frame(fd);
        if (!received) {
            SPDLOG_LOGGER_ERROR(log, "worker channel closed: {} served={}",
                                received.error().message, served);
            return 1;
        }
        if (!received->has_value()) {
            SPDLOG_LOGGER_DEBUG(log, "worker channel end of stream served={}", served);
            return 0;
        }
        channel::Frame& frame = (*received)->frame;
        (*received)->fds.clear();  // no request carries descriptors

        channel::Reply reply;
        auto request = channel::decode_request(frame);
        if (!request) {
            std::optional<uint64_t> id = channel::recover_id(frame);
            if (!id) {
                SPDLOG_LOGGER_ERROR(log, "worker channel: undecodable request without id: {}",
                                    request.error().message);
                return 1;
            }
            SPDLOG_LOGGER_WARN(log, "worker channel: bad request id={}: {}", *id,
                               request.error().message);
            reply = channel::Reply{*id, std::move(request).error()};
        } else if (!greeted && channel::op_of(request->args) != channel::Op::kHello) {
            reply = channel::Reply{
                request->id,
                Error{Errc::kFailedPrecondition,
                      fmt::format("request \"{}\" before hello: the channel starts with hello",
                                  channel::op_name(channel::op_of(request->args)))}};
        } else {
            greeted = true;
            reply = channel::Reply{request->id, dispatch(ws, request->args)};
            ++served;
        }

        auto encoded = encode_or_fail(reply);
        if (!encoded) {
            SPDLOG_LOGGER_ERROR(log, "worker channel: cannot encode a reply: {}",
                                encoded.error().message);
            return 1;
        }
        // A spawn's descriptors go to the supervisor; the worker's copies close with `reply`.
        const std::vector<int> reply_fds = channel::reply_fds(reply);
        if (auto sent = channel::send_frame(fd, *encoded, reply_fds); !sent) {
            SPDLOG_LOGGER_ERROR(log, "worker channel: {}", sent.error().message);
            return 1;
        }
        reap();
        // The worker idles for most of a session: after a large file went through, give the
        // memory back instead of keeping glibc's high-water mark.
        if (frame.payload.size() + encoded->size() > kTrimAfterBytes) {
            (void)::malloc_trim(0);
        }
    }
}

}  // namespace stockade::workspace
