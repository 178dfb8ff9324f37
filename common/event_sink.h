// Where a session's audit events go (DESIGN.md §6): the event log in the supervisor, a list in
// tests. One interface for every part that records something — the executor's call events, the
// tools' file reads and writes, the process table's starts and exits, the worker's lifetime.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

namespace stockade {

class EventSink {
public:
    virtual ~EventSink() = default;
    // Records one event of `type` ("ToolCompleted", "FileModified", ...) with its fields.
    // `durable` (it records a change): made to reach the disk soon, without waiting for the
    // next durable one; the event log writes every event before this returns and syncs
    // durable ones off the caller's path. Thread-safe; never fails the caller (a sink logs its
    // own errors).
    virtual void record(std::string_view type, nlohmann::json fields, bool durable) = 0;
};

}  // namespace stockade
