#include "runner/session/line_index.h"

#include <algorithm>

namespace stockade::runner {

LineIndex::LineIndex(std::size_t recent, std::uint64_t every)
    : recent_(std::max<std::size_t>(recent, 1)), every_(std::max<std::uint64_t>(every, 1)) {}

void LineIndex::append(std::uint64_t base, std::string_view data) {
    for (std::size_t at = data.find('\n'); at != std::string_view::npos;
         at = data.find('\n', at + 1)) {
        const std::uint64_t next_start = base + at + 1;
        ++newlines_;
        recent_starts_.push_back(next_start);
        if (recent_starts_.size() > recent_) {
            recent_starts_.pop_front();
        }
        if (newlines_ % every_ == 0) {
            marks_.push_back(next_start);
        }
    }
}

std::optional<std::uint64_t> LineIndex::recent_start(std::uint64_t line) const {
    if (line <= 1) {
        return 0;
    }
    const std::uint64_t first_recent = newlines_ + 2 - recent_starts_.size();
    if (line < first_recent || line > newlines_ + 1) {
        return std::nullopt;
    }
    return recent_starts_[static_cast<std::size_t>(line - first_recent)];
}

LineIndex::Mark LineIndex::mark_before_line(std::uint64_t line) const {
    const std::uint64_t j =
        std::min<std::uint64_t>((std::max<std::uint64_t>(line, 1) - 1) / every_, marks_.size() - 1);
    return {.line = j * every_ + 1, .offset = marks_[static_cast<std::size_t>(j)]};
}

LineIndex::Mark LineIndex::mark_before_offset(std::uint64_t offset) const {
    const auto it = std::upper_bound(marks_.begin(), marks_.end(), offset);
    const auto j = static_cast<std::uint64_t>(it - marks_.begin()) - 1;  // marks_[0] is 0
    return {.line = j * every_ + 1, .offset = marks_[static_cast<std::size_t>(j)]};
}

}  // namespace stockade::runner
