// The response streams of one HTTP session (docs/http.md): the SSE stream or JSON body that
// answers each POSTed request, and the session's GET stream for messages that belong to no
// request. Each stream keeps its events, so that a client whose stream was cut resumes it with
// Last-Event-ID (the event id is "STREAM-SEQ"), within bounds: so many events per stream, so
// many bytes for the whole session (the oldest go first), so many streams. What waits for a
// client that reads too slowly is bounded too. Thread-safe; knows no socket: the writer of a
// stream attaches with a function that wakes it when there is more to write.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runner/mcp/http_rules.h"

namespace stockade::mcp {

// The retry field of every stream's priming event: how long a client waits before it resumes.
inline constexpr unsigned kRetryMs = 1000;

// Wakes the writer of a stream: an event came, or the stream ended. Called with the store's
// mutex held: it must only schedule the wake-up.
using Wake = std::function<void()>;

struct StreamBounds {
    // What may wait for the writer of one stream; past it the stream overflows, and the writer
    // drops its client (which resumes with Last-Event-ID).
    std::size_t max_stream_bytes = std::size_t{16} << 20;
    // The events kept to resume streams, of all streams (a stream's last event stays until a
    // newer stream's push it out, however large) and per stream.
    std::size_t replay_bytes = std::size_t{256} << 10;
    std::size_t replay_events = 1024;
    // Streams kept once written (cut off before their end, they may be resumed).
    std::size_t kept_streams = 64;
};

// One response stream. The first fields are fixed when it opens; the rest are the store's, and
// are read through it.
struct EventStream {
    std::uint64_t number = 0;
    std::string request;  // the request's id key; empty for the GET stream
    bool sse = true;      // false: one JSON response
    std::string tool;     // tools/call: the tool, for the metrics
    bool priming = true;  // begins with a priming event (RevisionFeatures::sse_priming)
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
    // Guarded by the store's mutex.
    std::uint64_t next_seq = 1;
    std::deque<std::pair<std::uint64_t, std::string>> history;  // SSE events kept for resuming
    std::deque<std::string> pending;                            // for the writer attached
    std::size_t pending_bytes = 0;
    std::uint64_t resumed_from = 0;  // the Last-Event-ID seq the writer attached after
    bool overflow = false;           // the client reads too slowly: its connection is dropped
    bool done = false;               // the request's last message came (or the session ended)
    std::string reply;               // JSON mode: the response; empty when none
    Wake wake;                       // the attached writer's; empty when nobody writes it
};

class StreamStore {
public:
    explicit StreamStore(StreamBounds bounds) : bounds_(bounds) {}

    struct Opened {
        std::shared_ptr<EventStream> stream;  // null: refused
        bool ended = false;                   // refused because the store is closed
    };
    // A stream for the request whose id key is `request`, its writer attached with `wake`.
    // Refused when a request with that id is still in progress, or the store is closed.
    Opened open(const std::string& request, bool sse, std::string tool, bool priming, Wake wake);
    // The GET stream (opened the first time), its writer attached with `wake`; null when one
    // is attached already. `done`: the session has ended.
    std::shared_ptr<EventStream> open_standalone(bool priming, bool done, Wake wake);
    // Stream `from.stream` again, its events after `from.seq` waiting for the writer attached
    // with `wake` (Last-Event-ID). Null when the stream is unknown (forgotten) or has a writer.
    std::shared_ptr<EventStream> resume(http::EventId from, Wake wake);
    // The writer of `stream` stops writing it. Its events stay (within the bounds) even when it
    // was written whole: a write to a client that has gone can succeed all the same.
    void detach(EventStream& stream);

    // A tools/call's stream that ended, for the metrics.
    struct Finished {
        std::string tool;
        double seconds = 0;
        std::string outcome;  // call_outcome of its last message
    };
    struct Posted {
        std::optional<Finished> finished;
        bool dropped = false;  // no stream was open to carry the message
    };
    // Routes a message (Outbox::post): to the stream of its request, or the GET stream when it
    // belongs to none, or when that request is answered in JSON and this is not its response.
    Posted post(const std::string& message, const std::string& request, bool last);
    // Ends every stream; none opens after. Each request not yet answered is answered with
    // answer(its id key) (none when `answer` is empty or returns "").
    std::vector<Finished> close(const std::function<std::string(const std::string&)>& answer);

    // For the writer of `stream`: its priming event ("" when it has none).
    std::string priming_event(const EventStream& stream);
    struct Taken {
        std::string events;  // SSE text
        bool done = false;
        bool overflow = false;
    };
    // The events waiting for the writer of `stream`, which it now writes.
    Taken take(EventStream& stream);
    // Whether `stream` has events waiting or has ended.
    bool has_news(const EventStream& stream);
    // A JSON stream's response (moved out; "" when it ends unanswered), once it has ended.
    std::optional<std::string> reply(EventStream& stream);

private:
    // Guarded by mu_.
    std::optional<Finished> finish(EventStream& stream, const std::string& message);
    void append(EventStream& stream, const std::string& message);
    void forget_old_streams();

    const StreamBounds bounds_;
    std::mutex mu_;
    // Guarded by mu_.
    bool closed_ = false;  // close() answered the open requests: no stream opens now
    std::unordered_map<std::string, std::shared_ptr<EventStream>> by_request_;
    std::map<std::uint64_t, std::shared_ptr<EventStream>> streams_;  // SSE ones, by number
    std::shared_ptr<EventStream> standalone_;
    std::uint64_t next_stream_ = 1;
    std::size_t history_bytes_ = 0;  // of every stream's history
};

}  // namespace stockade::mcp
