#include "runner/session/byte_ring.h"

#include <algorithm>
#include <cstring>

namespace stockade::runner {

ByteRing::ByteRing(std::size_t cap) : cap_(std::max<std::size_t>(cap, 1)) {}

void ByteRing::append(std::string_view data) {
    if (data.size() > cap_) {  // only the last cap_ bytes can stay
        total_ += data.size() - cap_;
        data.remove_prefix(data.size() - cap_);
    }
    while (!data.empty()) {
        const auto pos = static_cast<std::size_t>(total_ % cap_);
        const std::size_t chunk = std::min(data.size(), cap_ - pos);
        if (buf_.size() < pos + chunk) {
            if (buf_.capacity() < pos + chunk) {
                buf_.reserve(std::min(cap_, std::max(pos + chunk, 2 * buf_.capacity())));
            }
            buf_.resize(pos + chunk);
        }
        std::memcpy(buf_.data() + pos, data.data(), chunk);
        data.remove_prefix(chunk);
        total_ += chunk;
    }
}

void ByteRing::copy(std::uint64_t from, std::size_t n, std::string& out) const {
    while (n > 0) {
        const auto pos = static_cast<std::size_t>(from % cap_);
        const std::size_t chunk = std::min(n, cap_ - pos);
        out.append(buf_.data() + pos, chunk);
        from += chunk;
        n -= chunk;
    }
}

std::uint64_t ByteRing::newlines_from(std::uint64_t from) const {
    std::uint64_t count = 0;
    while (from < total_) {
        const auto pos = static_cast<std::size_t>(from % cap_);
        const auto chunk =
            static_cast<std::size_t>(std::min<std::uint64_t>(total_ - from, cap_ - pos));
        count += static_cast<std::uint64_t>(
            std::count(buf_.data() + pos, buf_.data() + pos + chunk, '\n'));
        from += chunk;
    }
    return count;
}

}  // namespace stockade::runner
