#include "workspace/service.h"

#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <sys/signalfd.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <deque>
#include <memory>
#include <span>
#include <vector>

#include <fmt/format.h>

#include "common/defer.h"
#include "common/result.h"
#include "common/syscall.h"
#include "common/unique_fd.h"
#include "workspace/channel.h"
#include "workspace/diagnostics.h"

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

Result<channel::ReplyValue> dispatch(LocalWorkspace& ws, channel::RequestArgs& args) {
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
            // serve_request starts rg without waiting (ChannelServer::submit_rg).
            [](RgRequest&) -> Result<ReplyValue> {
                return Error{Errc::kInternal, "rg is started by the loop, not dispatched"};
            },
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
            [&](SnapshotRequest& a) { return as_reply(ws.snapshot(a)); },
            [&](RestoreRequest& a) { return as_reply(ws.restore(a)); },
        },
        args);
}

// Encodes a reply; one that cannot be sent becomes an error reply with the same id (which
// drops, and closes, any descriptors the result held).
Result<channel::EncodedFrame> encode_or_fail(channel::Reply& reply) {
    auto frame = channel::encode_reply_parts(reply);
    if (frame || !reply.result) {
        return frame;
    }
    reply = channel::Reply{reply.id, std::move(frame).error().wrap("reply")};
    return channel::encode_reply_parts(reply);
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

namespace {

using Clock = std::chrono::steady_clock;

// An rg request in flight: started, its reply due when rg ends.
struct RgJob {
    uint64_t id = 0;
    std::unique_ptr<RgRun> run;
};

// An rg request waiting for one of the kMaxRgRuns slots.
struct QueuedRg {
    uint64_t id = 0;
    RgRequest request{};
    Clock::time_point deadline{};  // arrival + request.timeout
};

// The state of one serve_channel call. Thread: the calling thread only (the worker's one).
class ChannelServer {
public:
    ChannelServer(int fd, LocalWorkspace& ws, ReapHook on_child_exit)
        : fd_(fd), ws_(ws), on_child_exit_(std::move(on_child_exit)) {}

    int run();

private:
    // Sets up SIGCHLD delivery through the signalfd when there is a hook.
    void take_sigchld();
    // Runs the hook (if any) and schedules its next run.
    void reap();
    // Reads and handles one request. nullopt: go on; else the exit code.
    std::optional<int> serve_request();
    // Starts rg now, or queues it while kMaxRgRuns are in flight. false: a fatal channel error.
    bool submit_rg(uint64_t id, RgRequest request, Clock::time_point deadline);
    // Starts queued rg requests while there is room; answers those whose time ran out.
    bool start_queued();
    // Advances the runs whose descriptors are ready (`fds` from the last poll, each run's
    // descriptors in order from `first`) or whose time has come; replies for those that ended.
    bool advance_runs(std::span<const pollfd> fds, size_t first);
    bool send_reply(channel::Reply& reply, size_t request_bytes);

    const int fd_;
    LocalWorkspace& ws_;
    const ReapHook on_child_exit_;
    UniqueFd sigchld_;                                      // the signalfd, or invalid
    Clock::time_point reap_at_ = Clock::time_point::max();  // when the hook is due again
    std::vector<RgJob> runs_;                               // at most kMaxRgRuns, oldest first
    std::deque<QueuedRg> queued_;                           // in arrival order
    bool greeted_ = false;
    uint64_t served_ = 0;
};

void ChannelServer::reap() {
    if (!on_child_exit_) {
        return;
    }
    const std::optional<std::chrono::milliseconds> again = on_child_exit_();
    const Clock::time_point now = Clock::now();
    reap_at_ = again ? now + std::clamp(*again, std::chrono::milliseconds(0),
                                        std::chrono::milliseconds(60'000))
                     : Clock::time_point::max();
    if (!sigchld_) {
        reap_at_ = std::min(reap_at_, now + std::chrono::milliseconds(kReapIntervalMs));
    }
}

int ChannelServer::run() {
    if (on_child_exit_) {
        take_sigchld();
    }
    std::vector<pollfd> fds;
    fds.reserve(2 + 3 * kMaxRgRuns);
    for (;;) {
        // The channel, the signalfd, then each run's descriptors (three at most), in order.
        fds.clear();
        fds.push_back(pollfd{fd_, POLLIN, 0});
        if (sigchld_) {
            fds.push_back(pollfd{sigchld_.get(), POLLIN, 0});
        }
        const size_t first_run_fd = fds.size();
        Clock::time_point wake = reap_at_;
        for (const RgJob& job : runs_) {
            std::array<pollfd, 3> run_fds{};
            const size_t n = job.run->poll_fds(run_fds);
            fds.insert(fds.end(), run_fds.begin(), run_fds.begin() + static_cast<ptrdiff_t>(n));
            wake = std::min(wake, job.run->wake_at());
        }
        for (const QueuedRg& q : queued_) {
            wake = std::min(wake, q.deadline);
        }
        int timeout = -1;
        if (wake != Clock::time_point::max()) {
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(wake - Clock::now());
            timeout = static_cast<int>(std::clamp<int64_t>(left.count(), 0, 60'000));
        }
        const int ready = ::poll(fds.data(), static_cast<nfds_t>(fds.size()), timeout);
        if (ready < 0) {
            if (errno == EINTR) {
                continue;
            }
            diagnose(Severity::kError, "worker channel: poll: {}", errno_string(errno));
            return 1;
        }
        if (sigchld_ && fds[1].revents != 0) {
            drain_signalfd(sigchld_.get());
            reap();
        }
        if (!advance_runs(fds, first_run_fd) || !start_queued()) {
            return 1;
        }
        if (Clock::now() >= reap_at_) {
            reap();
        }
        if (fds[0].revents != 0) {
            if (std::optional<int> end = serve_request()) {
                return *end;
            }
        }
    }
}

bool ChannelServer::advance_runs(std::span<const pollfd> fds, size_t first) {
    const Clock::time_point now = Clock::now();
    size_t at = first;
    for (auto it = runs_.begin(); it != runs_.end();) {
        // The same count poll_fds gave when the set was built: nothing ran in between.
        std::array<pollfd, 3> mine{};
        const size_t n = it->run->poll_fds(mine);
        bool due = now >= it->run->wake_at();
        for (size_t i = 0; i < n && at + i < fds.size(); ++i) {
            due = due || fds[at + i].revents != 0;
        }
        at += n;
        if (!due) {
            ++it;
            continue;
        }
        Result<bool> over = it->run->advance();
        if (over && !*over) {
            ++it;
            continue;
        }
        channel::Reply reply{it->id};
        if (over) {
            reply.result = as_reply(it->run->finish());
        } else {
            reply.result = std::move(over).error();
        }
        it = runs_.erase(it);  // kills and reaps what is left of a run that failed
        if (!send_reply(reply, 0)) {
            return false;
        }
    }
    return true;
}

bool ChannelServer::submit_rg(uint64_t id, RgRequest request, Clock::time_point deadline) {
    queued_.push_back(QueuedRg{id, std::move(request), deadline});
    return start_queued();
}

bool ChannelServer::start_queued() {
    const Clock::time_point now = Clock::now();
    for (auto it = queued_.begin(); it != queued_.end();) {
        const bool expired = it->deadline <= now;
        if (!expired && runs_.size() >= kMaxRgRuns) {
            ++it;
            continue;
        }
        QueuedRg q = std::move(*it);
        it = queued_.erase(it);
        channel::Reply reply{q.id};
        if (expired) {
            // It waited for a slot past its whole timeout: answered as rg killed by it.
            reply.result = channel::ReplyValue{RgOutcome{.exit_code = -1, .timed_out = true}};
        } else {
            q.request.timeout = std::chrono::ceil<std::chrono::milliseconds>(q.deadline - now);
            auto started = ws_.start_rg(q.request);
            if (started) {
                runs_.push_back(RgJob{q.id, std::move(started).value()});
                continue;
            }
            reply.result = std::move(started).error();
        }
        if (!send_reply(reply, 0)) {
            return false;
        }
    }
    return true;
}

std::optional<int> ChannelServer::serve_request() {
    auto received = channel::recv_frame(fd_);
    if (!received) {
        diagnose(Severity::kError, "worker channel closed: {} served={}", received.error().message,
                 served_);
        return 1;
    }
    if (!received->has_value()) {
        diagnose(Severity::kDebug, "worker channel end of stream served={} rg_in_flight={}",
                 served_, runs_.size() + queued_.size());
        return 0;
    }
    const Clock::time_point arrived = Clock::now();
    channel::Frame& frame = (*received)->frame;
    (*received)->fds.clear();  // no request carries descriptors

    channel::Reply reply;
    auto request = channel::decode_request(frame);
    if (!request) {
        std::optional<uint64_t> id = channel::recover_id(frame);
        if (!id) {
            diagnose(Severity::kError, "worker channel: undecodable request without id: {}",
                     request.error().message);
            return 1;
        }
        diagnose(Severity::kWarning, "worker channel: bad request id={}: {}", *id,
                 request.error().message);
        reply = channel::Reply{*id, std::move(request).error()};
    } else if (!greeted_ && channel::op_of(request->args) != channel::Op::kHello) {
        reply = channel::Reply{
            request->id,
            Error{Errc::kFailedPrecondition,
                  fmt::format("request \"{}\" before hello: the channel starts with hello",
                              channel::op_name(channel::op_of(request->args)))}};
    } else if (auto* rg = std::get_if<RgRequest>(&request->args)) {
        ++served_;
        const Clock::time_point deadline = arrived + rg->timeout;
        if (!submit_rg(request->id, std::move(*rg), deadline)) {
            return 1;
        }
        return std::nullopt;
    } else {
        greeted_ = true;
        reply = channel::Reply{request->id, dispatch(ws_, request->args)};
        ++served_;
    }
    if (!send_reply(reply, frame.payload.size())) {
        return 1;
    }
    return std::nullopt;
}

bool ChannelServer::send_reply(channel::Reply& reply, size_t request_bytes) {
    auto encoded = encode_or_fail(reply);
    if (!encoded) {
        diagnose(Severity::kError, "worker channel: cannot encode a reply: {}",
                 encoded.error().message);
        return false;
    }
    const size_t reply_bytes =
        encoded->head.size() + encoded->payload[0].size() + encoded->payload[1].size();
    // A spawn's descriptors go to the supervisor; the worker's copies close with `reply`, and
    // the frame's payload is borrowed from it until sent.
    const std::vector<int> reply_fds = channel::reply_fds(reply);
    if (auto sent = channel::send_frame(fd_, *encoded, reply_fds); !sent) {
        diagnose(Severity::kError, "worker channel: {}", sent.error().message);
        return false;
    }
    reply = channel::Reply{};  // the descriptors are the supervisor's now
    reap();
    // The worker idles for most of a session: after a large file went through, give the
    // memory back instead of keeping glibc's high-water mark.
    if (request_bytes + reply_bytes > kTrimAfterBytes) {
        (void)::malloc_trim(0);
    }
    return true;
}

void ChannelServer::take_sigchld() {
    // SIGCHLD is taken through a signalfd, so it must stay pending rather than be delivered
    // (its default action discards it). Children get an empty mask back from spawn and rg.
    sigset_t sigchld_set;
    sigemptyset(&sigchld_set);
    sigaddset(&sigchld_set, SIGCHLD);
    sigchld_.reset(::signalfd(-1, &sigchld_set, SFD_NONBLOCK | SFD_CLOEXEC));
    if (!sigchld_) {
        diagnose(Severity::kWarning, "worker: no signalfd ({}): reaping children every {} ms",
                 errno_string(errno), kReapIntervalMs);
        reap_at_ = Clock::now() + std::chrono::milliseconds(kReapIntervalMs);
    }
}

}  // namespace

int serve_channel(int fd, LocalWorkspace& ws) {
    return serve_channel(fd, ws, [&ws] { return ws.reap_children(); });
}

int serve_channel(int fd, LocalWorkspace& ws, ReapHook on_child_exit) {
    const bool reaps = static_cast<bool>(on_child_exit);
    sigset_t sigchld_set;
    sigemptyset(&sigchld_set);
    sigaddset(&sigchld_set, SIGCHLD);
    sigset_t old_mask;
    sigemptyset(&old_mask);
    const bool mask_changed = reaps && ::pthread_sigmask(SIG_BLOCK, &sigchld_set, &old_mask) == 0;
    Defer restore_mask{[&] {
        if (mask_changed) {
            (void)::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
        }
    }};
    // Destroyed before the mask is restored: the runs still in flight are killed and reaped.
    ChannelServer server(fd, ws, std::move(on_child_exit));
    return server.run();
}

}  // namespace stockade::workspace
