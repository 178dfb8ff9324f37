#include "common/parse.h"

#include <charconv>
#include <cmath>
#include <iterator>
#include <utility>

#include <fmt/format.h>

namespace stockade {
namespace {

Error invalid(std::string_view text, std::string_view expected) {
    return Error{Errc::kInvalidArgument, fmt::format("\"{}\" is not {}", text, expected)};
}

// Splits "12.5ms" into the number and the unit; the number must be a finite, non-negative
// decimal without sign or exponent.
bool split_number(std::string_view text, double& number, std::string_view& unit) {
    size_t end = 0;
    bool digits = false;
    bool dot = false;
    for (; end < text.size(); ++end) {
        char c = text[end];
        if (c >= '0' && c <= '9') {
            digits = true;
        } else if (c == '.' && !dot) {
            dot = true;
        } else {
            break;
        }
    }
    if (!digits) {
        return false;
    }
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + end, number);
    if (ec != std::errc() || ptr != text.data() + end || !std::isfinite(number)) {
        return false;
    }
    unit = text.substr(end);
    return true;
}

}  // namespace

Result<uint64_t> parse_uint(std::string_view text, uint64_t min, uint64_t max) {
    uint64_t value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
        return invalid(text, "a whole number");
    }
    if (value < min || value > max) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("{} is out of range [{}, {}]", value, min, max)};
    }
    return value;
}

Result<uint64_t> parse_size(std::string_view text) {
    constexpr std::string_view kExpected = "a size (a number with an optional K, M, G or T suffix)";
    double number = 0;
    std::string_view unit;
    if (!split_number(text, number, unit) || unit.size() > 3) {
        return invalid(text, kExpected);
    }
    std::string lower;
    for (char c : unit) {
        lower.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
    }
    // The suffix is a power letter, optionally followed by "b" or "ib"; or a bare "b".
    double scale = 1;
    std::string_view power = lower;
    if (!power.empty() && power != "b") {
        switch (power.front()) {
            case 'k':
                scale = 0x1p10;
                break;
            case 'm':
                scale = 0x1p20;
                break;
            case 'g':
                scale = 0x1p30;
                break;
            case 't':
                scale = 0x1p40;
                break;
            default:
                return invalid(text, kExpected);
        }
        power.remove_prefix(1);
        if (!power.empty() && power != "b" && power != "ib") {
            return invalid(text, kExpected);
        }
    }
    double bytes = number * scale;
    if (bytes != std::floor(bytes)) {
        return invalid(text, "a whole number of bytes");
    }
    if (bytes >= 0x1p63) {
        return Error{Errc::kInvalidArgument, fmt::format("\"{}\" is too large", text)};
    }
    return static_cast<uint64_t>(bytes);
}

Result<double> parse_cpu_fraction(std::string_view text) {
    double number = 0;
    std::string_view unit;
    if (!split_number(text, number, unit) || !unit.empty()) {
        return invalid(text, "a CPU fraction such as 0.5 or 2");
    }
    if (number <= 0 || number > 1024) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("CPU fraction {} is out of range (0, 1024]", text)};
    }
    return number;
}

Result<std::chrono::milliseconds> parse_duration(std::string_view text) {
    double number = 0;
    std::string_view unit;
    if (!split_number(text, number, unit)) {
        return invalid(text, "a duration such as 30, 1.5s, 250ms or 2m");
    }
    double ms = 0;
    if (unit.empty() || unit == "s") {
        ms = number * 1000;
    } else if (unit == "ms") {
        ms = number;
    } else if (unit == "m") {
        ms = number * 60'000;
    } else if (unit == "h") {
        ms = number * 3'600'000;
    } else {
        return invalid(text, "a duration such as 30, 1.5s, 250ms or 2m");
    }
    if (ms < 1 || ms > 365.0 * 24 * 3'600'000) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("duration \"{}\" is out of range [1ms, 365 days]", text)};
    }
    return std::chrono::milliseconds(static_cast<int64_t>(ms));
}

int hex_digit_value(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

std::string_view trim_left(std::string_view s) {
    size_t i = 0;
    while (i < s.size() && is_space(s[i])) {
        ++i;
    }
    return s.substr(i);
}

std::string_view trim_right(std::string_view s) {
    size_t n = s.size();
    while (n > 0 && is_space(s[n - 1])) {
        --n;
    }
    return s.substr(0, n);
}

std::string_view trim(std::string_view s) {
    return trim_right(trim_left(s));
}

std::string_view trim_ows(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
        text.remove_prefix(1);
    }
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) {
        text.remove_suffix(1);
    }
    return text;
}

std::string size_text(uint64_t bytes) {
    constexpr uint64_t kK = 1024;
    constexpr std::pair<char, uint64_t> kUnits[] = {
        {'T', kK * kK * kK * kK}, {'G', kK * kK * kK}, {'M', kK * kK}, {'K', kK}};
    for (std::size_t i = 0; i < std::size(kUnits); ++i) {
        const auto [unit, scale] = kUnits[i];
        if (bytes < scale) {
            continue;
        }
        if (bytes % scale == 0) {
            return fmt::format("{}{}", bytes / scale, unit);
        }
        // "1536M" rather than "1.5G" where the next unit is exact and short: what was typed.
        if (i + 1 < std::size(kUnits)) {
            const auto [smaller, small_scale] = kUnits[i + 1];
            if (bytes % small_scale == 0 && bytes / small_scale < 10'000) {
                return fmt::format("{}{}", bytes / small_scale, smaller);
            }
        }
        return fmt::format("{:.1f}{}", static_cast<double>(bytes) / static_cast<double>(scale),
                           unit);
    }
    return fmt::format("{}", bytes);
}

}  // namespace stockade
