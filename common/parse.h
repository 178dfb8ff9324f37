// Parsers for operator-supplied values (flags, config). Pure; fuzzed in tests/fuzz.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

#include "common/result.h"

namespace stockade {

// "4096", "512K", "64M", "2G", "1T" (powers of 1024; an optional trailing "B"/"iB").
Result<uint64_t> parse_size(std::string_view text);
// A size as an operator would type it, in the largest unit it reaches: "2G", "512M" when exact,
// else "11.8G"; a byte count below 1K. (Sizes the model reads: tools::format_size.)
std::string size_text(uint64_t bytes);
// A decimal integer within [min, max].
Result<uint64_t> parse_uint(std::string_view text, uint64_t min, uint64_t max);
// "0.5", "2", "1.25": a CPU share in (0, 1024].
Result<double> parse_cpu_fraction(std::string_view text);
// "30", "1.5", "250ms", "2m", "1h": a positive duration.
Result<std::chrono::milliseconds> parse_duration(std::string_view text);

// The value of one hex digit (either case), or -1.
int hex_digit_value(char c);
// `text` without the spaces and tabs around it (HTTP's optional white space, RFC 9110 §5.5).
std::string_view trim_ows(std::string_view text);
// Whitespace: space, tab, CR, LF, FF, VT; and a text without it at either end or one.
bool is_space(char c);
std::string_view trim(std::string_view s);
std::string_view trim_left(std::string_view s);
std::string_view trim_right(std::string_view s);

}  // namespace stockade
