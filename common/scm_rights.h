// Descriptors passed over a unix socket (SCM_RIGHTS), built and read in one place. Nothing here
// allocates: the sandbox's child hands its terminal over with it after clone.
//
//   FdControl<1> control;
//   attach_fds(msg, control, std::span<const int>(&master, 1));  // then sendmsg(sock, &msg, ...)
//
//   FdControl<4> control;
//   expect_fds(msg, control);                                     // then recvmsg(...)
//   for_each_passed_fd(msg, [&](int fd) { owned.emplace_back(fd); });
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstring>
#include <span>

namespace stockade {

// Control-message space for up to N descriptors, aligned for cmsghdr.
template <size_t N>
struct FdControl {
    alignas(cmsghdr) unsigned char bytes[CMSG_SPACE(sizeof(int) * N)]{};
};

// Makes `msg` carry `fds` (1 to N of them) in `control`.
template <size_t N>
void attach_fds(msghdr& msg, FdControl<N>& control, std::span<const int> fds) noexcept {
    msg.msg_control = control.bytes;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
}

// Makes `msg` ready to receive up to N descriptors into `control`; more set MSG_CTRUNC.
template <size_t N>
void expect_fds(msghdr& msg, FdControl<N>& control) noexcept {
    msg.msg_control = control.bytes;
    msg.msg_controllen = sizeof control.bytes;
}

// Calls take(fd) for each descriptor the SCM_RIGHTS messages of a received `msg` carry; each
// is the callee's to close.
template <class Take>
void for_each_passed_fd(msghdr& msg, Take&& take) {
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
            continue;
        }
        const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        const unsigned char* data = CMSG_DATA(c);
        for (size_t i = 0; i < count; ++i) {
            int fd = -1;
            std::memcpy(&fd, data + i * sizeof(int), sizeof(int));
            take(fd);
        }
    }
}

}  // namespace stockade
