// `stockade log SESSION`'s timeline: a session's events (runner/session/event_log.h) as lines an
// operator reads, one event at a time so that --follow prints each as it is appended. And the
// times --since takes. Pure: no I/O.
//
//   2026-12-04 (UTC)
//   16:58:05.445  session started · workspace /srv/app · image host · policy workspace-write,
//                 local mode, 0 rules · network none
//   16:58:05.449  #1 read a.txt -> allow (no rule: the workspace-write preset's default)
//   16:58:05.477  #1 read: ok in 28 ms · Read a.txt · lines 1–2 of 2
//   16:58:05.541    modified a.txt +2 -1
//   16:58:05.603    process p2 exited 3 after 12.0 s: npm run dev
//   16:58:05.667    network refused example.com:80 (not in the allowlist)
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace stockade::runner {

// `text` made safe for a terminal, on one line: control characters (C0, DEL, C1) and the
// bidirectional overrides become '?', and past `max` bytes it is cut (never inside a code point)
// and ends in "…". What the log holds came from a model and its commands: it must not move the
// cursor, set the title or reorder what the operator reads.
std::string terminal_text(std::string_view text, std::size_t max = 160);

// An event's "ts" ("2026-11-30T12:00:00.123Z") or any RFC 3339 time ("2026-11-30T13:00:00+01:00",
// "2026-11-30t12:00:00z", fractions of any length); nullopt when it is not one.
std::optional<std::chrono::system_clock::time_point> parse_rfc3339(std::string_view text);

// What --since takes: a duration back from `now` ("90s", "10m", "2h", "1d", "1h30m"), or an RFC
// 3339 time, or a date ("2026-11-30", midnight UTC). kInvalidArgument with the forms it takes.
Result<std::chrono::system_clock::time_point> parse_since(
    std::string_view text, std::chrono::system_clock::time_point now);

// The arguments of a call, in a few words: the file of read, write and edit, grep's and glob's
// pattern and where, bash's command, process's action and id. Paths beneath `workspace` are
// shown relative to it. Terminal-safe.
std::string argument_summary(std::string_view tool, const nlohmann::json& arguments,
                             std::string_view workspace = {});

// Renders a session's events as its timeline, in the order of the log. Calls are numbered #1,
// #2, … in the order they were requested (the log's call ids repeat across resumed runs).
// What it shows of each event:
//   SessionStarted, SessionResumed (with the policy of the PolicyLoaded before it), SessionEnded;
//   ToolDecided: the call, its arguments, the decision and the rule (or the preset default)
//     that made it; ToolAnswered, NetworkAnswered: the user's answer;
//   ToolCompleted, ToolFailed: the outcome (ok, exit N, refused, failed), duration and title;
//   FileModified: the file, created or modified, with +/- line counts;
//   ProcessStarted, ProcessExited (of background processes, and of a command that left
//     processes behind: a foreground command's call says how it ended), ProcessAdopted: the
//     process, its exit code or signal;
//   NetworkConnection: refusals only; WorkerStarted, WorkerExited: the sandbox worker's
//     isolation, restarts and deaths.
// FileRead, ToolRequested, ToolStarted, ToolAsked and allowed connections add nothing to the
// text (they are in --json). Unknown event types are skipped.
class Timeline {
public:
    // `since`: events before it (or without a time) change what the timeline knows (the calls
    // open, their numbers, the workspace) but add no lines.
    explicit Timeline(std::optional<std::chrono::system_clock::time_point> since = std::nullopt)
        : since_(since) {}

    // The lines `event` adds (each ending in '\n'), or "" for none.
    std::string add(const nlohmann::json& event);
    // The lines for what the log leaves open at its end: calls with no result yet.
    std::string finish();
    // Calls requested so far.
    [[nodiscard]] std::uint64_t calls() const { return next_call_ - 1; }

private:
    struct Call {
        std::uint64_t number = 0;
        std::string tool;
        std::string summary;  // argument_summary
        bool shown = false;   // its request line was printed
    };

    std::string line(const nlohmann::json& event, std::string_view text, int indent = 0);
    std::string call_line(const Call& call, const std::string& decision_text,
                          const nlohmann::json& event);
    std::string close_open_calls(const nlohmann::json& event, std::string_view why);
    // The calls without a result yet, in their order, each as "#N tool[ summary]".
    [[nodiscard]] std::vector<std::string> open_calls() const;
    std::string relative(std::string_view path) const;
    Call* find_call(const nlohmann::json& event);

    std::map<std::string, Call> open_;              // by the log's call id
    std::map<std::string, std::string> processes_;  // process id -> command
    nlohmann::json policy_;                         // the last PolicyLoaded
    std::string workspace_;                         // of the last SessionStarted
    std::string date_;                              // of the last line printed
    std::uint64_t next_call_ = 1;
    std::optional<std::chrono::system_clock::time_point> since_;
    bool quiet_ = false;  // the event being added is before since_
};

}  // namespace stockade::runner
