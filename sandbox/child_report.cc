#include "sandbox/child_report.h"

#include <sys/socket.h>

#include <cerrno>

#include "common/scm_rights.h"
#include "common/syscall.h"

namespace stockade::sandbox {

Result<ChildReport> receive_child_report(int fd) {
    ChildReport out;
    bool reset = false;
    for (;;) {
        ChildMessage msg;
        iovec iov{&msg, sizeof msg};
        FdControl<1> control;
        msghdr mh{};
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        expect_fds(mh, control);
        const ssize_t n = retry_eintr([&] { return ::recvmsg(fd, &mh, MSG_CMSG_CLOEXEC); });
        if (n < 0 && errno == ECONNRESET && !reset) {
            // Reported once, before the queue: what the child sent before it died follows.
            reset = true;
            continue;
        }
        if (n < 0) {
            return errno_error("read the sandbox's setup report", errno);
        }
        if (n == 0) {
            if (reset) {
                // A child that exec'd has read every byte the supervisor sent.
                return Error{Errc::kInternal,
                             "the sandbox stopped during its setup without reporting why (it "
                             "was killed, or ran out of memory); try again, and see the "
                             "kernel's log if it repeats"};
            }
            return out;
        }
        UniqueFd passed_fd;
        for_each_passed_fd(mh, [&](int passed) { passed_fd.reset(passed); });
        if (static_cast<size_t>(n) != sizeof msg) {
            return Error{Errc::kInternal, "sandbox setup report has the wrong size"};
        }
        if (msg.kind == ChildMessage::kPtyMaster) {
            out.terminal = std::move(passed_fd);
        } else if (msg.kind == ChildMessage::kProxyListener) {
            out.proxy_listener = std::move(passed_fd);
        } else if (msg.kind == ChildMessage::kDnsSocket) {
            out.dns_socket = std::move(passed_fd);
        }
        if (msg.kind == ChildMessage::kError) {
            out.error = true;
            out.child_error = msg.error;
            return out;
        }
    }
}

}  // namespace stockade::sandbox
