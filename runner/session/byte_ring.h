// The last `cap` bytes of a stream, in one buffer that grows up to `cap` and then wraps. Offsets
// are of the whole stream, from its first byte: a process's output as the process table keeps
// it in memory (the log file holds the rest).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace stockade::runner {

class ByteRing {
public:
    explicit ByteRing(std::size_t cap);

    void append(std::string_view data);

    // Bytes appended so far; the offset of the oldest byte still held.
    [[nodiscard]] std::uint64_t total() const noexcept { return total_; }
    [[nodiscard]] std::uint64_t oldest() const noexcept {
        return total_ - (total_ < cap_ ? total_ : cap_);
    }
    [[nodiscard]] std::size_t memory() const noexcept { return buf_.capacity(); }

    // Appends bytes [from, from + n) to out. Precondition: oldest() <= from, from + n <= total().
    void copy(std::uint64_t from, std::size_t n, std::string& out) const;
    // The number of '\n' in [from, total()). Precondition: oldest() <= from.
    [[nodiscard]] std::uint64_t newlines_from(std::uint64_t from) const;

private:
    std::size_t cap_;
    std::string buf_;
    std::uint64_t total_ = 0;
};

}  // namespace stockade::runner
