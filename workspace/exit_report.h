// What the worker writes into a command's status pipe when it reaps the command's leader: the
// wait status, then what the command left running, which the worker stopped. One write of at
// most PIPE_BUF bytes, so the supervisor reads all of it or none.
//
//   bytes 0-3   the wait status, int32 little-endian, as waitpid returns it
//   then        optionally "left <count>\n" and up to kMaxLeftoverNames lines "<name>\n"
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stockade::workspace {

inline constexpr size_t kMaxLeftoverNames = 16;
inline constexpr size_t kMaxExitReportBytes = 4096;  // PIPE_BUF

// Processes a command left running when its leader ended; the worker stopped them.
struct Leftovers {
    uint32_t count = 0;
    std::vector<std::string> names{};  // the first kMaxLeftoverNames, command names (comm)
};

struct ExitReport {
    int wait_status = 0;
    Leftovers leftovers{};
};

// A name as it travels: printable ASCII only (anything else becomes '?'), at most 16 bytes.
std::string leftover_name(std::string_view comm);

std::string encode_exit_report(const ExitReport& report);
// nullopt: fewer than 4 bytes (the worker died before it could say), or a malformed tail.
std::optional<ExitReport> decode_exit_report(std::string_view bytes);

}  // namespace stockade::workspace
