// The stdio framing of MCP: one JSON-RPC message per line, delimited by '\n'. Pure: bytes in,
// whole lines out, no I/O.
//
// A line longer than the cap is never buffered whole: as soon as it crosses the cap the framer
// reports it once (so the server can answer at once) and drops every further byte up to and
// including the next newline.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace stockade::mcp {

struct FramedLine {
    bool oversized = false;  // the line crossed the cap; `text` is empty
    std::string text;        // without the '\n' (and without a '\r' before it)
};

class LineFramer {
public:
    explicit LineFramer(std::size_t max_line_bytes) : max_line_bytes_(max_line_bytes) {}

    // Appends every line completed by `bytes` to `out`. Empty lines are skipped.
    void feed(std::string_view bytes, std::vector<FramedLine>& out);
    // End of input: a last line without a trailing newline is still delivered.
    void finish(std::vector<FramedLine>& out);

    [[nodiscard]] std::size_t buffered_bytes() const noexcept { return line_.size(); }

private:
    void complete_line(std::vector<FramedLine>& out);

    std::size_t max_line_bytes_;
    std::string line_;
    bool discarding_ = false;
};

}  // namespace stockade::mcp
