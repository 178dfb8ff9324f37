#include "runner/session/event_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <deque>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "common/log.h"
#include "common/syscall.h"

namespace stockade::runner {

std::string utc_timestamp() {
    using namespace std::chrono;  // NOLINT(google-build-using-namespace): local, for the units
    auto now = system_clock::now();
    auto secs = system_clock::to_time_t(now);
    auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
    std::tm tm{};
    ::gmtime_r(&secs, &tm);
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900,
                       tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

namespace {

// The sequence number after the last event of a replay.
uint64_t next_seq_after(const Result<EventLog::Replay>& existing) {
    if (existing && !existing->events.empty()) {
        const auto& last = existing->events.back();
        if (last.contains("seq") && last["seq"].is_number_unsigned()) {
            return last["seq"].get<uint64_t>() + 1;
        }
    }
    return 1;
}

// Splits a log's text into events; torn and foreign lines are counted, not fatal.
EventLog::Replay parse_log(const std::string& text) {
    EventLog::Replay replay;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos) {
            end = text.size();  // a torn last line (crash mid-append) is skipped below
        }
        std::string_view line(text.data() + start, end - start);
        start = end + 1;
        if (line.empty()) {
            continue;
        }
        auto event = nlohmann::json::parse(line, nullptr, false);
        if (event.is_discarded() || !event.is_object() || !event.contains("type") ||
            event.value("v", 0) != kEventSchemaVersion) {
            ++replay.skipped;
            continue;
        }
        replay.events.push_back(std::move(event));
    }
    return replay;
}

constexpr size_t kMaxLogBytes = size_t{1} << 30;

}  // namespace

struct EventLog::SyncState {
    SyncState(UniqueFd f, std::string id) : fd(std::move(f)), session(std::move(id)) {}
    const UniqueFd fd;
    const std::string session;  // for the warnings
    std::mutex mutex;           // the three below
    uint64_t requested = 0;     // durable events written
    uint64_t synced = 0;        // of those, the ones an fdatasync that began after them ended
    bool queued = false;        // in the syncer's queue, its sync not begun

    // fdatasync of everything written so far.
    void sync() {
        uint64_t target = 0;
        {
            std::lock_guard lock(mutex);
            queued = false;
            target = requested;
        }
        if (::fdatasync(fd.get()) != 0) {
            SPDLOG_LOGGER_WARN(log::get("runner"), "event log fdatasync failed session={} error={}",
                               session, errno_string(errno));
            return;
        }
        std::lock_guard lock(mutex);
        synced = std::max(synced, target);
    }
};

namespace {

// The one thread that syncs every event log of the process, in the order durable events asked
// for it. A log already queued is not queued twice: the sync that takes it off the queue covers
// every event written until then, and what comes while it runs queues the log again.
class Syncer {
public:
    static Syncer& instance() {
        static Syncer syncer;
        return syncer;
    }
    Syncer(const Syncer&) = delete;
    Syncer& operator=(const Syncer&) = delete;
    ~Syncer() {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_one();
        thread_.join();  // after the queue is drained
    }

    void enqueue(std::shared_ptr<EventLog::SyncState> state) {
        {
            std::lock_guard lock(mutex_);
            queue_.push_back(std::move(state));
        }
        wake_.notify_one();
    }

    // Takes `state` off the queue and waits for a sync of it that has begun: its log is being
    // closed, and closes its descriptor itself.
    void forget(const EventLog::SyncState* state) {
        std::unique_lock lock(mutex_);
        std::erase_if(queue_, [state](const auto& queued) { return queued.get() == state; });
        idle_.wait(lock, [this, state] { return running_ != state; });
    }

private:
    Syncer() : thread_([this] { run(); }) {}

    void run() {
        std::unique_lock lock(mutex_);
        for (;;) {
            wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
            if (queue_.empty()) {
                return;  // stopping, nothing left
            }
            std::shared_ptr<EventLog::SyncState> state = std::move(queue_.front());
            queue_.pop_front();
            running_ = state.get();
            lock.unlock();
            state->sync();
            state.reset();
            lock.lock();
            running_ = nullptr;
            idle_.notify_all();
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_;  // the thread: work, or stop
    std::condition_variable idle_;  // forget: a sync ended
    std::deque<std::shared_ptr<EventLog::SyncState>> queue_;
    const EventLog::SyncState* running_ = nullptr;  // the log being synced
    bool stopping_ = false;
    std::thread thread_;  // last: starts when everything above exists
};

}  // namespace

Result<EventLog> EventLog::open(const std::string& path, std::string session_id) {
    const uint64_t next = next_seq_after(read_all(path));
    int fd = retry_eintr(
        [&] { return ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600); });
    if (fd < 0) {
        return errno_error(fmt::format("open event log \"{}\"", path), errno);
    }
    return EventLog(UniqueFd(fd), std::move(session_id), next);
}

Result<EventLog> EventLog::open_at(int dir_fd, const std::string& name, const std::string& shown,
                                   std::string session_id) {
    auto existing = read_supervisor_log(dir_fd, name, shown);
    if (!existing && existing.error().code != Errc::kNotFound) {
        return std::move(existing).error();
    }
    const uint64_t next = next_seq_after(existing);
    int fd = retry_eintr([&] {
        return ::openat(dir_fd, name.c_str(),
                        O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    });
    if (fd < 0) {
        return errno_error(fmt::format("open event log \"{}\"", shown), errno);
    }
    return EventLog(UniqueFd(fd), std::move(session_id), next);
}

Result<UniqueFd> EventLog::open_supervisor_log(int dir_fd, const std::string& name,
                                               const std::string& shown, std::string_view action) {
    int fd = retry_eintr(
        [&] { return ::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC); });
    if (fd < 0) {
        const int err = errno;
        if (err == ENOENT) {
            return Error{Errc::kNotFound, fmt::format("no event log \"{}\"", shown), err};
        }
        return Error{err == ELOOP ? Errc::kPermissionDenied : Errc::kInternal,
                     fmt::format("open event log \"{}\"{}", shown,
                                 err == ELOOP ? ": it is a symlink, which is never followed"
                                              : ": " + errno_string(err)),
                     err};
    }
    UniqueFd owned(fd);
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        return errno_error(fmt::format("stat event log \"{}\"", shown), errno);
    }
    if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 022) != 0) {
        return Error{Errc::kPermissionDenied,
                     fmt::format("refusing to {} event log \"{}\": it is not a file only "
                                 "Stockade's user can write (owner uid {}, mode {:o})",
                                 action, shown, st.st_uid, st.st_mode & 07777)};
    }
    return owned;
}

Result<EventLog::Replay> EventLog::read_supervisor_log(int dir_fd, const std::string& name,
                                                       const std::string& shown) {
    ASSIGN_OR_RETURN(UniqueFd owned, open_supervisor_log(dir_fd, name, shown, "replay"));
    const int fd = owned.get();
    auto text = stockade::read_all(fd, kMaxLogBytes);  // not EventLog::read_all
    if (!text) {
        return text.error().wrap(fmt::format("read \"{}\"", shown));
    }
    return parse_log(*text);
}

EventLog::EventLog(UniqueFd fd, std::string session_id, uint64_t next_seq)
    : sync_(std::make_shared<SyncState>(std::move(fd), session_id)),
      session_id_(std::move(session_id)),
      next_seq_(next_seq) {}

EventLog::EventLog(EventLog&& other) noexcept
    : sync_(std::move(other.sync_)),
      session_id_(std::move(other.session_id_)),
      next_seq_(other.next_seq_) {}

EventLog::~EventLog() {
    if (sync_ == nullptr) {
        return;  // moved from
    }
    uint64_t requested = 0;
    uint64_t synced = 0;
    {
        std::lock_guard lock(sync_->mutex);
        requested = sync_->requested;
        synced = sync_->synced;
    }
    if (requested == 0) {
        return;  // never handed to the syncer
    }
    Syncer::instance().forget(sync_.get());  // so that the descriptor closes with this log
    if (synced < requested) {
        sync_->sync();
    }
}

void EventLog::flush() {
    if (sync_ != nullptr) {
        sync_->sync();
    }
}

void EventLog::record(std::string_view type, nlohmann::json fields, bool durable) {
    nlohmann::json event = nlohmann::json::object();
    std::lock_guard lock(mutex_);
    event["v"] = kEventSchemaVersion;
    event["seq"] = next_seq_++;
    event["ts"] = utc_timestamp();
    event["session"] = session_id_;
    event["type"] = type;
    if (fields.is_object()) {
        for (auto& [key, value] : fields.items()) {
            event[key] = std::move(value);
        }
    }
    std::string line = event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    auto written = write_all(sync_->fd.get(), line);
    if (!written) {
        SPDLOG_LOGGER_WARN(log::get("runner"), "event log append failed type={} error={}", type,
                           written.error().message);
        return;
    }
    if (durable) {
        bool enqueue = false;
        {
            std::lock_guard sync_lock(sync_->mutex);
            ++sync_->requested;
            enqueue = !std::exchange(sync_->queued, true);
        }
        if (enqueue) {
            Syncer::instance().enqueue(sync_);
        }
    }
}

Result<EventLog::Replay> EventLog::read_all(const std::string& path) {
    auto text = read_file(path, kMaxLogBytes);
    if (!text) {
        return std::move(text).error();
    }
    return parse_log(*text);
}

}  // namespace stockade::runner
