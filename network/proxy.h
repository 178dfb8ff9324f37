// The allowlist proxy (DESIGN.md §4, network mode allowlist): HTTP CONNECT and plain-HTTP
// forwarding for one sandbox, run by the supervisor on a thread of its own. The sandbox's
// child listens on 127.0.0.1:PORT inside its empty network namespace and hands the listening
// socket over (sandbox::Sandbox::proxy_listener): every connection a command makes to its
// proxy is accepted here, outside the sandbox, and is the only way anything inside reaches
// another host.
//
// Each connection is decided when it is made, on the name the client asked for (the CONNECT
// authority, or the URL of a forwarded request): `decide` (the session's policy) says whether
// the name and port may be reached. The proxy then resolves the name itself and refuses,
// whatever the rules say, an address that is loopback, link-local, private or this host's own
// — unless the operator pinned the name to it (--resolve), the only way to reach one. So a
// name that an attacker's DNS points at an internal address (rebinding) is refused too. In a
// tunnel that starts with a TLS ClientHello, the server name it carries must be the name the
// CONNECT asked for.
//
// Every connection, relayed or refused, ends in one ConnectionRecord handed to `report`, with
// the tag of the command that made it: the password of the proxy credentials each command's
// environment carries (http://stockade:TAG@127.0.0.1:PORT).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "network/address.h"

namespace stockade::network {

// The policy's answer for one host and port.
struct Verdict {
    bool allow = false;
    std::string rule{};    // the rule that decided, as written; "" when no rule matched
    std::string reason{};  // refused: why, e.g. "not in the allowlist"
    std::string hint{};  // refused: what would allow it, e.g. "the user can add network.access(x)"
    // The rules leave it to the user: with an Ask, the connection waits for their answer (at
    // most ProxyOptions::ask_timeout); without one, or unanswered, it is refused as above.
    bool ask = false;
};

enum class Outcome : uint8_t {
    kRelayed,  // connected and relayed until either side closed
    kRefused,  // refused by a rule, an address check, the TLS name check or a limit
    kFailed,   // allowed, but it could not be reached (no such name, refused, timed out)
};
const char* outcome_name(Outcome outcome) noexcept;  // "relayed", "refused", "failed"

struct ConnectionRecord {
    std::string tag{};   // the command's tag from its proxy credentials; "" when it sent none
    std::string host{};  // as the client asked for it (lower-case), or the peer for a bad request
    uint16_t port = 0;
    std::string method{};   // "CONNECT", or the forwarded request's method ("GET", ...)
    std::string address{};  // the upstream endpoint, once there was one ("1.2.3.4:443")
    Outcome outcome = Outcome::kRelayed;
    std::string rule{};           // the rule that allowed or refused it
    std::string reason{};         // refused or failed: why
    std::string hint{};           // refused: what would allow it
    uint64_t bytes_sent = 0;      // client to upstream
    uint64_t bytes_received = 0;  // upstream to client
    std::chrono::milliseconds duration{0};
};

struct ProxyOptions {
    std::vector<ResolvePin> pins{};  // --resolve: names pinned to addresses (private ones too)
    size_t max_connections = 256;    // open at once; more are refused (503)
    uint64_t bytes_per_second = 0;   // both directions of every connection together; 0: no bound
    std::chrono::milliseconds head_timeout{30'000};     // for the request head and a ClientHello
    std::chrono::milliseconds connect_timeout{15'000};  // resolving and connecting upstream
    std::chrono::milliseconds ask_timeout{120'000};     // waiting for the user's answer
};

class Proxy {
public:
    // Called on the proxy's thread: keep them quick and never let them throw.
    using Decide = std::function<Verdict(const std::string& host, uint16_t port)>;
    using Report = std::function<void(const ConnectionRecord& record)>;
    // Puts a Verdict::ask to the user, without blocking: `answer` (callable from any thread,
    // once, while the proxy lives) gives their decision. `pending` has the tag, host and port.
    using Answer = std::function<void(Verdict verdict)>;
    using Ask = std::function<void(const ConnectionRecord& pending, const Verdict& unanswered,
                                   Answer answer)>;

    // Starts the proxy's thread. It accepts nothing until serve() gives it a listener.
    static Result<std::unique_ptr<Proxy>> start(ProxyOptions options, Decide decide, Report report,
                                                Ask ask = {});
    // Closes the listener and every connection (each reported), then joins the thread.
    ~Proxy();
    Proxy(const Proxy&) = delete;
    Proxy& operator=(const Proxy&) = delete;

    // Accepts on `listener` (a listening TCP socket) from now on, instead of the previous one:
    // a new worker's sandbox has a new network namespace. Connections already open stay.
    void serve(UniqueFd listener);
    // Connections open now.
    [[nodiscard]] size_t open_connections() const;

    struct Impl;

private:
    explicit Proxy(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace stockade::network
