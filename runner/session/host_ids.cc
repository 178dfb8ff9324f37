#include "runner/session/host_ids.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

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
