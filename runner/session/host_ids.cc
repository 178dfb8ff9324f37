#include "runner/session/host_ids.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "common/parse.h"
#include "common/syscall.h"

namespace stockade::runner {

std::string host_id_range_text(const HostIdRange& range) {
    return fmt::format("{}-{}", range.first, range.last());
}

Result<HostIdRange> parse_host_id_range(std::string_view text) {
    if (text.empty()) {
        return HostIdRange{};
    }
    const size_t dash = text.find('-');
    auto bad = [&] {
        return Error{Errc::kInvalidArgument,
                     fmt::format("--host-uid-range \"{}\" is not FIRST-LAST, e.g. "
                                 "1879048193-1879113728 (unprivileged ids, not 0)",
                                 text)};
    };
    if (dash == std::string_view::npos) {
        return bad();
    }
    auto first = parse_uint(text.substr(0, dash), 1, 0xfffffffeU);
    auto last = parse_uint(text.substr(dash + 1), 1, 0xfffffffeU);
    if (!first || !last || *last < *first) {
        return bad();
    }
    return HostIdRange{.first = static_cast<uid_t>(*first),
                       .count = static_cast<uid_t>(*last - *first + 1)};
}

namespace {

struct Extent {
    uint64_t first = 0;  // inside the namespace
    uint64_t count = 0;
};

Result<std::vector<Extent>> parse_id_map(std::string_view text) {
    std::vector<Extent> extents;
    while (!text.empty()) {
        const size_t end = text.find('\n');
        std::string_view line = text.substr(0, end);
        text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
        std::vector<uint64_t> fields;
        while (!line.empty()) {
            line.remove_prefix(std::min(line.find_first_not_of(" \t"), line.size()));
            const size_t stop = std::min(line.find_first_of(" \t"), line.size());
            if (stop == 0) {
                break;
            }
            auto value = parse_uint(line.substr(0, stop), 0, 0xffffffffU);
            if (!value) {
                return Error{Errc::kInvalidArgument, "an id map line is not three numbers"};
            }
            fields.push_back(*value);
            line.remove_prefix(stop);
        }
        if (fields.empty()) {
            continue;
        }
        if (fields.size() != 3 || fields[2] == 0) {
            return Error{Errc::kInvalidArgument, "an id map line is not three numbers"};
        }
        extents.push_back(Extent{fields[0], fields[2]});
    }
    return extents;
}

}  // namespace

Result<std::optional<HostIdRange>> ids_inside_own_map(std::string_view uid_map,
                                                      std::string_view gid_map) {
    ASSIGN_OR_RETURN(std::vector<Extent> uids, parse_id_map(uid_map));
    ASSIGN_OR_RETURN(std::vector<Extent> gids, parse_id_map(gid_map));
    auto maps_all = [](const std::vector<Extent>& map) {
        return std::any_of(map.begin(), map.end(), [](const Extent& e) {
            return e.first == 0 && e.count >= 0xffffffffULL;
        });
    };
    if (uids.empty() || gids.empty() || (maps_all(uids) && maps_all(gids))) {
        return std::optional<HostIdRange>();
    }
    // The largest run of ids below 65534 that both maps hold.
    constexpr uint64_t kNobody = 65534;
    Extent best;
    for (const Extent& u : uids) {
        for (const Extent& g : gids) {
            const uint64_t first = std::max(u.first, g.first);
            const uint64_t end = std::min({u.first + u.count, g.first + g.count, kNobody});
            if (end > first && end - first > best.count) {
                best = Extent{first, end - first};
            }
        }
    }
    if (best.count < 6) {
        return std::optional<HostIdRange>(HostIdRange{.first = 0, .count = 0});
    }
    const uint64_t half = best.count / 2;
    return std::optional<HostIdRange>(HostIdRange{.first = static_cast<uid_t>(best.first + half),
                                                  .count = static_cast<uid_t>(best.count - half)});
}

std::optional<HostIdRange> ids_inside_own_map() {
    auto read = [](const char* path) {
        std::ifstream in(path);
        std::ostringstream text;
        text << in.rdbuf();
        return text.str();
    };
    auto ids = ids_inside_own_map(read("/proc/self/uid_map"), read("/proc/self/gid_map"));
    return ids ? *ids : std::nullopt;
}

Result<HostIdLease> lease_host_id(uid_t first, uid_t count, const std::string& lock_dir) {
    RETURN_IF_ERROR(make_dirs(lock_dir, 0700));
    ASSIGN_OR_RETURN(UniqueFd dir, open_path(lock_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW));
    for (uid_t i = 0; i < count; ++i) {
        const uid_t id = first + i;
        const std::string name = fmt::format("{}.lock", id);
        UniqueFd lock(retry_eintr([&] {
            return ::openat(dir.get(), name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
                            0600);
        }));
        if (!lock) {
            return errno_error(fmt::format("open \"{}/{}\"", lock_dir, name), errno);
        }
        if (::flock(lock.get(), LOCK_EX | LOCK_NB) == 0) {
            return HostIdLease(id, std::move(lock));
        }
        if (errno != EWOULDBLOCK) {
            return errno_error(fmt::format("lock \"{}/{}\"", lock_dir, name), errno);
        }
    }
    return Error{Errc::kResourceExhausted,
                 fmt::format("every host id from {} to {} is in use by a running session: end "
                             "some, or give this one --host-uid",
                             first, first + count - 1)};
}

}  // namespace stockade::runner
