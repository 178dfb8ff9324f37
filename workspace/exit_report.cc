#include "workspace/exit_report.h"

#include <charconv>

#include <fmt/format.h>

namespace stockade::workspace {

std::string leftover_name(std::string_view comm) {
    std::string out;
    for (char c : comm.substr(0, 16)) {
        out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
    }
    return out.empty() ? std::string("?") : out;
}

std::string encode_exit_report(const ExitReport& report) {
    const auto raw = static_cast<uint32_t>(report.wait_status);
    std::string out;
    for (unsigned i = 0; i < 4; ++i) {
        out.push_back(static_cast<char>((raw >> (8U * i)) & 0xFFU));
    }
    if (report.leftovers.count == 0) {
        return out;
    }
    out += fmt::format("left {}\n", report.leftovers.count);
    size_t named = 0;
    for (const std::string& name : report.leftovers.names) {
        if (named++ == kMaxLeftoverNames) {
            break;
        }
        out += leftover_name(name);
        out += '\n';
    }
    return out;
}

std::optional<ExitReport> decode_exit_report(std::string_view bytes) {
    if (bytes.size() < 4 || bytes.size() > kMaxExitReportBytes) {
        return std::nullopt;
    }
    ExitReport report;
    uint32_t raw = 0;
    for (unsigned i = 0; i < 4; ++i) {
        raw |= uint32_t{static_cast<unsigned char>(bytes[i])} << (8U * i);
    }
    report.wait_status = static_cast<int>(raw);
    std::string_view rest = bytes.substr(4);
    if (rest.empty()) {
        return report;
    }
    constexpr std::string_view kLeft = "left ";
    const size_t eol = rest.find('\n');
    if (!rest.starts_with(kLeft) || eol == std::string_view::npos) {
        return std::nullopt;
    }
    const std::string_view number = rest.substr(kLeft.size(), eol - kLeft.size());
    uint32_t count = 0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), count);
    if (ec != std::errc{} || end != number.data() + number.size() || count == 0) {
        return std::nullopt;
    }
    report.leftovers.count = count;
    rest.remove_prefix(eol + 1);
    while (!rest.empty()) {
        const size_t end_of_name = rest.find('\n');
        if (end_of_name == std::string_view::npos ||
            report.leftovers.names.size() == kMaxLeftoverNames) {
            return std::nullopt;
        }
        report.leftovers.names.push_back(leftover_name(rest.substr(0, end_of_name)));
        rest.remove_prefix(end_of_name + 1);
    }
    return report;
}

}  // namespace stockade::workspace
