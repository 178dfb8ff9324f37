// What a container may refuse a sandbox, reproduced for one test child without touching a host
// sysctl: each function applies to the calling process and everything it then starts, and is
// async-signal-safe (syscalls on static data), so it runs between fork and exec.
#pragma once

namespace stockade::testing {

// User namespaces unavailable, as under a container runtime's seccomp profile: a filter fails
// clone(CLONE_NEWUSER) and unshare(CLONE_NEWUSER) with EPERM and clone3 with ENOSYS (its flags
// sit in memory a filter cannot read, so libc and the launcher fall back to clone). Sets
// no_new_privs. Returns 0 or an errno.
int deny_user_namespaces() noexcept;

// sethostname fails with EPERM (a filter; sets no_new_privs). Returns 0 or an errno.
int deny_sethostname() noexcept;

// Masks `path` (a file under /proc, e.g. "/proc/kcore") with /dev/null in a mount namespace of
// the caller's own, as Docker masks /proc paths: the kernel then refuses a new /proc in a user
// namespace (mount_too_revealing). Needs CAP_SYS_ADMIN. Returns 0 or an errno.
int mask_with_dev_null(const char* path) noexcept;

}  // namespace stockade::testing
