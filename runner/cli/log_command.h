// `stockade log`: the sessions of a state directory (local ones and serve --http tenants'), and
// one session's event log as a readable timeline (runner/cli/log_timeline.h), now or as it is
// appended (--follow). Reads by descriptor beneath the state directory (state_sessions.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace stockade::runner {

struct LogOptions {
    std::string state_dir{};  // --state-dir; empty: default_state_dir()
    std::string session{};    // SESSION (s-…, an MCP session id, or a prefix); empty: list them
    bool json = false;        // the list as a JSON array; a session's events as JSON lines
    bool follow = false;      // keep printing what is appended until the session ends
    std::string since{};      // only events at or after: a duration back from now, or a time
    std::chrono::milliseconds poll{200};  // --follow: how often the log is looked at
};

// Exit 0; 1 when the state directory, the session or its log cannot be read; 2 for a usage
// error (a SESSION that cannot be an id, a --since that is not a time, --follow without
// SESSION).
int log_command(const LogOptions& options);

// Splits the bytes of an event log, as they are read, into events. A line that is not an event
// of this schema (not JSON, not an object, no "type", another "v") is counted and skipped, as
// EventLog's replay does; a last line without its newline waits for the rest. Pure.
class EventLineSplitter {
public:
    // The events the lines completed by `bytes` hold.
    std::vector<nlohmann::json> feed(std::string_view bytes);
    // The end of the log: a line still waiting for its newline is torn (a crash mid-append),
    // and counted as skipped.
    void finish();
    [[nodiscard]] std::size_t skipped() const { return skipped_; }

private:
    std::string partial_;
    std::size_t skipped_ = 0;
};

}  // namespace stockade::runner
