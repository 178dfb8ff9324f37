// The session's event log: the product's audit record (DESIGN.md §6), not developer logging.
// Versioned JSONL, append-only.
//   {"v":1,"seq":7,"ts":"2026-11-30T12:00:00.123Z","session":"s-…","type":"ToolCompleted",...}
//
// Every event is written (write(2), into the kernel's page cache) before `record` returns, so
// nothing recorded is lost when the supervisor crashes, is killed or runs out of memory. A
// durable event is also made to reach the disk — by one background thread for the whole
// process (group commit: the events recorded while one fdatasync runs share the next), not on
// the call's path. What a power cut or a kernel crash can lose is therefore the events of the
// last sync's time (milliseconds), as it could lose the answer the client had not stored yet;
// docs/architecture.md ("The event log on disk") gives the whole argument. `flush` and the
// destructor wait for the disk.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/event_sink.h"
#include "common/result.h"
#include "common/unique_fd.h"

namespace stockade::runner {

inline constexpr int kEventSchemaVersion = 1;

class EventLog final : public EventSink {
public:
    // Opens (creating) the log for appending; sequence numbers continue after existing events.
    static Result<EventLog> open(const std::string& path, std::string session_id);
    // The same for `name` beneath `dir_fd`, never through a symlink, and only a log the
    // supervisor wrote (see read_supervisor_log). `shown` names it in errors.
    static Result<EventLog> open_at(int dir_fd, const std::string& name, const std::string& shown,
                                    std::string session_id);

    EventLog(EventLog&& other) noexcept;
    EventLog& operator=(EventLog&&) = delete;
    EventLog(const EventLog&) = delete;
    EventLog& operator=(const EventLog&) = delete;
    // Syncs what the background thread has not synced yet.
    ~EventLog() override;

    // Appends one event. Thread-safe. Failures are logged, never thrown: the audit record must
    // not take a tool call down with it.
    void record(std::string_view type, nlohmann::json fields, bool durable) override;

    // Returns when every event recorded so far is on disk (fdatasync). Failures are logged.
    void flush();

    // Every well-formed event of a log, in order, and how many lines were unreadable.
    struct Replay {
        std::vector<nlohmann::json> events;
        size_t skipped = 0;
    };
    static Result<Replay> read_all(const std::string& path);
    // read_all of `name` beneath `dir_fd` that refuses what the supervisor cannot have written
    // alone: a symlink, anything but a regular file, a file of another user or that others may
    // write (kPermissionDenied). A missing file is kNotFound.
    // `name` beneath `dir_fd`, opened for reading when it is a log the supervisor can have
    // written alone (the refusals of read_supervisor_log, with the same errors; `action` says
    // what was refused in the message: "replay", "read").
    static Result<UniqueFd> open_supervisor_log(int dir_fd, const std::string& name,
                                                const std::string& shown, std::string_view action);
    static Result<Replay> read_supervisor_log(int dir_fd, const std::string& name,
                                              const std::string& shown);

    // What the background syncer shares with a log: its descriptor, and how many durable
    // writes were asked for and are known on disk. Outlives the EventLog while a sync of it is
    // queued or running.
    struct SyncState;

private:
    EventLog(UniqueFd fd, std::string session_id, uint64_t next_seq);
    std::mutex mutex_;
    std::shared_ptr<SyncState> sync_;  // holds the descriptor the events are appended to
    std::string session_id_;
    uint64_t next_seq_ = 1;
};

// "2026-11-30T12:00:00.123Z"
std::string utc_timestamp();

}  // namespace stockade::runner
