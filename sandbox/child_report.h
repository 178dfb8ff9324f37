// The supervisor's end of the sync socket: what the child reports between clone and exec.
//
// The child sends ChildMessages (its terminal, the proxy's listening socket, the
// resolver's socket, or one error) and
// closes its end when it execs. The supervisor reads them until EOF or the error:
//
//   ASSIGN_OR_RETURN(ChildReport report, receive_child_report(sync_fd));
//   if (report.error) { ... child_error(report.child_error, ...) ... }
#pragma once

#include <optional>

#include "common/result.h"
#include "common/unique_fd.h"
#include "sandbox/child.h"

namespace stockade::sandbox {

struct ChildReport {
    bool error = false;  // the child failed at child_error.step and has exited, or will
    ChildError child_error;
    UniqueFd terminal;        // ChildMessage::kPtyMaster
    UniqueFd proxy_listener;  // ChildMessage::kProxyListener
    UniqueFd dns_socket;      // ChildMessage::kDnsSocket
};

// Reads the child's messages on `fd` (SOCK_SEQPACKET) until EOF, which means the command was
// exec'd, or an error report. A child that dies during setup with a byte of the supervisor's
// unread (it failed, or was killed, before reading "in") makes the kernel report ECONNRESET
// before the datagrams still queued: the report that child sent is read after it. A child that
// died without one is an error that says so.
Result<ChildReport> receive_child_report(int fd);

}  // namespace stockade::sandbox
