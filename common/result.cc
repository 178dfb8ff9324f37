#include "common/result.h"

#include <errno.h>
#include <string.h>

#include <fmt/format.h>

namespace stockade {

const char* errc_name(Errc code) noexcept {
    switch (code) {
        case Errc::kInvalidArgument:
            return "invalid-argument";
        case Errc::kNotFound:
            return "not-found";
        case Errc::kAlreadyExists:
            return "already-exists";
        case Errc::kPermissionDenied:
            return "permission-denied";
        case Errc::kPolicyDenied:
            return "policy-denied";
        case Errc::kFailedPrecondition:
            return "failed-precondition";
        case Errc::kDeadlineExceeded:
            return "deadline-exceeded";
        case Errc::kCancelled:
            return "cancelled";
        case Errc::kResourceExhausted:
            return "resource-exhausted";
        case Errc::kUnavailable:
            return "unavailable";
        case Errc::kInternal:
            return "internal";
    }
    return "unknown";
}

Error Error::wrap(std::string_view context) const& {
    return Error{code, fmt::format("{}: {}", context, message), sys_errno};
}

Error Error::wrap(std::string_view context) && {
    message = fmt::format("{}: {}", context, message);
    return std::move(*this);
}

Errc errc_from_errno(int err) noexcept {
    switch (err) {
        case ENOENT:
        case ENOTDIR:
        case ESRCH:
            return Errc::kNotFound;
        case EEXIST:
            return Errc::kAlreadyExists;
        case EACCES:
        case EPERM:
        case EROFS:
            return Errc::kPermissionDenied;
        case EINVAL:
        case ENAMETOOLONG:
        case ELOOP:
            return Errc::kInvalidArgument;
        case ENOSYS:
        case EOPNOTSUPP:
        case ENODEV:
            return Errc::kUnavailable;
        case ENOMEM:
        case ENOSPC:
        case EMFILE:
        case ENFILE:
        case EAGAIN:
        case EDQUOT:
            return Errc::kResourceExhausted;
        case ETIMEDOUT:
            return Errc::kDeadlineExceeded;
        case ECANCELED:
            return Errc::kCancelled;
        case EBUSY:
            return Errc::kFailedPrecondition;
        default:
            return Errc::kInternal;
    }
}

std::string errno_string(int err) {
    const char* name = strerrorname_np(err);
    const char* desc = strerrordesc_np(err);
    if (name == nullptr) {
        return fmt::format("errno {}", err);
    }
    return fmt::format("{} ({})", name, desc != nullptr ? desc : "unknown error");
}

Error errno_error(std::string_view what, int err) {
    return Error{errc_from_errno(err), fmt::format("{}: {}", what, errno_string(err)), err};
}

}  // namespace stockade
