// What /proc says about the processes this process can see: one line of /proc/<pid>/stat
// parsed (pure), a scan of every process, and this process's children. In the session worker,
// pid 1 of the sandbox's pid namespace, "every process" is the sandbox's; the launcher uses
// the children of a supervisor that adopts what a sandbox without a pid namespace leaves.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace stockade {

struct ProcStat {
    int pid = 0;
    std::string comm{};  // as the kernel keeps it: up to 15 bytes, any of them
    char state = 0;      // 'R', 'S', 'Z', ...
    int ppid = 0;
    int pgrp = 0;
    int session = 0;
    [[nodiscard]] bool alive() const noexcept {
        return state != 'Z' && state != 'X' && state != 'x';
    }
};

// Parses "pid (comm) S ppid pgrp session ...". comm may hold anything, ')' and spaces
// included, so it runs to the last ')'.
std::optional<ProcStat> parse_proc_stat(std::string_view text);

// Calls `visit` for every process in /proc whose stat could be read (one that exits meanwhile
// is skipped), until it returns false.
Status for_each_process(const std::function<bool(const ProcStat&)>& visit);

// This process's children (every thread's), per /proc/self/task/<tid>/children.
Result<std::vector<int>> own_children();

}  // namespace stockade
