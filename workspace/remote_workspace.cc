#include "workspace/remote_workspace.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <fmt/format.h>

namespace stockade::workspace {

namespace {

using channel::Op;

template <class... Ts>
struct Overloaded : Ts... {
    using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

Error invalid_reply(std::string_view why) {
    return Error{Errc::kInternal, fmt::format("worker sent an invalid reply: {}", why)};
}

double seconds(std::chrono::milliseconds d) {
    return static_cast<double>(d.count()) / 1000.0;
}

Error not_answered(Op op, std::chrono::milliseconds timeout) {
    return Error{Errc::kUnavailable,
                 fmt::format("the sandbox worker did not answer \"{}\" within {} s",
                             channel::op_name(op), seconds(timeout))};
}

enum class FdKind : uint8_t { kPipeToRead, kPipeToWrite, kPtyMaster };

// A descriptor from the worker must be what the spawn reply says it is: a worker could
// otherwise hand the supervisor a socket or a file to read "output" from, or keep a pipe's
// write end and send its read end as the "input".
Status check_fd(const UniqueFd& fd, FdKind kind, std::string_view what) {
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
        return invalid_reply(
            fmt::format("spawn {} descriptor: fstat: {}", what, errno_string(errno)));
    }
    const int flags = ::fcntl(fd.get(), F_GETFL);
    if (flags < 0) {
        return invalid_reply(
            fmt::format("spawn {} descriptor: fcntl: {}", what, errno_string(errno)));
    }
    const int access = flags & O_ACCMODE;
    bool ok = false;
    switch (kind) {
        case FdKind::kPipeToRead:
            ok = S_ISFIFO(st.st_mode) && access == O_RDONLY;
            break;
        case FdKind::kPipeToWrite:
            ok = S_ISFIFO(st.st_mode) && access == O_WRONLY;
            break;
        case FdKind::kPtyMaster:
            ok = S_ISCHR(st.st_mode) && access == O_RDWR;
            break;
    }
    if (!ok) {
        return invalid_reply(fmt::format("spawn {} descriptor is not {}", what,
                                         kind == FdKind::kPtyMaster    ? "a PTY master"
                                         : kind == FdKind::kPipeToRead ? "a pipe's read end"
                                                                       : "a pipe's write end"));
    }
    return {};
}

// What a reply must satisfy given the request it answers; the structural checks are in
// decode_reply. `write`: the request a write's bytes were sent from (Slot::write), if any.
Status check_reply(const channel::RequestArgs& request, const channel::ReplyValue& value,
                   const WriteRequest* write) {
    if (channel::op_of(value) != channel::op_of(request)) {
        return invalid_reply("it answers another operation");
    }
    return std::visit(
        Overloaded{
            [&](const channel::ReadArgs& a) -> Status {
                const auto& d = std::get<ReadData>(value);
                if (d.info.type != FileType::kFile) {
                    return invalid_reply("read returned something other than a regular file");
                }
                if (d.bytes.size() > a.max_bytes) {
                    return invalid_reply(fmt::format("read returned {} bytes, {} were asked for",
                                                     d.bytes.size(), a.max_bytes));
                }
                if (d.truncated && d.bytes.size() != a.max_bytes) {
                    return invalid_reply("read is marked truncated below max_bytes");
                }
                return {};
            },
            [&](const WriteRequest& a) -> Status {
                const auto& w = std::get<WriteOutcome>(value);
                const size_t written = (write != nullptr ? write->bytes : a.bytes).size();
                if (w.info.type != FileType::kFile || w.info.size != written) {
                    return invalid_reply(
                        fmt::format("write reports a file of {} bytes for {} bytes written",
                                    w.info.size, written));
                }
                return {};
            },
            [&](const channel::ListArgs& a) -> Status {
                const auto& entries = std::get<std::vector<DirEntry>>(value);
                if (entries.size() > a.max_entries) {
                    return invalid_reply(fmt::format("list returned {} entries, {} were asked for",
                                                     entries.size(), a.max_entries));
                }
                // Non-decreasing: two ill-formed UTF-8 names can arrive equal (channel.h).
                for (size_t i = 1; i < entries.size(); ++i) {
                    if (entries[i].name < entries[i - 1].name) {
                        return invalid_reply("list entries are not sorted by name");
                    }
                }
                return {};
            },
            [&](const RgRequest& a) -> Status {
                const auto& rg = std::get<RgOutcome>(value);
                if (rg.out.size() > a.max_output_bytes) {
                    return invalid_reply(
                        fmt::format("rg returned {} bytes of output, at most {} "
                                    "were asked for",
                                    rg.out.size(), a.max_output_bytes));
                }
                if (rg.truncated && rg.out.size() != a.max_output_bytes) {
                    return invalid_reply("rg output is marked truncated below the cap");
                }
                if (rg.timed_out != (rg.exit_code == -1)) {
                    return invalid_reply("rg exit code -1 and timed_out disagree");
                }
                return {};
            },
            [&](const SpawnRequest& a) -> Status {
                const auto& p = std::get<SpawnedProcess>(value);
                RETURN_IF_ERROR(
                    check_fd(p.output, a.pty ? FdKind::kPtyMaster : FdKind::kPipeToRead, "output"));
                RETURN_IF_ERROR(check_fd(p.status, FdKind::kPipeToRead, "status"));
                const bool wants_input = a.interactive && !a.pty;
                if (p.input.valid() != wants_input) {
                    return invalid_reply(wants_input ? "spawn returned no input pipe"
                                                     : "spawn returned an unasked-for input pipe");
                }
                if (wants_input) {
                    RETURN_IF_ERROR(check_fd(p.input, FdKind::kPipeToWrite, "input"));
                }
                return {};
            },
            [&](const channel::RealPathArgs& a) -> Status {
                const auto& r = std::get<RealPath>(value);
                if (r.path.starts_with('/') || r.path.ends_with('/')) {
                    return invalid_reply(fmt::format("realpath of \"{}\" is not a relative path",
                                                     a.path.substr(0, 256)));
                }
                return {};
            },
            [&](const channel::CensusArgs&) -> Status {
                const auto& c = std::get<ProcessCensus>(value);
                uint64_t counted = 0;
                for (size_t i = 0; i < c.sessions.size(); ++i) {
                    counted += c.sessions[i].processes;
                    if (i > 0 && c.sessions[i].sid <= c.sessions[i - 1].sid) {
                        return invalid_reply("census sessions are not sorted and unique");
                    }
                }
                if (counted != c.total) {
                    return invalid_reply(fmt::format(
                        "census counts {} processes by session but {} in all", counted, c.total));
                }
                return {};
            },
            [&](const SnapshotRequest& a) -> Status {
                const auto& snap = std::get<Snapshot>(value);
                if (snap.changed.size() + snap.removed.size() > a.max_entries) {
                    return invalid_reply(
                        fmt::format("snapshot reports {} entries, at most {} "
                                    "were asked for",
                                    snap.changed.size() + snap.removed.size(), a.max_entries));
                }
                uint64_t bytes = 0;
                for (const SnapshotEntry& e : snap.changed) {
                    if (e.bytes.size() > a.max_file_bytes) {
                        return invalid_reply("snapshot sent a file above max_file_bytes");
                    }
                    bytes += e.bytes.size();
                }
                if (bytes > a.max_reply_bytes) {
                    return invalid_reply("snapshot sent more bytes than max_reply_bytes");
                }
                return {};
            },
            [&](const RestoreRequest& a) -> Status {
                const auto& r = std::get<RestoreOutcome>(value);
                if (r.applied + r.failed.size() != a.actions.size() ||
                    (!r.failed.empty() && r.failed.back().index >= a.actions.size())) {
                    return invalid_reply(
                        fmt::format("restore accounts for {} applied and {} failed of {} actions",
                                    r.applied, r.failed.size(), a.actions.size()));
                }
                return {};
            },
            [&](const channel::CommandsArgs&) -> Status {
                const auto& names = std::get<channel::CommandsResult>(value).names;
                for (size_t i = 1; i < names.size(); ++i) {
                    if (names[i] <= names[i - 1]) {
                        return invalid_reply("command names are not sorted and unique");
                    }
                }
                return {};
            },
            [](const auto&) -> Status { return {}; },
        },
        request);
}

}  // namespace

RemoteWorkspace::RemoteWorkspace(UniqueFd channel, std::string workspace_root,
                                 std::string spill_root)
    : RemoteWorkspace(std::move(channel), std::move(workspace_root), std::move(spill_root),
                      Options{}) {}

RemoteWorkspace::RemoteWorkspace(UniqueFd channel, std::string workspace_root,
                                 std::string spill_root, Options options)
    : workspace_root_(std::move(workspace_root)),
      spill_root_(std::move(spill_root)),
      options_(options),
      fd_(std::move(channel)) {}

bool RemoteWorkspace::broken() const {
    std::lock_guard lock(mu_);
    return broken_.has_value();
}

std::string RemoteWorkspace::root_path(Root root) const {
    switch (root) {
        case Root::kWorkspace:
            return workspace_root_;
        case Root::kSpill:
            return spill_root_;
    }
    return {};
}

Error RemoteWorkspace::gone_locked() const {
    return Error{Errc::kUnavailable,
                 fmt::format("the sandbox worker is gone ({})", broken_->message)};
}

void RemoteWorkspace::break_locked(const Error& cause, Breakage how, uint64_t to) {
    if (broken_) {
        return;  // every call in flight was answered by the first break
    }
    for (auto& [id, slot] : pending_) {
        switch (how) {
            case Breakage::kDied:
                slot->result = Error{Errc::kUnavailable,
                                     fmt::format("the sandbox worker died during \"{}\": {}",
                                                 channel::op_name(slot->op), cause.message),
                                     cause.sys_errno};
                break;
            case Breakage::kInvalid:
                slot->result = cause;
                break;
            case Breakage::kOther:
                slot->result =
                    id == to ? cause
                             : Error{Errc::kUnavailable,
                                     fmt::format("the sandbox worker is gone ({})", cause.message)};
                break;
        }
        slot->cv.notify_one();
    }
    pending_.clear();
    broken_ =
        how == Breakage::kDied
            ? Error{Errc::kUnavailable, fmt::format("the sandbox worker died: {}", cause.message),
                    cause.sys_errno}
            : cause;
    // Nothing more is read from an untrusted stream, and the worker sees EOF. The descriptor
    // stays open (see fd_): a reader or sender blocked on it wakes with an error.
    (void)::shutdown(fd_.get(), SHUT_RDWR);
}

void RemoteWorkspace::pass_reading_locked() {
    for (auto& [id, slot] : pending_) {
        if (slot->waiting) {
            slot->cv.notify_one();
            return;
        }
    }
    // No one waits yet: the next caller to wait finds reading_ false and reads.
}

Status RemoteWorkspace::handshake() {
    auto r = call(channel::HelloArgs{}, options_.call_timeout);
    if (!r) {
        return std::move(r).error();
    }
    return {};
}

Result<channel::ReplyValue> RemoteWorkspace::call(const channel::RequestArgs& args,
                                                  std::chrono::milliseconds timeout,
                                                  const WriteRequest* write) {
    bool greeted = false;
    {
        std::lock_guard lock(mu_);
        if (broken_) {
            return gone_locked();
        }
        greeted = greeted_;
    }
    if (greeted) {
        return exchange(args, timeout, write);
    }
    {
        // The first calls wait for one hello; one that failed leaves the next call to retry.
        std::lock_guard hello_lock(hello_mu_);
        {
            std::lock_guard lock(mu_);
            greeted = greeted_;
        }
        if (!greeted) {
            ASSIGN_OR_RETURN(channel::ReplyValue hello,
                             exchange(channel::HelloArgs{}, options_.call_timeout));
            {
                std::lock_guard lock(mu_);
                greeted_ = true;
            }
            if (channel::op_of(args) == Op::kHello) {
                return hello;
            }
        }
    }
    return exchange(args, timeout, write);
}

Result<channel::ReplyValue> RemoteWorkspace::exchange(const channel::RequestArgs& args,
                                                      std::chrono::milliseconds timeout,
                                                      const WriteRequest* write) {
    const Op op = channel::op_of(args);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    uint64_t id = 0;
    {
        std::lock_guard lock(mu_);
        if (broken_) {
            return gone_locked();
        }
        id = next_id_++;
    }
    // A request that cannot be encoded (a path with NUL, a write above the frame limit) is the
    // caller's error: nothing was sent and the channel stays usable.
    // The frame borrows the arguments' payload (a write's bytes) until it is sent.
    ASSIGN_OR_RETURN(channel::EncodedFrame frame, write != nullptr
                                                      ? channel::encode_write_request(id, *write)
                                                      : channel::encode_request_parts(id, args));

    Slot slot;
    slot.op = op;
    slot.args = &args;
    slot.write = write;
    slot.timeout = timeout;
    {
        // Registered before the request goes: its reply may be read before send_frame returns.
        std::lock_guard lock(mu_);
        if (broken_) {
            return gone_locked();
        }
        pending_.emplace(id, &slot);
    }
    Status sent = [&]() -> Status {
        std::unique_lock send_lock(send_mu_, std::defer_lock);
        if (!send_lock.try_lock_until(deadline)) {
            return Error{Errc::kDeadlineExceeded, "send frame: deadline passed"};
        }
        return channel::send_frame(fd_.get(), frame, {}, deadline);
    }();

    std::unique_lock lock(mu_);
    if (!sent) {
        // Part of a frame may be on the stream: it cannot be used again.
        if (sent.error().code == Errc::kDeadlineExceeded) {
            break_locked(not_answered(op, timeout), Breakage::kOther, id);
        } else {
            break_locked(sent.error(), Breakage::kDied);
        }
    }
    // Until the result is in: read while no one else does, else wait to be handed the result
    // or the reading. Invariant: while any caller waits, one of the waiters reads.
    slot.waiting = true;
    bool reader = false;
    while (!slot.result) {
        if (!reading_) {
            reading_ = true;
            reader = true;
        }
        if (reader) {
            read_one(lock, id, slot, deadline);
            continue;
        }
        if (slot.cv.wait_until(lock, deadline) == std::cv_status::timeout && !slot.result) {
            break_locked(not_answered(op, timeout), Breakage::kOther, id);
        }
    }
    slot.waiting = false;
    if (reader) {
        reading_ = false;
        pass_reading_locked();
    }
    return std::move(*slot.result);
}

void RemoteWorkspace::read_one(std::unique_lock<std::mutex>& lock, uint64_t self_id, Slot& self,
                               std::chrono::steady_clock::time_point deadline) {
    lock.unlock();
    auto received = channel::recv_frame(fd_.get(), deadline);
    lock.lock();
    if (broken_) {
        return;  // broken meanwhile (which woke the read): every slot has its result
    }
    if (!received) {
        const Error& e = received.error();
        if (e.code == Errc::kInvalidArgument) {
            break_locked(invalid_reply(e.message), Breakage::kInvalid);
        } else if (e.code == Errc::kDeadlineExceeded) {
            break_locked(not_answered(self.op, self.timeout), Breakage::kOther, self_id);
        } else {
            break_locked(e, Breakage::kDied);
        }
        return;
    }
    if (!received->has_value()) {
        break_locked(Error{Errc::kUnavailable, "the channel closed"}, Breakage::kDied);
        return;
    }
    channel::Received frame = std::move(**received);
    // Replies do not name their op: the id says which call's op to decode it as.
    const std::optional<uint64_t> id = channel::recover_id(frame.frame);
    auto it = id ? pending_.find(*id) : pending_.end();
    if (it == pending_.end()) {
        break_locked(invalid_reply(id ? fmt::format("reply id {} answers no request in flight", *id)
                                      : std::string("reply without an unsigned integer \"id\"")),
                     Breakage::kInvalid);
        return;
    }
    const Op op = it->second->op;
    // Decoded without the lock (a payload may be 16 MiB). Only the reader delivers, and a break
    // sets broken_, so the slot is still pending afterwards unless the channel broke.
    lock.unlock();
    // decode_reply takes the descriptors: kept by a spawn reply that announces them, closed
    // otherwise (and the reply is then invalid).
    auto reply = channel::decode_reply(frame.frame, op, frame.fds);
    lock.lock();
    if (broken_) {
        return;
    }
    it = pending_.find(*id);
    Slot& slot = *it->second;
    if (!reply) {
        if (reply.error().code == Errc::kFailedPrecondition) {
            break_locked(Error{Errc::kFailedPrecondition,
                               fmt::format("the sandbox worker speaks another channel protocol: {}",
                                           reply.error().message)},
                         Breakage::kOther, *id);
        } else {
            break_locked(invalid_reply(reply.error().message), Breakage::kOther, *id);
        }
        return;
    }
    if (!reply->result) {
        if (reply->result.error().code == Errc::kPolicyDenied) {
            break_locked(invalid_reply("the worker claims a policy decision"), Breakage::kOther,
                         *id);
            return;
        }
    } else if (auto checked = check_reply(*slot.args, *reply->result, slot.write); !checked) {
        break_locked(checked.error(), Breakage::kOther, *id);
        return;
    }
    slot.result = std::move(reply->result);
    pending_.erase(it);
    slot.cv.notify_one();
}

Result<FileInfo> RemoteWorkspace::stat(Root root, const std::string& path) {
    ASSIGN_OR_RETURN(channel::ReplyValue v,
                     call(channel::StatArgs{root, path}, options_.call_timeout));
    return std::get<FileInfo>(std::move(v));
}

Result<RealPath> RemoteWorkspace::real_path(Root root, const std::string& path) {
    ASSIGN_OR_RETURN(channel::ReplyValue v,
                     call(channel::RealPathArgs{root, path}, options_.call_timeout));
    return std::get<RealPath>(std::move(v));
}

Result<ReadData> RemoteWorkspace::read(Root root, const std::string& path, uint64_t max_bytes) {
    ASSIGN_OR_RETURN(channel::ReplyValue v,
                     call(channel::ReadArgs{root, path, max_bytes}, options_.call_timeout));
    return std::get<ReadData>(std::move(v));
}

Result<WriteOutcome> RemoteWorkspace::write(const WriteRequest& request) {
    // The bytes go from `request` itself; the arguments hold the rest (op, path, mode).
    const channel::RequestArgs args{WriteRequest{.root = request.root,
                                                 .path = request.path,
                                                 .mode = request.mode,
                                                 .make_parents = request.make_parents}};
    ASSIGN_OR_RETURN(channel::ReplyValue v, call(args, options_.call_timeout, &request));
    return std::get<WriteOutcome>(std::move(v));
}

Status RemoteWorkspace::make_dirs(Root root, const std::string& path) {
    ASSIGN_OR_RETURN(channel::ReplyValue v,
                     call(channel::MkdirsArgs{root, path}, options_.call_timeout));
    (void)v;
    return {};
}

Result<std::vector<DirEntry>> RemoteWorkspace::list(Root root, const std::string& path,
                                                    size_t max_entries) {
    ASSIGN_OR_RETURN(channel::ReplyValue v,
                     call(channel::ListArgs{root, path, max_entries}, options_.call_timeout));
    return std::get<std::vector<DirEntry>>(std::move(v));
}

Result<RgOutcome> RemoteWorkspace::run_rg(const RgRequest& request) {
    ASSIGN_OR_RETURN(channel::ReplyValue v, call(request, request.timeout + options_.rg_grace));
    return std::get<RgOutcome>(std::move(v));
}

Result<SpawnedProcess> RemoteWorkspace::spawn(const SpawnRequest& request) {
    ASSIGN_OR_RETURN(channel::ReplyValue v, call(request, options_.call_timeout));
    return std::get<SpawnedProcess>(std::move(v));
}

Result<bool> RemoteWorkspace::signal_group(ProcessGroupRef group, int signal) {
    ASSIGN_OR_RETURN(channel::ReplyValue v,
                     call(channel::SignalArgs{group.pgid, signal}, options_.call_timeout));
    return std::get<channel::SignalResult>(v).delivered;
}

Result<std::vector<std::string>> RemoteWorkspace::path_commands() {
    ASSIGN_OR_RETURN(channel::ReplyValue v, call(channel::CommandsArgs{}, options_.call_timeout));
    return std::move(std::get<channel::CommandsResult>(v).names);
}

Result<ProcessCensus> RemoteWorkspace::census() {
    ASSIGN_OR_RETURN(channel::ReplyValue v, call(channel::CensusArgs{}, options_.call_timeout));
    return std::get<ProcessCensus>(std::move(v));
}

Result<Snapshot> RemoteWorkspace::snapshot(const SnapshotRequest& request) {
    ASSIGN_OR_RETURN(channel::ReplyValue v, call(request, options_.call_timeout));
    return std::get<Snapshot>(std::move(v));
}

Result<RestoreOutcome> RemoteWorkspace::restore(const RestoreRequest& request) {
    ASSIGN_OR_RETURN(channel::ReplyValue v, call(request, options_.call_timeout));
    return std::get<RestoreOutcome>(std::move(v));
}

}  // namespace stockade::workspace
