#include "runner/mcp/line_framer.h"

#include <utility>

namespace stockade::mcp {

void LineFramer::feed(std::string_view bytes, std::vector<FramedLine>& out) {
    while (!bytes.empty()) {
        const auto newline = bytes.find('\n');
        const std::string_view chunk = bytes.substr(0, newline);
        if (!discarding_) {
            if (chunk.size() > max_line_bytes_ - line_.size()) {
                discarding_ = true;
                line_.clear();
                line_.shrink_to_fit();
                out.push_back(FramedLine{.oversized = true, .text = {}});
            } else {
                line_.append(chunk);
            }
        }
        if (newline == std::string_view::npos) {
            return;
        }
        if (discarding_) {
            discarding_ = false;
        } else {
            complete_line(out);
        }
        bytes.remove_prefix(newline + 1);
    }
}

void LineFramer::finish(std::vector<FramedLine>& out) {
    if (discarding_) {
        discarding_ = false;
        return;
    }
    complete_line(out);
}

void LineFramer::complete_line(std::vector<FramedLine>& out) {
    if (!line_.empty() && line_.back() == '\r') {
        line_.pop_back();
    }
    if (!line_.empty()) {
        out.push_back(FramedLine{.oversized = false, .text = std::move(line_)});
    }
    line_.clear();
}

}  // namespace stockade::mcp
