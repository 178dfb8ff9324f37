#include "runner/event_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <ctime>

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

Result<EventLog> EventLog::open(const std::string& path, std::string session_id) {
    uint64_t next = 1;
    if (auto existing = read_all(path); existing && !existing->events.empty()) {
        const auto& last = existing->events.back();
        if (last.contains("seq") && last["seq"].is_number_unsigned()) {
            next = last["seq"].get<uint64_t>() + 1;
        }
    }
    int fd = retry_eintr(
        [&] { return ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600); });
    if (fd < 0) {
        return errno_error(fmt::format("open event log \"{}\"", path), errno);
    }
    return EventLog(UniqueFd(fd), std::move(session_id), next);
}

EventLog::EventLog(EventLog&& other) noexcept
    : fd_(std::move(other.fd_)),
      session_id_(std::move(other.session_id_)),
      next_seq_(other.next_seq_) {}

void EventLog::append(std::string_view type, nlohmann::json fields, bool durable) {
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
    auto written = write_all(fd_.get(), line);
    if (written && durable && ::fdatasync(fd_.get()) != 0) {
        written = errno_error("fdatasync", errno);
    }
    if (!written) {
        SPDLOG_LOGGER_WARN(log::get("runner"), "event log append failed type={} error={}", type,
                           written.error().message);
    }
}

Result<EventLog::Replay> EventLog::read_all(const std::string& path) {
    auto text = read_file(path, 1ULL << 30);
    if (!text) {
        return std::move(text).error();
    }
    Replay replay;
    size_t start = 0;
    while (start < text->size()) {
        size_t end = text->find('\n', start);
        if (end == std::string::npos) {
            end = text->size();  // a torn last line (crash mid-append) is skipped below
        }
        std::string_view line(text->data() + start, end - start);
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

}  // namespace stockade::runner
