#include "sandbox/cgroup_paths.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "common/parse.h"
#include "common/path.h"

namespace stockade::sandbox {

namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape_octal(std::string_view field) {
    std::string out;
    out.reserve(field.size());
    for (size_t i = 0; i < field.size(); ++i) {
        if (field[i] == '\\' && i + 3 < field.size()) {
            std::string_view digits = field.substr(i + 1, 3);
            if (std::all_of(digits.begin(), digits.end(),
                            [](char c) { return c >= '0' && c <= '7'; })) {
                int value = (digits[0] - '0') * 64 + (digits[1] - '0') * 8 + (digits[2] - '0');
                out.push_back(static_cast<char>(value));
                i += 3;
                continue;
            }
        }
        out.push_back(field[i]);
    }
    return out;
}

template <class T>
std::optional<T> parse_number(std::string_view text) {
    T value{};
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (ec != std::errc() || ptr != end || text.empty()) {
        return std::nullopt;
    }
    return value;
}

// Super options of a v1 cgroup mount that are not controllers.
bool is_v1_controller_option(std::string_view opt) {
    constexpr std::array<std::string_view, 7> kNotControllers = {
        "rw", "ro", "noprefix", "clone_children", "xattr", "cpuset_v2_mode", "favordynmods"};
    if (opt.empty() ||
        std::find(kNotControllers.begin(), kNotControllers.end(), opt) != kNotControllers.end()) {
        return false;
    }
    // "release_agent=..." is an option; "name=systemd" names a controller-less hierarchy.
    return opt.find('=') == std::string_view::npos || opt.starts_with("name=");
}

}  // namespace

std::optional<CgroupMount> parse_cgroup_mount(std::string_view line) {
    std::vector<std::string_view> fields = split(trim(line), ' ');
    // id parent major:minor root mount-point options [optional...] - fstype source super-options
    auto dash = std::find(fields.begin(), fields.end(), "-");
    if (fields.size() < 10 || dash == fields.end() || dash - fields.begin() < 6 ||
        fields.end() - dash < 4) {
        return std::nullopt;
    }
    std::string_view fstype = *(dash + 1);
    if (fstype != "cgroup" && fstype != "cgroup2") {
        return std::nullopt;
    }
    CgroupMount mount{
        .mount_point = unescape_octal(fields[4]),
        .root = unescape_octal(fields[3]),
        .v2 = fstype == "cgroup2",
        .controllers = {},
    };
    if (!mount.v2) {
        for (std::string_view opt : split(*(dash + 3), ',')) {
            if (is_v1_controller_option(opt)) {
                mount.controllers.emplace_back(opt);
            }
        }
    }
    return mount;
}

std::vector<CgroupMount> parse_cgroup_mounts(std::string_view mountinfo) {
    std::vector<CgroupMount> out;
    for (std::string_view line : split(mountinfo, '\n')) {
        if (auto mount = parse_cgroup_mount(line)) {
            out.push_back(std::move(*mount));
        }
    }
    return out;
}

std::vector<CgroupMembership> parse_proc_cgroup(std::string_view text) {
    std::vector<CgroupMembership> out;
    for (std::string_view line : split(text, '\n')) {
        if (line.empty()) {
            continue;
        }
        // The path may itself contain ':', so split only at the first two.
        size_t first = line.find(':');
        size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
        if (second == std::string_view::npos) {
            continue;
        }
        auto id = parse_number<int>(line.substr(0, first));
        std::string_view path = line.substr(second + 1);
        if (!id || !path.starts_with('/')) {
            continue;
        }
        CgroupMembership m{.hierarchy_id = *id, .controllers = {}, .path = std::string(path)};
        std::string_view list = line.substr(first + 1, second - first - 1);
        if (!list.empty()) {
            for (std::string_view c : split(list, ',')) {
                m.controllers.emplace_back(c);
            }
        }
        out.push_back(std::move(m));
    }
    return out;
}

const CgroupMount* find_v1_mount(const std::vector<CgroupMount>& mounts,
                                 std::string_view controller) {
    for (const CgroupMount& m : mounts) {
        if (!m.v2 && contains_controller(m.controllers, controller)) {
            return &m;
        }
    }
    return nullptr;
}

const CgroupMount* find_v2_mount(const std::vector<CgroupMount>& mounts) {
    for (const CgroupMount& m : mounts) {
        if (m.v2) {
            return &m;
        }
    }
    return nullptr;
}

std::optional<std::string> find_v1_path(const std::vector<CgroupMembership>& memberships,
                                        std::string_view controller) {
    for (const CgroupMembership& m : memberships) {
        if (m.hierarchy_id != 0 && contains_controller(m.controllers, controller)) {
            return m.path;
        }
    }
    return std::nullopt;
}

std::optional<std::string> find_v2_path(const std::vector<CgroupMembership>& memberships) {
    for (const CgroupMembership& m : memberships) {
        if (m.hierarchy_id == 0 && m.controllers.empty()) {
            return m.path;
        }
    }
    return std::nullopt;
}

std::optional<std::string> cgroup_dir(const CgroupMount& mount, std::string_view cgroup_path) {
    if (!cgroup_path.starts_with('/')) {
        return std::nullopt;
    }
    for (std::string_view part : split(cgroup_path, '/')) {
        if (part == "..") {
            return std::nullopt;
        }
    }
    std::string_view root = mount.root;
    while (root.size() > 1 && root.ends_with('/')) {
        root.remove_suffix(1);
    }
    std::string_view rest = cgroup_path;
    if (root != "/") {
        if (!rest.starts_with(root) || (rest.size() > root.size() && rest[root.size()] != '/')) {
            return std::nullopt;
        }
        rest.remove_prefix(root.size());
    }
    while (rest.size() > 1 && rest.ends_with('/')) {
        rest.remove_suffix(1);
    }
    if (rest.empty() || rest == "/") {
        return mount.mount_point;
    }
    std::string dir = mount.mount_point;
    while (dir.size() > 1 && dir.ends_with('/')) {
        dir.pop_back();
    }
    if (dir == "/") {
        dir.clear();
    }
    dir.append(rest);
    return dir;
}

std::optional<std::string> parent_dir(std::string_view path) {
    while (path.size() > 1 && path.ends_with('/')) {
        path.remove_suffix(1);
    }
    if (path.empty() || path == "/") {
        return std::nullopt;
    }
    size_t slash = path.rfind('/');
    if (slash == std::string_view::npos) {
        return std::nullopt;
    }
    if (slash == 0) {
        return std::string("/");
    }
    return std::string(path.substr(0, slash));
}

std::vector<std::string> parse_controller_list(std::string_view text) {
    std::vector<std::string> out;
    for (std::string_view word : split(trim(text), ' ')) {
        word = trim(word);
        if (!word.empty()) {
            out.emplace_back(word);
        }
    }
    return out;
}

bool contains_controller(const std::vector<std::string>& list, std::string_view controller) {
    return std::find(list.begin(), list.end(), controller) != list.end();
}

std::vector<pid_t> parse_pid_list(std::string_view text) {
    std::vector<pid_t> out;
    for (std::string_view line : split(text, '\n')) {
        if (auto pid = parse_number<pid_t>(trim(line)); pid && *pid > 0) {
            out.push_back(*pid);
        }
    }
    return out;
}

std::optional<uint64_t> parse_keyed_value(std::string_view text, std::string_view key) {
    for (std::string_view line : split(text, '\n')) {
        line = trim(line);
        if (line.size() > key.size() && line.starts_with(key) && line[key.size()] == ' ') {
            return parse_number<uint64_t>(trim(line.substr(key.size() + 1)));
        }
    }
    return std::nullopt;
}

std::string leaf_name(pid_t supervisor, uint64_t counter) {
    return fmt::format("run-{}-{}", supervisor, counter);
}

std::optional<pid_t> parse_leaf_pid(std::string_view name) {
    constexpr std::string_view kPrefix = "run-";
    if (!name.starts_with(kPrefix)) {
        return std::nullopt;
    }
    name.remove_prefix(kPrefix.size());
    size_t dash = name.find('-');
    if (dash == std::string_view::npos || !parse_number<uint64_t>(name.substr(dash + 1))) {
        return std::nullopt;
    }
    auto pid = parse_number<pid_t>(name.substr(0, dash));
    if (!pid || *pid <= 0) {
        return std::nullopt;
    }
    return pid;
}

Result<uint64_t> cpu_quota_us(double cpus, uint64_t period_us) {
    constexpr double kMaxCpus = 1 << 16;
    constexpr uint64_t kMinQuotaUs = 1000;
    if (!std::isfinite(cpus) || cpus <= 0 || cpus > kMaxCpus || period_us == 0) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("cpu limit {} is not a positive number of CPUs", cpus)};
    }
    double quota = std::round(cpus * static_cast<double>(period_us));
    return std::max(kMinQuotaUs, static_cast<uint64_t>(quota));
}

Result<std::string> cpu_max_value(double cpus, uint64_t period_us) {
    ASSIGN_OR_RETURN(uint64_t quota, cpu_quota_us(cpus, period_us));
    return fmt::format("{} {}", quota, period_us);
}

}  // namespace stockade::sandbox
