#include "runner/session/process_manager.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <cstring>
#include <mutex>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <fmt/format.h>

#include "common/log.h"
#include "common/syscall.h"
#include "runner/session/byte_ring.h"
#include "runner/session/line_index.h"
#include "runner/session/sandbox_network.h"
#include "tools/text.h"

namespace stockade::runner {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kReadChunk = size_t{128} << 10;
constexpr std::chrono::milliseconds kWriteTimeout{5'000};
constexpr std::chrono::milliseconds kKillWait{5'000};

// What a log says where it stops before its output does (at its cap, or where the budget ran
// out), and `why`.
std::string stop_note(std::string_view why) {
    return fmt::format(
        "\n[stockade: this log stops here: {}. What follows is not kept, but for the last part "
        "the process still holds in memory, added when it ends if there is room for it then.]\n",
        why);
}

// The room a log keeps in the budget for its stop_note: more than any of them takes.
constexpr uint64_t kStopNoteRoom = 512;

// What a log that stopped early says at its end: what it lacks, and the tail that follows it.
std::string gap_note(uint64_t dropped, uint64_t shown) {
    if (shown == 0) {
        return fmt::format(
            "[stockade: the last {} of output are not kept here either: there was no room left "
            "for them.]\n",
            tools::format_size(dropped));
    }
    return fmt::format("[stockade: {} of output were not kept here; the last {} follow.]\n",
                       tools::format_size(dropped), tools::format_size(shown));
}

// The longest gap_note: the room a log takes for it before its figures are known.
size_t gap_note_max() {
    static const size_t longest =
        std::max(gap_note(UINT64_MAX, 0).size(), gap_note(UINT64_MAX, UINT64_MAX).size());
    return longest;
}

std::string exit_description(int wait_status) {
    if (WIFSIGNALED(wait_status)) {
        return fmt::format("signal {}", WTERMSIG(wait_status));
    }
    return fmt::format("code {}", WEXITSTATUS(wait_status));
}

}  // namespace

struct ProcessManagerImpl::Proc {
    Proc(asio::io_context& io, size_t ring_bytes, size_t ring_lines)
        : ring(ring_bytes), lines(ring_lines), out(io), status(io) {}

    std::string id;
    bool foreground = false;
    int pid = 0;
    uint64_t epoch = 0;
    std::string command;
    std::string cwd;
    std::string log_path;
    std::string call_id;
    std::string network_tag;  // its proxy credentials' tag; "" without a proxy
    bool pty = false;
    std::chrono::system_clock::time_point started_wall{};
    Clock::time_point started{};
    Clock::time_point ended_at{};
    Clock::time_point last_output{};

    tools::ProcessState state = tools::ProcessState::kRunning;
    workspace::Leftovers leftovers;  // what the worker stopped when the leader ended
    std::optional<int> exit_code;
    std::optional<int> signal;
    std::string failure;
    bool stop_requested = false;
    bool output_closed = false;
    uint64_t changes = 0;  // bumped on output, EOF and exit: what waiters wait for

    // Output accounting (guarded by the manager's mu_).
    ByteRing ring;    // the last ring_bytes of the output
    LineIndex lines;  // where its lines start: the last ring_lines exactly, then marks
    uint64_t cursor = 0;
    UniqueFd log;
    bool log_opened = false;
    bool log_full = false;         // past its cap or the session's budget: the rest is not written
    bool log_end_dropped = false;  // once finished: the tail did not fit either
    uint64_t log_written = 0;      // of the output, from its start
    uint64_t log_dropped = 0;      // once finished: what the log lacks

    UniqueFd input;  // the stdin pipe, or a dup of the PTY master
    UniqueFd pidfd;  // held: the leader's struct pid cannot be recycled while it is open

    // Touched on the reader thread only.
    asio::posix::stream_descriptor out;
    asio::posix::stream_descriptor status;
    std::unique_ptr<char[]> chunk;
    std::unique_ptr<char[]> report;  // the exit report, read until EOF
};

// The Asio thread: one io_context that reads every output and status pipe. It starts with the
// session's first process: a session that never starts one holds no thread for it.
class ProcessManagerImpl::Reader {
public:
    Reader() : guard_(io_.get_executor()) {}
    ~Reader() {
        guard_.reset();
        io_.stop();
        if (thread_.joinable()) {
            thread_.join();
        }
    }
    Reader(const Reader&) = delete;
    Reader& operator=(const Reader&) = delete;
    asio::io_context& io() {
        std::call_once(started_, [this] { thread_ = std::thread([this] { io_.run(); }); });
        return io_;
    }

private:
    asio::io_context io_;
    asio::executor_work_guard<asio::io_context::executor_type> guard_;
    std::once_flag started_;
    std::thread thread_;
};

ProcessManagerImpl::ProcessManagerImpl(workspace::Workspace& spawner, ProcessManagerConfig config,
                                       EventSink* events)
    : spawner_(spawner),
      config_(std::move(config)),
      events_(events),
      next_public_(std::max(config_.first_id, 1)),
      reader_(std::make_unique<Reader>()) {}

ProcessManagerImpl::~ProcessManagerImpl() {
    stop_all(std::chrono::milliseconds{1'000});
    {
        // The descriptors of a process belong to the io_context: drop the table's references
        // while it still exists. The handlers' references go with the io_context's shutdown.
        std::lock_guard lock(mu_);
        for (const auto& [id, p] : procs_) {
            if (p->state == tools::ProcessState::kRunning) {
                count_running(-1);  // left behind: the worker's end takes it with it
            }
        }
        procs_.clear();
        order_.clear();
    }
    reader_.reset();  // joins the reader thread; pending handlers are dropped with io_context
}

void ProcessManagerImpl::count_running(int64_t delta) noexcept {
    if (config_.meters != nullptr) {
        config_.meters->processes.fetch_add(delta, std::memory_order_relaxed);
    }
}

bool ProcessManagerImpl::signal(const Proc& p, int sig) noexcept {
    auto delivered = spawner_.signal_group({.epoch = p.epoch, .pgid = p.pid}, sig);
    if (!delivered) {
        SPDLOG_LOGGER_WARN(log::get("process"), "signal {} to {} (pgid {}) failed: {}", sig, p.id,
                           p.pid, delivered.error().message);
        return false;
    }
    return *delivered;
}

void ProcessManagerImpl::stop_all(std::chrono::milliseconds grace) noexcept {
    std::vector<std::shared_ptr<Proc>> running;
    {
        std::lock_guard lock(mu_);
        for (auto& [id, p] : procs_) {
            if (p->state == tools::ProcessState::kRunning) {
                p->stop_requested = true;
                running.push_back(p);
            }
        }
    }
    if (running.empty()) {
        return;
    }
    for (auto& p : running) {
        (void)signal(*p, SIGTERM);
    }
    std::unique_lock lock(mu_);
    auto all_ended = [&] {
        return std::all_of(running.begin(), running.end(),
                           [](const auto& p) { return p->state != tools::ProcessState::kRunning; });
    };
    changed_.wait_until(lock, Clock::now() + grace, all_ended);
    lock.unlock();
    for (auto& p : running) {
        (void)signal(*p, SIGKILL);
    }
    lock.lock();
    changed_.wait_until(lock, Clock::now() + grace, all_ended);
}

Result<tools::ProcessInfo> ProcessManagerImpl::start(const tools::StartRequest& request) {
    auto log = log::get("process");
    if (request.argv.empty()) {
        return Error{Errc::kInvalidArgument, "start: empty argv"};
    }
    {
        std::lock_guard lock(mu_);
        size_t running =
            static_cast<size_t>(std::count_if(procs_.begin(), procs_.end(), [](const auto& kv) {
                return kv.second->state == tools::ProcessState::kRunning;
            }));
        if (running >= config_.max_running) {
            return Error{Errc::kResourceExhausted,
                         fmt::format("{} processes are already running in this session, the "
                                     "limit. Stop some with process {{\"action\":\"stop\"}} "
                                     "first (process {{\"action\":\"list\"}} shows them).",
                                     running)};
        }
    }
    if (!log_dir_made_.load(std::memory_order_acquire)) {
        // Readable by the sandbox user, which reads the logs through the read-only bind of
        // tool-output (as root, through "other" bits: root's files are unmapped in there).
        std::lock_guard lock(mu_);
        if (!log_dir_made_.load(std::memory_order_relaxed)) {
            if (config_.log_parent_fd >= 0) {
                const std::string name = config_.log_dir.substr(config_.log_dir.rfind('/') + 1);
                if (::mkdirat(config_.log_parent_fd, name.c_str(), 0755) != 0 && errno != EEXIST) {
                    return errno_error(fmt::format("create \"{}\"", config_.log_dir), errno);
                }
                log_dir_fd_ = UniqueFd(retry_eintr([&] {
                    return ::openat(config_.log_parent_fd, name.c_str(),
                                    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                }));
                if (!log_dir_fd_) {
                    return errno_error(
                        fmt::format("open \"{}\" (a symlink there is never followed)",
                                    config_.log_dir),
                        errno);
                }
                (void)::fchmod(log_dir_fd_.get(), 0755);  // whatever the umask
            } else {
                if (auto made = make_dirs(config_.log_dir, 0755); !made) {
                    return std::move(made).error().wrap("create the process log directory");
                }
                (void)::chmod(config_.log_dir.c_str(), 0755);
            }
            log_dir_made_.store(true, std::memory_order_release);
        }
    }
    // Its connections through the proxy carry a tag of its own, that it keeps when adopted.
    std::string network_tag;
    std::vector<std::string> env = request.env;
    if (config_.network != nullptr) {
        network_tag = fmt::format("c{}", next_tag_.fetch_add(1, std::memory_order_relaxed));
        config_.network->command_started(network_tag, request.call_id, request.command);
        std::vector<std::string> proxy = config_.network->command_env(network_tag);
        env.insert(env.begin(), proxy.begin(), proxy.end());  // the request's own come later
    }
    ASSIGN_OR_RETURN(workspace::SpawnedProcess spawned,
                     spawner_.spawn(workspace::SpawnRequest{.argv = request.argv,
                                                            .cwd = request.cwd,
                                                            .env = std::move(env),
                                                            .pty = request.pty,
                                                            .interactive = request.interactive,
                                                            .rows = 50,
                                                            .cols = 200}));

    auto p = std::make_shared<Proc>(reader_->io(), config_.ring_bytes, config_.ring_lines);
    {
        std::lock_guard lock(mu_);
        p->foreground = !request.background;
        p->id = request.background ? fmt::format("p{}", next_public_++)
                                   : fmt::format("cmd-{}", next_foreground_++);
    }
    p->pid = spawned.pid;
    p->epoch = spawned.epoch;
    p->command = request.command;
    p->cwd = request.cwd_display;
    p->call_id = request.call_id;
    p->network_tag = std::move(network_tag);
    p->pty = request.pty;
    p->started_wall = std::chrono::system_clock::now();
    p->started = Clock::now();
    p->last_output = p->started;
    p->log_path = fmt::format("{}/{}.log", config_.log_dir, p->id);
    p->pidfd = std::move(spawned.pidfd);
    // A background process's log exists from the start (its path is shown at once); a
    // foreground command's is created with its first output, so `true` costs no file.
    if (!p->foreground) {
        open_log(*p);
    }
    if (spawned.input) {
        p->input = std::move(spawned.input);
    } else if (request.pty && request.interactive) {
        p->input = UniqueFd(::fcntl(spawned.output.get(), F_DUPFD_CLOEXEC, 3));
    }
    if (!request.pty) {
        // A bigger pipe: fewer wake-ups for chatty commands (1 MiB is the unprivileged limit).
        (void)::fcntl(spawned.output.get(), F_SETPIPE_SZ, 1 << 20);
    }

    {
        std::lock_guard lock(mu_);
        procs_[p->id] = p;
        if (!p->foreground) {
            order_.push_back(p->id);
        }
        count_running(1);
    }
    // A foreground command's start and end need no fsync of their own: its ToolCompleted is
    // durable and follows within the call. (An adopted command's ProcessAdopted is durable,
    // and so is its end.)
    if (events_ != nullptr) {
        events_->record("ProcessStarted",
                        {{"id", p->id},
                         {"pid", p->pid},
                         {"command", p->command},
                         {"cwd", p->cwd},
                         {"call", p->call_id},
                         {"log", p->log_path},
                         {"pty", p->pty},
                         {"background", !p->foreground}},
                        !p->foreground);
    }
    SPDLOG_LOGGER_DEBUG(log, "started {} pid={} pty={} command={}", p->id, p->pid, p->pty,
                        p->command);

    // The descriptors are handed to the reader thread, which alone touches them from now on.
    int out_fd = spawned.output.release();
    int status_fd = spawned.status.release();
    asio::post(reader_->io(), [this, p, out_fd, status_fd] {
        boost::system::error_code ec;
        p->out.assign(out_fd, ec);
        if (ec) {
            ::close(out_fd);
            on_output_closed(*p);
        } else {
            p->chunk = std::make_unique<char[]>(kReadChunk);
            auto read_more = std::make_shared<std::function<void()>>();
            *read_more = [this, p, read_more] {
                p->out.async_read_some(
                    asio::buffer(p->chunk.get(), kReadChunk),
                    [this, p, read_more](const boost::system::error_code& err, size_t n) {
                        if (n > 0) {
                            on_output(*p, p->chunk.get(), n);
                        }
                        if (err) {
                            // EOF on a pipe; EIO on a PTY master once every slave is closed.
                            on_output_closed(*p);
                            boost::system::error_code ignored;
                            p->out.close(ignored);
                            p->chunk.reset();
                            *read_more = nullptr;  // breaks the self-reference
                            return;
                        }
                        (*read_more)();
                    });
            };
            (*read_more)();
        }
        p->status.assign(status_fd, ec);
        if (ec) {
            ::close(status_fd);
            on_status(*p, std::nullopt);
            return;
        }
        p->report = std::make_unique<char[]>(workspace::kMaxExitReportBytes);
        asio::async_read(
            p->status, asio::buffer(p->report.get(), workspace::kMaxExitReportBytes),
            [this, p](const boost::system::error_code&, size_t n) {
                // Read until EOF (the worker writes the report at once, then
                // closes) or until the buffer is full, which no report fills.
                std::optional<workspace::ExitReport> report =
                    workspace::decode_exit_report(std::string_view(p->report.get(), n));
                p->report.reset();
                boost::system::error_code ignored;
                p->status.close(ignored);
                on_status(*p, std::move(report));
            });
    });

    std::lock_guard lock(mu_);
    return info_locked(*p);
}

int ProcessManagerImpl::open_log_file(const Proc& p, int flags, mode_t mode) const {
    flags |= O_CLOEXEC | O_NOFOLLOW;
    return retry_eintr([&] {
        if (log_dir_fd_) {
            const std::string name = p.log_path.substr(p.log_path.rfind('/') + 1);
            return ::openat(log_dir_fd_.get(), name.c_str(), flags, mode);
        }
        return ::open(p.log_path.c_str(), flags, mode);
    });
}

void ProcessManagerImpl::open_log(Proc& p) {
    p.log_opened = true;
    if (config_.budget != nullptr) {
        config_.budget->set_in_use(p.log_path.substr(p.log_path.rfind('/') + 1), true);
    }
    int fd = open_log_file(p, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    if (fd < 0) {
        // Without a log the output still reaches the ring; the supervisor log says why.
        SPDLOG_LOGGER_WARN(log::get("process"), "cannot open {}: {}", p.log_path,
                           std::strerror(errno));
    } else {
        (void)::fchmod(fd, 0644);  // the truncation marker sends the model here, whatever the umask
    }
    p.log = UniqueFd(fd);
}

void ProcessManagerImpl::on_output(Proc& p, const char* data, size_t n) {
    std::lock_guard lock(mu_);
    if (!p.log_opened) {
        open_log(p);
    }
    uint64_t base = p.ring.total();
    if (p.log && !p.log_full) {
        // The log's own cap, then the session's output budget (which it shares with every
        // other log and spilled result). The log goes on only while the budget has room for
        // the output and for the note that would say where the log stops: so it never stops
        // without saying so (unless even that room was taken meanwhile).
        const uint64_t under_cap = std::min<uint64_t>(n, config_.log_cap_bytes - p.log_written);
        uint64_t keep = under_cap;
        uint64_t room = 0;  // granted for the output and the note
        bool budget_full = false;
        if (config_.budget != nullptr) {
            room = config_.budget->take(keep + kStopNoteRoom);
            budget_full = room < keep + kStopNoteRoom;
            if (!budget_full && keep == n) {
                config_.budget->give_back(kStopNoteRoom);
                room = keep;
            }
        }
        std::string stop;
        if (keep < n || budget_full) {
            p.log_full = true;
            stop = stop_note(
                budget_full
                    ? fmt::format("{} is full (every log and spilled result draw on it)",
                                  config_.budget->limit_met())
                    : fmt::format("its cap of {}", tools::format_size(config_.log_cap_bytes)));
            if (config_.budget != nullptr) {
                // The note first, then as much of the output as the rest of the room holds.
                if (room < stop.size()) {
                    stop.clear();
                }
                keep = std::min(keep, room - stop.size());
                config_.budget->give_back(room - stop.size() - keep);
            }
        }
        if (auto w = write_all(p.log.get(), std::string_view(data, static_cast<size_t>(keep))); w) {
            p.log_written += keep;
            (void)write_all(p.log.get(), stop);
        } else {
            SPDLOG_LOGGER_WARN(log::get("process"), "log {} write failed: {}", p.log_path,
                               w.error().message);
            p.log.reset();
        }
    }
    p.ring.append(std::string_view(data, n));
    p.lines.append(base, std::string_view(data, n));
    p.last_output = Clock::now();
    ++p.changes;
    changed_.notify_all();
}

void ProcessManagerImpl::on_output_closed(Proc& p) {
    std::lock_guard lock(mu_);
    finish_log(p);
    p.output_closed = true;
    p.last_output = Clock::now();
    ++p.changes;
    changed_.notify_all();
}

void ProcessManagerImpl::finish_log(Proc& p) {
    if (p.log && p.log_full) {
        // What the log lacks, then as much of the tail the ring still holds (at most
        // ring_bytes) as the budget grants, its end first.
        const uint64_t total = p.ring.total();
        const uint64_t from = std::max(p.ring.oldest(), p.log_written);
        std::string tail;
        p.ring.copy(from, static_cast<size_t>(total - from), tail);
        uint64_t shown = tail.size();
        bool noted = true;
        if (config_.budget != nullptr) {
            // Room for the note first (its figures are not known yet: room for the longest).
            noted = config_.budget->take_all(gap_note_max());
            shown = noted ? config_.budget->take(tail.size()) : 0;
        }
        p.log_dropped = total - p.log_written - shown;
        p.log_end_dropped = shown == 0;
        if (noted) {
            const std::string note = gap_note(p.log_dropped, shown);
            if (config_.budget != nullptr) {
                config_.budget->give_back(gap_note_max() - note.size());
            }
            (void)write_all(p.log.get(), note);
            (void)write_all(p.log.get(), std::string_view(tail).substr(tail.size() - shown));
        }
    }
    if (config_.budget != nullptr && p.log_opened) {
        config_.budget->set_in_use(p.log_path.substr(p.log_path.rfind('/') + 1), false);
    }
    p.log.reset();
}

void ProcessManagerImpl::on_status(Proc& p, std::optional<workspace::ExitReport> report) {
    const std::optional<int> wait_status =
        report ? std::optional<int>(report->wait_status) : std::nullopt;
    nlohmann::json fields;
    {
        std::lock_guard lock(mu_);
        if (p.state != tools::ProcessState::kRunning) {
            return;
        }
        p.ended_at = Clock::now();
        count_running(-1);
        if (!wait_status) {
            p.state = tools::ProcessState::kFailed;
            p.failure = "the sandbox worker stopped, and every process with it";
        } else {
            p.state =
                p.stop_requested ? tools::ProcessState::kStopped : tools::ProcessState::kExited;
            if (WIFSIGNALED(*wait_status)) {
                p.signal = WTERMSIG(*wait_status);
            } else {
                p.exit_code = WEXITSTATUS(*wait_status);
            }
            p.leftovers = std::move(report->leftovers);
        }
        p.input.reset();
        p.pidfd.reset();
        if (config_.network != nullptr && !p.network_tag.empty()) {
            config_.network->command_ended(p.network_tag);
        }
        fields = {
            {"id", p.id},
            {"pid", p.pid},
            {"state", tools::process_state_name(p.state)},
            {"exit_code", p.exit_code ? nlohmann::json(*p.exit_code) : nlohmann::json()},
            {"signal", p.signal ? nlohmann::json(*p.signal) : nlohmann::json()},
            {"runtime_ms",
             std::chrono::duration_cast<std::chrono::milliseconds>(p.ended_at - p.started).count()},
            {"output_bytes", p.ring.total()},
            {"background", !p.foreground}};
        if (p.leftovers.count > 0) {
            fields["leftovers_stopped"] = p.leftovers.count;
            fields["leftover_names"] = p.leftovers.names;
        }
        ++p.changes;
        changed_.notify_all();
    }
    SPDLOG_LOGGER_DEBUG(log::get("process"), "{} ended: {}", p.id,
                        wait_status ? exit_description(*wait_status) : std::string("worker lost"));
    if (events_ != nullptr) {
        const bool durable = fields.value("background", true);
        events_->record("ProcessExited", std::move(fields), durable);
    }
}

std::shared_ptr<ProcessManagerImpl::Proc> ProcessManagerImpl::find_locked(const std::string& id) {
    auto it = procs_.find(id);
    return it == procs_.end() ? nullptr : it->second;
}

Result<std::shared_ptr<ProcessManagerImpl::Proc>> ProcessManagerImpl::find(const std::string& id) {
    std::lock_guard lock(mu_);
    auto p = find_locked(id);
    if (!p) {
        return Error{Errc::kNotFound, fmt::format("no process \"{}\"", id)};
    }
    return p;
}

tools::ProcessInfo ProcessManagerImpl::info_locked(const Proc& p) const {
    const bool running = p.state == tools::ProcessState::kRunning;
    auto until = running ? Clock::now() : p.ended_at;
    uint64_t total = p.ring.total();
    // A trailing partial line counts as a line.
    uint64_t lines = p.lines.newlines() + (p.lines.last_line_start() < total ? 1 : 0);
    return tools::ProcessInfo{
        .id = p.id,
        .pid = p.pid,
        .command = p.command,
        .cwd = p.cwd,
        .log_path = p.log_path,
        .state = p.state,
        .exit_code = p.exit_code,
        .signal = p.signal,
        .background = !p.foreground,
        .pty = p.pty,
        .started_at = p.started_wall,
        .runtime = std::chrono::duration_cast<std::chrono::milliseconds>(until - p.started),
        .output_bytes = total,
        .output_lines = lines,
        .output_closed = p.output_closed,
        .failure = p.failure,
        .log_dropped = p.log_dropped,
        .log_end_dropped = p.log_end_dropped,
        .leftovers = p.leftovers.count,
        .leftover_names = p.leftovers.names,
        .network_refused = config_.network != nullptr && !p.network_tag.empty()
                               ? config_.network->refusals(p.network_tag)
                               : std::vector<tools::NetworkRefusal>{},
    };
}

bool ProcessManagerImpl::drained_locked(const Proc& p, Clock::time_point now) const {
    if (p.state == tools::ProcessState::kRunning) {
        return false;
    }
    return p.output_closed || now - std::max(p.ended_at, p.last_output) >= config_.drain_quiet;
}

std::vector<tools::ProcessInfo> ProcessManagerImpl::list() {
    std::lock_guard lock(mu_);
    std::vector<tools::ProcessInfo> out;
    for (const auto& id : order_) {
        if (auto p = find_locked(id)) {
            out.push_back(info_locked(*p));
        }
    }
    return out;
}

Result<tools::ProcessInfo> ProcessManagerImpl::info(const std::string& id) {
    ASSIGN_OR_RETURN(auto p, find(id));
    std::lock_guard lock(mu_);
    return info_locked(*p);
}

Result<std::vector<std::string>> ProcessManagerImpl::path_commands() {
    return spawner_.path_commands();
}

template <class Pred>
void ProcessManagerImpl::wait_locked(std::unique_lock<std::mutex>& lock, Clock::time_point until,
                                     const std::stop_token& stop, Pred done) {
    changed_.wait_until(lock, stop, until, done);
}

Result<tools::ProcessInfo> ProcessManagerImpl::wait_exit(
    const std::string& id, Clock::time_point until, std::stop_token stop,
    const std::function<void(const tools::ProcessInfo&)>& tick) {
    ASSIGN_OR_RETURN(auto p, find(id));
    auto next_tick = Clock::now() + std::chrono::seconds(1);
    std::unique_lock lock(mu_);
    for (;;) {
        auto now = Clock::now();
        if (drained_locked(*p, now) || now >= until || stop.stop_requested()) {
            return info_locked(*p);
        }
        auto wake = std::min(until, next_tick);
        if (p->state != tools::ProcessState::kRunning) {
            wake = std::min(wake, std::max(p->ended_at, p->last_output) + config_.drain_quiet);
        }
        uint64_t seen = p->changes;
        wait_locked(lock, wake, stop, [&] { return p->changes != seen; });
        if (tick && Clock::now() >= next_tick) {
            tools::ProcessInfo snapshot = info_locked(*p);
            lock.unlock();
            tick(snapshot);
            lock.lock();
            next_tick += std::chrono::seconds(1);
        }
    }
}

Result<tools::ProcessInfo> ProcessManagerImpl::wait_output(const std::string& id,
                                                           uint64_t after_bytes,
                                                           Clock::time_point until,
                                                           std::chrono::milliseconds settle,
                                                           std::stop_token stop) {
    ASSIGN_OR_RETURN(auto p, find(id));
    std::unique_lock lock(mu_);
    wait_locked(lock, until, stop, [&] {
        return p->ring.total() > after_bytes || p->state != tools::ProcessState::kRunning;
    });
    // Then while output keeps coming, until it has been quiet for `settle`.
    for (;;) {
        auto now = Clock::now();
        if (now >= until || stop.stop_requested() || p->output_closed ||
            now - p->last_output >= settle) {
            break;
        }
        if (p->state != tools::ProcessState::kRunning && drained_locked(*p, now)) {
            break;
        }
        uint64_t seen = p->changes;
        wait_locked(lock, std::min(until, p->last_output + settle), stop,
                    [&] { return p->changes != seen; });
    }
    return info_locked(*p);
}

Result<uint64_t> ProcessManagerImpl::scan_log(
    const Proc& p, uint64_t from, uint64_t to,
    const std::function<bool(std::string_view, uint64_t)>& chunk_fn) const {
    UniqueFd in(open_log_file(p, O_RDONLY));
    if (!in) {
        return errno_error(fmt::format("open the log \"{}\"", p.log_path), errno);
    }
    std::string buf(64 << 10, '\0');
    uint64_t at = from;
    while (at < to) {
        const auto want = static_cast<size_t>(std::min<uint64_t>(buf.size(), to - at));
        const ssize_t r = retry_eintr(
            [&] { return ::pread(in.get(), buf.data(), want, static_cast<off_t>(at)); });
        if (r <= 0) {
            break;
        }
        if (!chunk_fn(std::string_view(buf.data(), static_cast<size_t>(r)), at)) {
            break;
        }
        at += static_cast<uint64_t>(r);
    }
    return at;
}

Result<tools::OutputSlice> ProcessManagerImpl::output(const std::string& id, uint64_t from,
                                                      uint64_t max_bytes) {
    ASSIGN_OR_RETURN(auto p, find(id));
    std::lock_guard lock(mu_);
    const uint64_t total = p->ring.total();
    from = std::min(from, total);
    tools::OutputSlice slice;
    if (from < p->ring.oldest() && from >= p->log_written) {
        from = p->ring.oldest();  // past the log's cap and already gone from memory
    }
    slice.begin = from;
    uint64_t want = std::min(max_bytes, total - from);
    if (from >= p->ring.oldest()) {
        p->ring.copy(from, static_cast<size_t>(want), slice.bytes);
    } else {
        want = std::min(want, p->log_written - from);
        slice.bytes.reserve(static_cast<size_t>(want));
        RETURN_IF_ERROR(scan_log(*p, from, from + want, [&](std::string_view chunk, uint64_t) {
            slice.bytes.append(chunk);
            return true;
        }));
    }
    // The line number at `begin`: newlines before it, plus one.
    uint64_t before = 0;
    if (from >= p->ring.oldest()) {
        before = p->lines.newlines() - p->ring.newlines_from(from);
    } else {
        const LineIndex::Mark mark = p->lines.mark_before_offset(from);
        before = mark.line - 1;
        (void)scan_log(*p, mark.offset, from, [&](std::string_view chunk, uint64_t) {
            before += static_cast<uint64_t>(std::count(chunk.begin(), chunk.end(), '\n'));
            return true;
        });
    }
    slice.first_line = before + 1;
    return slice;
}

Result<uint64_t> ProcessManagerImpl::line_start(const std::string& id, uint64_t line) {
    ASSIGN_OR_RETURN(auto p, find(id));
    std::lock_guard lock(mu_);
    if (line <= 1) {
        return uint64_t{0};
    }
    if (line > p->lines.newlines() + 1) {
        return p->ring.total();
    }
    if (auto start = p->lines.recent_start(line)) {
        return *start;
    }
    // Behind the ring: from the mark before it, count lines in the log.
    const LineIndex::Mark mark = p->lines.mark_before_line(line);
    if (mark.line == line) {
        return mark.offset;
    }
    uint64_t current = mark.line;
    std::optional<uint64_t> found;
    ASSIGN_OR_RETURN(
        const uint64_t scanned,
        scan_log(*p, mark.offset, p->log_written, [&](std::string_view chunk, uint64_t at) {
            for (size_t nl = chunk.find('\n'); nl != std::string_view::npos;
                 nl = chunk.find('\n', nl + 1)) {
                if (++current == line) {
                    found = at + nl + 1;
                    return false;
                }
            }
            return true;
        }));
    return found.value_or(std::min(scanned, p->ring.total()));
}

Result<uint64_t> ProcessManagerImpl::cursor(const std::string& id) {
    ASSIGN_OR_RETURN(auto p, find(id));
    std::lock_guard lock(mu_);
    return p->cursor;
}

Status ProcessManagerImpl::set_cursor(const std::string& id, uint64_t offset) {
    ASSIGN_OR_RETURN(auto p, find(id));
    std::lock_guard lock(mu_);
    p->cursor = std::min(offset, p->ring.total());
    return {};
}

Result<size_t> ProcessManagerImpl::write(const std::string& id, std::string_view bytes) {
    ASSIGN_OR_RETURN(auto p, find(id));
    int fd = -1;
    {
        std::lock_guard lock(mu_);
        if (p->state != tools::ProcessState::kRunning) {
            return Error{Errc::kFailedPrecondition, fmt::format("{} has ended", p->id)};
        }
        if (!p->input) {
            return Error{Errc::kFailedPrecondition, fmt::format("{} has no stdin", p->id)};
        }
        // A dup keeps the descriptor valid while this thread writes without the lock.
        fd = ::fcntl(p->input.get(), F_DUPFD_CLOEXEC, 3);
    }
    if (fd < 0) {
        return errno_error("dup stdin", errno);
    }
    UniqueFd owned(fd);
    size_t sent = 0;
    auto deadline = Clock::now() + kWriteTimeout;
    while (sent < bytes.size()) {
        ssize_t w = ::write(fd, bytes.data() + sent, bytes.size() - sent);
        if (w > 0) {
            sent += static_cast<size_t>(w);
            continue;
        }
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w < 0 && errno == EAGAIN) {
            auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
            if (left.count() <= 0) {
                break;  // it stopped reading its input
            }
            pollfd pfd{fd, POLLOUT, 0};
            (void)::poll(&pfd, 1, static_cast<int>(left.count()));
            continue;
        }
        if (sent == 0) {
            return errno_error(fmt::format("write to {}", p->id), errno);
        }
        break;
    }
    return sent;
}

Result<tools::ProcessInfo> ProcessManagerImpl::stop(const std::string& id,
                                                    std::chrono::milliseconds grace) {
    ASSIGN_OR_RETURN(auto p, find(id));
    bool running = false;
    {
        std::lock_guard lock(mu_);
        running = p->state == tools::ProcessState::kRunning;
        if (running) {
            p->stop_requested = true;
        }
    }
    std::unique_lock lock(mu_);
    if (running) {
        lock.unlock();
        (void)signal(*p, SIGTERM);
        // A PTY's session also gets SIGHUP, as when a terminal closes (interactive shells
        // ignore SIGTERM but not SIGHUP).
        if (p->pty) {
            (void)signal(*p, SIGHUP);
        }
        lock.lock();
        wait_locked(lock, Clock::now() + grace, {},
                    [&] { return p->state != tools::ProcessState::kRunning; });
    }
    lock.unlock();
    (void)signal(*p, SIGKILL);  // the leader or whatever it left in its group
    lock.lock();
    wait_locked(lock, Clock::now() + kKillWait, {},
                [&] { return p->state != tools::ProcessState::kRunning; });
    return info_locked(*p);
}

Status ProcessManagerImpl::kill(const std::string& id) {
    ASSIGN_OR_RETURN(auto p, find(id));
    {
        std::lock_guard lock(mu_);
        if (p->state == tools::ProcessState::kRunning) {
            p->stop_requested = true;
        }
    }
    (void)signal(*p, SIGKILL);
    return {};
}

Result<tools::ProcessLoad> ProcessManagerImpl::load() {
    ASSIGN_OR_RETURN(workspace::ProcessCensus census, spawner_.census());
    tools::ProcessLoad load{.total = census.total, .limit = config_.pids_limit};
    std::lock_guard lock(mu_);
    // A command leads its own session: the census counts by session, this table by leader.
    std::map<int, const Proc*> running;
    for (const auto& [id, p] : procs_) {
        if (!p->foreground && p->state == tools::ProcessState::kRunning) {
            running.emplace(p->pid, p.get());
        }
    }
    for (const workspace::ProcessCensus::Session& session : census.sessions) {
        if (auto it = running.find(session.sid); it != running.end()) {
            load.holders.push_back({.id = it->second->id,
                                    .command = it->second->command,
                                    .processes = session.processes});
        } else {
            load.elsewhere += session.processes;
        }
    }
    std::stable_sort(load.holders.begin(), load.holders.end(),
                     [](const auto& a, const auto& b) { return a.processes > b.processes; });
    return load;
}

Result<std::string> ProcessManagerImpl::adopt(const std::string& id) {
    std::unique_lock lock(mu_);
    auto p = find_locked(id);
    if (!p) {
        return Error{Errc::kNotFound, fmt::format("no process \"{}\"", id)};
    }
    if (!p->foreground) {
        return p->id;
    }
    std::string public_id = fmt::format("p{}", next_public_++);
    std::string new_log = fmt::format("{}/{}.log", config_.log_dir, public_id);
    // The descriptor keeps writing to the renamed file; a log not created yet gets the name.
    const bool renamed =
        log_dir_fd_ ? ::renameat(log_dir_fd_.get(), fmt::format("{}.log", id).c_str(),
                                 log_dir_fd_.get(), fmt::format("{}.log", public_id).c_str()) == 0
                    : ::rename(p->log_path.c_str(), new_log.c_str()) == 0;
    if (!p->log_opened || renamed) {
        p->log_path = new_log;
    }
    procs_.erase(id);
    p->id = public_id;
    p->foreground = false;
    procs_[public_id] = p;
    order_.push_back(public_id);
    lock.unlock();
    if (events_ != nullptr) {
        events_->record("ProcessAdopted", {{"id", public_id}, {"was", id}, {"pid", p->pid}}, true);
    }
    return public_id;
}

void ProcessManagerImpl::forget(const std::string& id) {
    std::shared_ptr<Proc> p;
    {
        std::lock_guard lock(mu_);
        p = find_locked(id);
        if (!p || !p->foreground || p->state == tools::ProcessState::kRunning) {
            return;
        }
        procs_.erase(id);
    }
    // Its output may still be open (a leftover child): stop reading it on the reader thread.
    asio::post(reader_->io(), [p] {
        boost::system::error_code ignored;
        p->out.close(ignored);
    });
}

size_t ProcessManagerImpl::ring_memory() {
    std::lock_guard lock(mu_);
    size_t total = 0;
    for (const auto& [id, p] : procs_) {
        total += p->ring.memory();
    }
    return total;
}

}  // namespace stockade::runner
