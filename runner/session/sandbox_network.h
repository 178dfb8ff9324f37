// The network of one sandbox (a session's worker, or a `stockade run`) that has a network
// namespace of its own: with --network allowlist its proxy (network/proxy.h), the policy's
// decision for each connection and the events that record them; in both that mode and none,
// its resolver, which refuses every DNS query (network/dns_refuser.h) and names the host and
// the way to reach it; and what each command was refused — for the one line its bash or
// process result carries.
//
// Commands find the proxy through their environment (command_env): the usual proxy
// variables in both cases, NO_PROXY for the sandbox's own loopback, and the settings of the
// clients that ignore those. Each command's proxy URL carries a tag of its own as the
// password (http://stockade:TAG@127.0.0.1:PORT): that is how a connection is tied to the
// command, and through it to the tool call, that made it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/event_sink.h"
#include "common/result.h"
#include "common/unique_fd.h"
#include "network/address.h"
#include "network/dns_refuser.h"
#include "network/proxy.h"
#include "policy/policy.h"
#include "runner/mcp/tool_host.h"
#include "runner/session/session_grants.h"
#include "sandbox/spec.h"
#include "tools/process_manager.h"

namespace stockade::runner {

struct SandboxNetworkConfig {
    // kAllowlist: the proxy and its rules; kNone: only the resolver (no policy needed).
    sandbox::NetworkMode mode = sandbox::NetworkMode::kAllowlist;
    const policy::Policy* policy = nullptr;  // decides each connection; outlives the network
    std::vector<network::ResolvePin> pins{};
    uint16_t port = 3128;  // where the proxy listens inside the sandbox
    // "NetworkConnection" and "NetworkLookup" events; may be null (stockade run)
    EventSink* events = nullptr;
    size_t max_connections = 256;
    uint64_t bytes_per_second = 0;
    // Local mode: a connection the rules leave to the user is put to them through the call
    // that started its command (call_started), and "for the session" answers are kept here.
    SessionGrants* grants = nullptr;
    std::chrono::milliseconds ask_timeout{120'000};
};

// The pins of the policy's settings (sandbox.network.resolve, from the operator's layers),
// after those of --resolve, which win for the same name and port. A malformed one is an error
// naming the file and line.
Status add_settings_pins(const policy::Policy& policy, std::vector<network::ResolvePin>& pins);

class SandboxNetwork {
public:
    // Starts the proxy's thread (mode allowlist); a proxy that cannot start fails the session
    // (or the run): never a silent fall back to no network or to the host's.
    static Result<std::unique_ptr<SandboxNetwork>> start(SandboxNetworkConfig config);

    // Accept on the listener a newly launched sandbox handed over (mode allowlist).
    void serve(UniqueFd listener);
    // Answer the DNS queries sent to the resolver socket a newly launched sandbox handed over
    // (sandbox::Sandbox::dns_socket), in place of the one of the sandbox before it.
    Status serve_resolver(UniqueFd socket);

    // The environment of a command whose connections carry `tag` (none without a proxy).
    [[nodiscard]] std::vector<std::string> command_env(const std::string& tag) const;
    // The tool call that started the command with `tag` (its connections' events name it).
    void command_started(const std::string& tag, const std::string& call_id,
                         const std::string& command = "");
    // The command's leader has ended. A connection that carries no tag (its client ignored the
    // proxy's credentials, or spoke to the proxy by hand) is the command's when it is the only
    // one running.
    void command_ended(const std::string& tag);
    // While the tool call `call_id` runs, a connection of a command it started that the rules
    // leave to the user is asked about through `elicit` (the call's own question channel).
    void call_started(const std::string& call_id, mcp::ElicitFn elicit);
    void call_ended(const std::string& call_id);
    // What the proxy refused the command with `tag`, by target, first refusal first.
    [[nodiscard]] std::vector<tools::NetworkRefusal> refusals(const std::string& tag) const;
    // Every refusal so far, whoever made it (stockade run's summary).
    [[nodiscard]] std::vector<tools::NetworkRefusal> all_refusals() const;

    // The policy's verdict for a host and port (the proxy's Decide), public for tests and
    // `policy explain`.
    [[nodiscard]] network::Verdict decide(const std::string& host, uint16_t port) const;

    ~SandboxNetwork();
    SandboxNetwork(const SandboxNetwork&) = delete;
    SandboxNetwork& operator=(const SandboxNetwork&) = delete;

private:
    explicit SandboxNetwork(SandboxNetworkConfig config) : config_(std::move(config)) {}
    void record(const network::ConnectionRecord& record);
    // A DNS query the resolver refused: counted against every command running when it came
    // (a query carries no tag), or against none.
    void refused_lookup(const network::DnsQuestion& question);
    // The proxy's Ask: on a thread of its own, through the elicitation of the call that started
    // the connection's command; refused at once when there is none.
    void ask(const network::ConnectionRecord& pending, const network::Verdict& unanswered,
             network::Proxy::Answer answer);
    // The tag a connection counts against: its own, or the only command running. mu_ held.
    [[nodiscard]] std::string command_of_locked(const std::string& tag) const;

    SandboxNetworkConfig config_;
    mutable std::mutex mu_;
    std::map<std::string, std::string> calls_;  // tag → call id; guarded by mu_
    std::set<std::string> running_;             // tags of the commands running; guarded by mu_
    // tag → refusals by target, in the order first seen; guarded by mu_
    std::map<std::string, std::vector<tools::NetworkRefusal>> refused_;
    std::vector<tools::NetworkRefusal> all_refused_;  // guarded by mu_
    // Hosts whose refusal the log has named (once each, at most kMaxLoggedHosts); guarded by mu_.
    static constexpr size_t kMaxLoggedHosts = 64;
    std::set<std::string> logged_hosts_;
    std::map<std::string, std::string> commands_;  // tag → command text; guarded by mu_
    std::map<std::string, mcp::ElicitFn> askers_;  // call id → its elicit; guarded by mu_
    std::unique_ptr<network::Proxy> proxy_;
    // The questions in flight (joined, before the proxy they answer to goes); guarded by mu_.
    std::vector<std::jthread> asking_;
    size_t waiting_ = 0;  // questions not yet answered; guarded by mu_
    // Last: it goes first, and its handler uses what is above.
    network::DnsRefuser::Registration resolver_;
};

}  // namespace stockade::runner
