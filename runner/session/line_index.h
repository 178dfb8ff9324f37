// Where the lines of a growing stream start, in bounded memory: the start of each of the last
// `recent` lines exactly, and of every `every`-th line of the whole stream (a mark), so that a
// line far behind is found by scanning at most `every` lines of the log from the mark before it.
// Lines are numbered from 1; line 1 starts at offset 0, and line n + 1 just after the n-th '\n'.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string_view>
#include <vector>

namespace stockade::runner {

class LineIndex {
public:
    static constexpr std::uint64_t kDefaultEvery = 4096;

    explicit LineIndex(std::size_t recent, std::uint64_t every = kDefaultEvery);

    // Indexes `data`, the stream's bytes from offset `base` (the bytes appended so far).
    void append(std::uint64_t base, std::string_view data);

    // The '\n' seen so far: the last line is newlines() + 1.
    [[nodiscard]] std::uint64_t newlines() const noexcept { return newlines_; }

    // Where the last line (the one being written, maybe still empty) starts.
    [[nodiscard]] std::uint64_t last_line_start() const noexcept { return recent_starts_.back(); }

    // Where `line` starts when it is one of the recent lines (or line 1); nullopt otherwise.
    [[nodiscard]] std::optional<std::uint64_t> recent_start(std::uint64_t line) const;

    // A line whose start is known exactly.
    struct Mark {
        std::uint64_t line = 1;
        std::uint64_t offset = 0;
    };
    // The last mark at or before `line`, and the last mark starting at or before `offset`.
    [[nodiscard]] Mark mark_before_line(std::uint64_t line) const;
    [[nodiscard]] Mark mark_before_offset(std::uint64_t offset) const;

private:
    std::size_t recent_;
    std::uint64_t every_;
    std::uint64_t newlines_ = 0;
    std::deque<std::uint64_t> recent_starts_{0};  // starts of the last `recent_` lines
    std::vector<std::uint64_t> marks_{0};         // marks_[j]: start of line j * every_ + 1
};

}  // namespace stockade::runner
