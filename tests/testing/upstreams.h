// The fake internet of the network tests: tests/network/upstreams.py (embedded in the test
// binary, so that a test running as an unprivileged user needs no access to the source tree),
// serving HTTPS with a test CA and plain HTTP on 127.0.0.1, routed on the Host header: a
// PyPI-shaped index, an npm-shaped registry, a git repository over HTTP and a "hello from
// <host>" page for every other name. Tests reach it only through names pinned to it with
// --resolve: nothing contacts any other address.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/testing/sandbox_harness.h"

namespace stockade::testing {

class Upstreams {
public:
    // Starts the server (python3 from /usr/bin) and waits until it listens; on failure,
    // error() says why and the ports are 0.
    Upstreams();
    ~Upstreams();
    Upstreams(const Upstreams&) = delete;
    Upstreams& operator=(const Upstreams&) = delete;

    [[nodiscard]] const std::string& error() const { return error_; }
    [[nodiscard]] int https_port() const { return https_port_; }
    [[nodiscard]] int http_port() const { return http_port_; }
    // The test CA's certificate (PEM), for the clients' trust settings.
    [[nodiscard]] std::string ca_pem() const;

    // "--resolve NAME:443=127.0.0.1:HTTPS --resolve NAME:80=127.0.0.1:HTTP" for each name.
    [[nodiscard]] std::vector<std::string> resolve_flags(
        const std::vector<std::string>& names) const;

private:
    TempDir dir_{"stockade-upstreams"};
    std::string error_;
    int https_port_ = 0;
    int http_port_ = 0;
    pid_t pid_ = -1;
};

// One Upstreams for the whole test process, started on first use and stopped at its exit.
Upstreams& shared_upstreams();

// Why --network allowlist cannot be tried on this host ("" when it can): it needs an isolation
// level with a network namespace of the sandbox's own.
std::string allowlist_unavailable();

// A test of --network allowlist: skipped (with the reason) where the host cannot give one;
// otherwise the shared upstreams run and the workspace holds their CA as ca.pem.
class AllowlistTest : public ::testing::Test {
protected:
    void SetUp() override;

    Upstreams* upstreams_ = nullptr;
    TempDir workspace_{"stockade-net-ws"};
    TempDir state_{"stockade-net-state"};
};

}  // namespace stockade::testing
