// An EventSink that keeps what it is given, for tests.
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/event_sink.h"

namespace stockade::testing {

class RecordingSink final : public EventSink {
public:
    struct Event {
        std::string type;
        nlohmann::json fields;
        bool durable = false;
    };
    void record(std::string_view type, nlohmann::json fields, bool durable) override {
        std::lock_guard lock(mu_);
        events_.push_back({std::string(type), std::move(fields), durable});
    }
    [[nodiscard]] std::vector<Event> events() const {
        std::lock_guard lock(mu_);
        return events_;
    }
    [[nodiscard]] std::vector<std::string> types() const {
        std::lock_guard lock(mu_);
        std::vector<std::string> out;
        for (const Event& e : events_) {
            out.push_back(e.type);
        }
        return out;
    }

private:
    mutable std::mutex mu_;
    std::vector<Event> events_;
};

}  // namespace stockade::testing
