// What the escape suites (tests/security) share: a listening socket of the test's own outside
// any sandbox, and the checks that nothing an attack made landed on the host.
#pragma once

#include <sys/socket.h>

#include <memory>
#include <string>

namespace stockade::testing {

// A listening stream socket owned by the test, outside any sandbox.
class Listener {
public:
    Listener(int domain, const sockaddr* addr, socklen_t len);
    ~Listener();
    Listener(const Listener&) = delete;
    Listener& operator=(const Listener&) = delete;
    Listener(Listener&&) = delete;
    Listener& operator=(Listener&&) = delete;

    [[nodiscard]] bool ok() const { return fd_ >= 0; }
    [[nodiscard]] int fd() const { return fd_; }
    // The port it listens on (TCP), 0 if unknown.
    [[nodiscard]] int port() const;
    // True if a connection is waiting (accepts and closes it).
    [[nodiscard]] bool connected() const;

private:
    int fd_ = -1;
};

// A listener on 127.0.0.1:`port` (0: any free port).
std::unique_ptr<Listener> tcp_loopback_listener(int port = 0);

// "<pid>-<steady clock ticks>": a name no other test run uses.
std::string unique_suffix();

// A host path that must not exist after a write attempt: a failure, and removed, if it does.
void expect_absent_on_host(const std::string& path);

// A file the sandbox made in the workspace must not be set-user-id or set-group-id root on the
// host: a failure naming `who` if it is (and the bits are cleared at once).
void expect_not_setid_root(const std::string& path, const std::string& who);

}  // namespace stockade::testing
