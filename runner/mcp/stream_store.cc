#include "runner/mcp/stream_store.h"

#include "runner/mcp/http_metrics.h"

namespace stockade::mcp {

namespace {

void wake(const EventStream& stream) {
    if (stream.wake) {
        stream.wake();
    }
}

}  // namespace

StreamStore::Opened StreamStore::open(const std::string& request, bool sse, std::string tool,
                                      bool priming, Wake wake) {
    std::lock_guard lock(mu_);
    if (closed_) {
        return {.stream = nullptr, .ended = true};
    }
    if (by_request_.contains(request)) {
        return {.stream = nullptr, .ended = false};
    }
    auto stream = std::make_shared<EventStream>();
    stream->number = next_stream_++;
    stream->request = request;
    stream->sse = sse;
    stream->tool = std::move(tool);
    stream->priming = priming;
    stream->wake = std::move(wake);
    by_request_.emplace(request, stream);
    if (sse) {
        streams_.emplace(stream->number, stream);
        forget_old_streams();
    }
    return {.stream = stream, .ended = false};
}

std::shared_ptr<EventStream> StreamStore::open_standalone(bool priming, bool done, Wake wake) {
    std::lock_guard lock(mu_);
    if (standalone_ && standalone_->wake) {
        return nullptr;
    }
    if (!standalone_) {
        standalone_ = std::make_shared<EventStream>();
        standalone_->number = next_stream_++;
        standalone_->priming = priming;
        streams_.emplace(standalone_->number, standalone_);
    }
    standalone_->wake = std::move(wake);
    standalone_->done = done;
    return standalone_;
}

std::shared_ptr<EventStream> StreamStore::resume(http::EventId from, Wake wake) {
    std::lock_guard lock(mu_);
    auto it = streams_.find(from.stream);
    if (it == streams_.end() || it->second->wake) {
        return nullptr;
    }
    auto& stream = *it->second;
    stream.pending.clear();
    stream.pending_bytes = 0;
    stream.overflow = false;
    stream.resumed_from = from.seq;
    for (const auto& [seq, event] : stream.history) {
        if (seq > from.seq) {
            stream.pending.push_back(event);
            stream.pending_bytes += event.size();
        }
    }
    stream.wake = std::move(wake);
    return it->second;
}

void StreamStore::detach(EventStream& stream) {
    std::lock_guard lock(mu_);
    stream.wake = nullptr;
    stream.pending.clear();
    stream.pending_bytes = 0;
}

StreamStore::Posted StreamStore::post(const std::string& message, const std::string& request,
                                      bool last) {
    Posted posted;
    std::lock_guard lock(mu_);
    std::shared_ptr<EventStream> stream;
    if (!request.empty()) {
        if (auto it = by_request_.find(request); it != by_request_.end()) {
            stream = it->second;
        }
    }
    const bool own = stream != nullptr;
    if (own && !stream->sse && !last) {
        stream = nullptr;  // a JSON response carries one message: the rest go to GET
    }
    if (!stream) {
        stream = standalone_;
    }
    if (own && last) {
        posted.finished = finish(*by_request_.at(request), message);
        by_request_.erase(request);
    }
    if (message.empty() || !stream || (own && last && !stream->sse)) {
        posted.dropped = !message.empty() && !stream;
        if (stream) {
            wake(*stream);
        }
        return posted;
    }
    append(*stream, message);
    wake(*stream);
    return posted;
}

std::vector<StreamStore::Finished> StreamStore::close(
    const std::function<std::string(const std::string&)>& answer) {
    std::vector<Finished> finished;
    std::lock_guard lock(mu_);
    closed_ = true;
    for (auto& [key, stream] : by_request_) {
        // A request whose answer will not come: the connection ignored it (it came as the
        // session ended), or it was being answered when the connection shut down.
        const std::string message = answer ? answer(key) : std::string();
        if (auto call = finish(*stream, message)) {
            finished.push_back(std::move(*call));
        }
        if (stream->sse && !message.empty()) {
            append(*stream, message);
        }
        wake(*stream);
    }
    by_request_.clear();
    for (auto& [number, stream] : streams_) {
        stream->done = true;
        wake(*stream);
    }
    if (standalone_) {
        standalone_->done = true;
        wake(*standalone_);
    }
    return finished;
}

std::string StreamStore::priming_event(const EventStream& stream) {
    std::lock_guard lock(mu_);
    if (!stream.priming) {
        return "";
    }
    return http::sse_event(http::event_id({stream.number, stream.resumed_from}), "", kRetryMs);
}

StreamStore::Taken StreamStore::take(EventStream& stream) {
    Taken taken;
    std::lock_guard lock(mu_);
    for (auto& event : stream.pending) {
        taken.events += event;
    }
    stream.pending.clear();
    stream.pending_bytes = 0;
    taken.done = stream.done;
    taken.overflow = stream.overflow;
    return taken;
}

bool StreamStore::has_news(const EventStream& stream) {
    std::lock_guard lock(mu_);
    return !stream.pending.empty() || stream.done;
}

std::optional<std::string> StreamStore::reply(EventStream& stream) {
    std::lock_guard lock(mu_);
    if (!stream.done) {
        return std::nullopt;
    }
    return std::move(stream.reply);
}

std::optional<StreamStore::Finished> StreamStore::finish(EventStream& stream,
                                                         const std::string& message) {
    stream.done = true;
    if (!stream.sse) {
        stream.reply = message;
    }
    if (stream.tool.empty()) {
        return std::nullopt;
    }
    return Finished{
        .tool = stream.tool,
        .seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - stream.started)
                       .count(),
        .outcome = call_outcome(message)};
}

void StreamStore::append(EventStream& stream, const std::string& message) {
    const std::uint64_t seq = stream.next_seq++;
    std::string event = http::sse_event(http::event_id({stream.number, seq}), message);
    if (stream.wake) {
        stream.pending_bytes += event.size();
        stream.pending.push_back(event);
        if (stream.pending_bytes > bounds_.max_stream_bytes) {
            stream.overflow = true;
        }
    }
    history_bytes_ += event.size();
    stream.history.emplace_back(seq, std::move(event));
    if (stream.history.size() > bounds_.replay_events) {
        history_bytes_ -= stream.history.front().second.size();
        stream.history.pop_front();
    }
    // What the session keeps to replay is bounded: the oldest events go first.
    for (auto it = streams_.begin(); history_bytes_ > bounds_.replay_bytes && it != streams_.end();
         ++it) {
        auto& old = it->second->history;
        while (!old.empty() && history_bytes_ > bounds_.replay_bytes &&
               (it->second.get() != &stream || old.size() > 1)) {
            history_bytes_ -= old.front().second.size();
            old.pop_front();
        }
    }
}

// Streams cut off before their end stay for a while to be resumed.
void StreamStore::forget_old_streams() {
    for (auto it = streams_.begin();
         streams_.size() > bounds_.kept_streams && it != streams_.end();) {
        if (it->second->wake || it->second == standalone_) {
            ++it;
        } else {
            for (const auto& [seq, event] : it->second->history) {
                history_bytes_ -= event.size();
            }
            it = streams_.erase(it);
        }
    }
}

}  // namespace stockade::mcp
