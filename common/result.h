// Result<T>: a value or an Error, shaped like std::expected so that a move to C++23 is a
// `using` change. Errors carry a code to branch on and a message that gains context outward:
//   "launch: mount workspace: bind \"/src\" -> \"/src\": EPERM (Operation not permitted)"
#pragma once

#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace stockade {

enum class Errc {
    kInvalidArgument,  // malformed input: a flag value, a path syntax
    kNotFound,         // a path or command that does not exist
    kAlreadyExists,
    kPermissionDenied,    // the kernel said EACCES/EPERM
    kPolicyDenied,        // our policy said deny
    kFailedPrecondition,  // the state does not allow it
    kDeadlineExceeded,    // a timeout
    kCancelled,
    kResourceExhausted,  // a limit was hit
    kUnavailable,        // a kernel feature is missing or disabled
    kInternal,           // our bug
};

const char* errc_name(Errc code) noexcept;

struct Error {
    Errc code = Errc::kInternal;
    std::string message;
    int sys_errno = 0;

    // Prefixes context: Error{..., "ENOENT"}.wrap("open \"x\"") -> "open \"x\": ENOENT".
    [[nodiscard]] Error wrap(std::string_view context) const&;
    [[nodiscard]] Error wrap(std::string_view context) &&;
};

// An Error from errno: message "<what>: ENAME (description)", code derived from the errno.
Error errno_error(std::string_view what, int err);
Errc errc_from_errno(int err) noexcept;
// "ENOENT (No such file or directory)"; thread-safe (strerrorname_np / strerrordesc_np).
std::string errno_string(int err);

template <class T>
class [[nodiscard]] Result {
public:
    using value_type = T;
    // NOLINTBEGIN(google-explicit-constructor): implicit, like std::expected.
    Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
    Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}
    // NOLINTEND(google-explicit-constructor)

    [[nodiscard]] bool has_value() const noexcept { return v_.index() == 0; }
    explicit operator bool() const noexcept { return has_value(); }

    T& value() & { return std::get<0>(v_); }
    const T& value() const& { return std::get<0>(v_); }
    T&& value() && { return std::get<0>(std::move(v_)); }
    Error& error() & { return std::get<1>(v_); }
    const Error& error() const& { return std::get<1>(v_); }
    Error&& error() && { return std::get<1>(std::move(v_)); }

    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T&& operator*() && { return std::move(*this).value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }

    template <class U>
    T value_or(U&& fallback) const& {
        return has_value() ? value() : static_cast<T>(std::forward<U>(fallback));
    }

private:
    std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
public:
    Result() = default;
    Result(Error error)
        : error_(std::move(error)), ok_(false) {}  // NOLINT(google-explicit-constructor)

    [[nodiscard]] bool has_value() const noexcept { return ok_; }
    explicit operator bool() const noexcept { return ok_; }
    const Error& error() const& { return error_; }
    Error&& error() && { return std::move(error_); }

private:
    Error error_;
    bool ok_ = true;
};

using Status = Result<void>;

inline Status ok_status() {
    return {};
}

}  // namespace stockade

#define STOCKADE_CONCAT_INNER(a, b) a##b
#define STOCKADE_CONCAT(a, b) STOCKADE_CONCAT_INNER(a, b)

// RETURN_IF_ERROR(expr): expr is a Status or Result<T>; returns its error from the caller.
#define RETURN_IF_ERROR(expr)                           \
    do {                                                \
        auto stockade_status_ = (expr);                 \
        if (!stockade_status_) {                        \
            return std::move(stockade_status_).error(); \
        }                                               \
    } while (false)

// ASSIGN_OR_RETURN(decl, expr): `decl = *expr` or return expr's error.
#define ASSIGN_OR_RETURN(decl, expr) \
    ASSIGN_OR_RETURN_IMPL(STOCKADE_CONCAT(stockade_result_, __LINE__), decl, expr)
#define ASSIGN_OR_RETURN_IMPL(tmp, decl, expr) \
    auto tmp = (expr);                         \
    if (!tmp) {                                \
        return std::move(tmp).error();         \
    }                                          \
    decl = std::move(tmp).value()
