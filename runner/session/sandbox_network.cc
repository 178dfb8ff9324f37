#include "runner/session/sandbox_network.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "common/log.h"
#include "runner/session/policy_gate.h"

namespace stockade::runner {

namespace {

// Distinct targets kept per command; refusals past them count under one entry with no host,
// so that a command trying a million names costs no more than this.
constexpr size_t kMaxTargets = 32;

// Refusals of one target count together; the first one seen keeps its place. True when `r`
// is a target the list did not have.
bool add_refusal(std::vector<tools::NetworkRefusal>& list, const tools::NetworkRefusal& r) {
    auto same = std::find_if(list.begin(), list.end(), [&](const tools::NetworkRefusal& x) {
        return x.host == r.host && x.port == r.port && x.reason == r.reason && x.dns == r.dns &&
               x.unreached == r.unreached;
    });
    if (same != list.end()) {
        ++same->count;
        return false;
    }
    if (list.size() >= kMaxTargets) {
        if (list.back().host.empty() && list.back().dns == r.dns &&
            list.back().unreached == r.unreached) {
            ++list.back().count;
        } else {
            list.push_back(
                tools::NetworkRefusal{.count = 1, .dns = r.dns, .unreached = r.unreached});
        }
        return false;
    }
    list.push_back(r);
    list.back().count = 1;
    return true;
}

tools::NetworkRefusal refusal_of(const network::ConnectionRecord& r) {
    tools::NetworkRefusal out{
        .host = r.host, .port = r.port, .count = 1, .reason = r.reason, .hint = r.hint};
    if (r.outcome == network::Outcome::kFailed) {
        // Allowed, but not made: what the machine the proxy runs on could not do.
        out.unreached = true;
        if (out.hint.empty() && r.reason.find("could not be resolved") != std::string::npos) {
            out.hint = fmt::format(
                "the machine Stockade runs on cannot resolve it; if it is on the user's network, "
                "the user can pin it: --resolve {}=ADDRESS (settings: sandbox.network.resolve)",
                r.host);
        }
    }
    return out;
}

// What a refused DNS query's result says: why, and how the user gets a network that reaches
// the name.
tools::NetworkRefusal lookup_refusal(sandbox::NetworkMode mode, const std::string& name) {
    if (mode == sandbox::NetworkMode::kAllowlist) {
        return tools::NetworkRefusal{
            .host = name,
            .count = 1,
            .reason = "names are resolved by Stockade's proxy, outside the sandbox",
            .hint =
                "connect through the proxy in $HTTPS_PROXY, which every command's "
                "environment names",
            .dns = true};
    }
    return tools::NetworkRefusal{
        .host = name,
        .count = 1,
        .reason = "this sandbox has no network",
        .hint = fmt::format("to reach it, the user can start the sandbox with --network "
                            "allowlist --allow 'network.access({})'",
                            name),
        .dns = true};
}

}  // namespace

Status add_settings_pins(const policy::Policy& policy, std::vector<network::ResolvePin>& pins) {
    for (const policy::SandboxEntry& entry : policy.sandbox().resolve) {
        auto pin = network::parse_resolve_pin(entry.value);
        if (!pin) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("{}: sandbox.network.resolve \"{}\": {}", entry.origin,
                                     entry.value, pin.error().message)};
        }
        pins.push_back(std::move(pin).value());
    }
    return {};
}

Result<std::unique_ptr<SandboxNetwork>> SandboxNetwork::start(SandboxNetworkConfig config) {
    if (config.mode == sandbox::NetworkMode::kHost) {
        return Error{Errc::kInternal, "the host's network is not a sandbox's own"};
    }
    if (config.mode == sandbox::NetworkMode::kAllowlist && config.policy == nullptr) {
        return Error{Errc::kInternal, "the allowlist network needs a policy"};
    }
    std::unique_ptr<SandboxNetwork> net(new SandboxNetwork(std::move(config)));
    if (net->config_.mode != sandbox::NetworkMode::kAllowlist) {
        return net;
    }
    SandboxNetwork* self = net.get();
    auto proxy = network::Proxy::start(
        network::ProxyOptions{.pins = net->config_.pins,
                              .max_connections = net->config_.max_connections,
                              .bytes_per_second = net->config_.bytes_per_second},
        [self](const std::string& host, uint16_t port) { return self->decide(host, port); },
        [self](const network::ConnectionRecord& record) { self->record(record); },
        [self](const network::ConnectionRecord& pending, const network::Verdict& unanswered,
               network::Proxy::Answer answer) {
            self->ask(pending, unanswered, std::move(answer));
        });
    if (!proxy) {
        return std::move(proxy).error().wrap("start the network proxy (--network allowlist)");
    }
    net->proxy_ = std::move(proxy).value();
    return net;
}

SandboxNetwork::~SandboxNetwork() {
    resolver_ = {};  // its handler uses what follows
    // The questions in flight answer to the proxy: they end first. Each ends with its
    // elicitation (answered, timed out, or failed because the client is gone).
    std::vector<std::jthread> asking;
    {
        std::lock_guard lock(mu_);
        asking = std::move(asking_);
    }
    asking.clear();
    proxy_.reset();
}

void SandboxNetwork::serve(UniqueFd listener) {
    if (proxy_) {
        proxy_->serve(std::move(listener));
    }
}

Status SandboxNetwork::serve_resolver(UniqueFd socket) {
    resolver_ = {};
    ASSIGN_OR_RETURN(resolver_, network::DnsRefuser::serve(
                                    std::move(socket),
                                    [this](const network::DnsQuestion& q) { refused_lookup(q); }));
    return {};
}

std::vector<std::string> SandboxNetwork::command_env(const std::string& tag) const {
    if (!proxy_) {
        return {};
    }
    const std::string url = fmt::format("http://stockade:{}@127.0.0.1:{}", tag, config_.port);
    const std::string no_proxy = "localhost,127.0.0.1,::1";
    return {
        // The conventions most clients read; curl reads only the lower-case http_proxy.
        "http_proxy=" + url,
        "HTTP_PROXY=" + url,
        "https_proxy=" + url,
        "HTTPS_PROXY=" + url,
        "all_proxy=" + url,
        "ALL_PROXY=" + url,
        "no_proxy=" + no_proxy,
        "NO_PROXY=" + no_proxy,
        // git (libcurl) waits for a 407 before it sends credentials: send them at once, so
        // that its connections are tied to their command too.
        "GIT_HTTP_PROXY_AUTHMETHOD=basic",
        // npm reads its own settings before the variables above.
        "npm_config_proxy=" + url,
        "npm_config_https_proxy=" + url,
        "npm_config_noproxy=" + no_proxy,
        // cargo's http.proxy.
        "CARGO_HTTP_PROXY=" + url,
        // Node's fetch and http modules follow the variables above when this is set
        // (Node 24 and later; earlier versions ignore it).
        "NODE_USE_ENV_PROXY=1",
    };
}

void SandboxNetwork::command_started(const std::string& tag, const std::string& call_id,
                                     const std::string& command) {
    std::lock_guard lock(mu_);
    calls_[tag] = call_id;
    commands_[tag] = command;
    running_.insert(tag);
}

void SandboxNetwork::call_started(const std::string& call_id, mcp::ElicitFn elicit) {
    std::lock_guard lock(mu_);
    askers_[call_id] = std::move(elicit);
}

void SandboxNetwork::call_ended(const std::string& call_id) {
    std::lock_guard lock(mu_);
    askers_.erase(call_id);
}

std::string SandboxNetwork::command_of_locked(const std::string& tag) const {
    if (!calls_.contains(tag) && running_.size() == 1) {
        return *running_.begin();
    }
    return tag;
}

void SandboxNetwork::command_ended(const std::string& tag) {
    std::lock_guard lock(mu_);
    running_.erase(tag);
}

std::vector<tools::NetworkRefusal> SandboxNetwork::refusals(const std::string& tag) const {
    std::lock_guard lock(mu_);
    auto it = refused_.find(tag);
    return it == refused_.end() ? std::vector<tools::NetworkRefusal>{} : it->second;
}

std::vector<tools::NetworkRefusal> SandboxNetwork::all_refusals() const {
    std::lock_guard lock(mu_);
    return all_refused_;
}

network::Verdict SandboxNetwork::decide(const std::string& host, uint16_t port) const {
    const policy::CapabilityRequest request{
        .kind = policy::CapabilityKind::kNetworkAccess, .tool = "bash", .host = host, .port = port};
    network::Verdict verdict;
    if (config_.grants != nullptr && config_.grants->has(grant_key(request))) {
        verdict.allow = true;
        verdict.rule = "the user's answer for this session";
        return verdict;
    }
    const policy::RequestOutcome outcome = config_.policy->evaluate_one(request);
    verdict.ask = outcome.decision == policy::Decision::kAsk;
    verdict.allow = outcome.decision == policy::Decision::kAllow;
    if (outcome.rule) {
        verdict.rule = outcome.rule->text;
    }
    if (verdict.allow) {
        return verdict;
    }
    if (outcome.rule && outcome.rule->decision == policy::Decision::kDeny) {
        verdict.reason = fmt::format("denied by {}", outcome.rule->text);
        return verdict;
    }
    // An ask has nobody to answer it while a connection waits: refused, and said so.
    verdict.reason = outcome.rule ? fmt::format(
                                        "{} asks for the user's approval, which a "
                                        "connection cannot wait for",
                                        outcome.rule->text)
                                  : std::string("not in the allowlist");
    verdict.hint = fmt::format("the user can add network.access({})", host);
    return verdict;
}

void SandboxNetwork::record(const network::ConnectionRecord& r) {
    std::string call;
    std::string tag;
    bool by_elimination = false;
    bool log_it = false;
    const tools::NetworkRefusal said = refusal_of(r);
    {
        std::lock_guard lock(mu_);
        tag = command_of_locked(r.tag);
        by_elimination = tag != r.tag;
        if (auto it = calls_.find(tag); it != calls_.end()) {
            call = it->second;
        }
        if (r.outcome != network::Outcome::kRelayed) {
            add_refusal(refused_[tag], said);
            add_refusal(all_refused_, said);
            log_it = logged_hosts_.size() < kMaxLoggedHosts && logged_hosts_.insert(r.host).second;
        }
    }
    if (log_it) {
        // The operator's view, once per host per session: what was refused (or could not be
        // reached) and what would allow it (the model's result says the same).
        SPDLOG_LOGGER_INFO(log::get("network"), "{} {}:{}: {}{}",
                           said.unreached ? "could not reach" : "refused", r.host, r.port,
                           r.reason.empty() ? "not in the allowlist" : r.reason,
                           said.hint.empty() ? "" : "; " + said.hint);
    }
    if (config_.events == nullptr) {
        return;
    }
    nlohmann::json fields = {{"call", call},
                             {"command_tag", tag},
                             {"host", r.host},
                             {"port", r.port},
                             {"method", r.method},
                             {"outcome", network::outcome_name(r.outcome)},
                             {"bytes_sent", r.bytes_sent},
                             {"bytes_received", r.bytes_received},
                             {"duration_ms", r.duration.count()}};
    if (by_elimination) {
        fields["attributed"] = "the only command running";  // it sent no credentials
    }
    if (!r.address.empty()) {
        fields["address"] = r.address;
    }
    if (!r.rule.empty()) {
        fields["rule"] = r.rule;
    }
    if (!r.reason.empty()) {
        fields["reason"] = r.reason;
    }
    config_.events->record("NetworkConnection", std::move(fields), false);
}

void SandboxNetwork::refused_lookup(const network::DnsQuestion& question) {
    const tools::NetworkRefusal refusal = lookup_refusal(config_.mode, question.name);
    // Recorded once per name for each command (and for the sandbox), not per query: a command
    // that asks a million times costs a count.
    std::vector<std::pair<std::string, std::string>> first_for;  // (tag, call) of each command
    bool first_in_sandbox = false;
    bool log_it = false;
    {
        std::lock_guard lock(mu_);
        for (const std::string& tag : running_) {
            if (add_refusal(refused_[tag], refusal)) {
                auto call = calls_.find(tag);
                first_for.emplace_back(tag, call == calls_.end() ? "" : call->second);
            }
        }
        first_in_sandbox = add_refusal(all_refused_, refusal);
        log_it = logged_hosts_.size() < kMaxLoggedHosts &&
                 logged_hosts_.insert("dns " + question.name).second;
    }
    if (log_it) {
        SPDLOG_LOGGER_INFO(log::get("network"), "refused a DNS query for {}: {}; {}", question.name,
                           refusal.reason, refusal.hint);
    }
    if (config_.events == nullptr) {
        return;
    }
    if (first_for.empty() && first_in_sandbox) {
        first_for.emplace_back("", "");  // no command was running
    }
    for (const auto& [tag, call] : first_for) {
        config_.events->record("NetworkLookup",
                               {{"call", call},
                                {"command_tag", tag},
                                {"host", question.name},
                                {"query_type", network::dns_type_name(question.type)},
                                {"outcome", "refused"},
                                {"reason", refusal.reason}},
                               false);
    }
}

void SandboxNetwork::ask(const network::ConnectionRecord& pending,
                         const network::Verdict& unanswered, network::Proxy::Answer answer) {
    // A few questions at a time: a command that tries a hundred hosts gets its refusals.
    constexpr size_t kMaxWaiting = 4;
    mcp::ElicitFn elicit;
    std::string call;
    std::string command;
    {
        std::lock_guard lock(mu_);
        const std::string tag = command_of_locked(pending.tag);
        if (auto it = calls_.find(tag); it != calls_.end()) {
            call = it->second;
            command = commands_[tag];
        }
        if (auto it = askers_.find(call); it != askers_.end() && waiting_ < kMaxWaiting) {
            elicit = it->second;
            ++waiting_;
        }
    }
    if (!elicit) {
        // Nobody to ask: the call that started the command has returned, its client cannot be
        // asked, or enough questions wait already.
        answer(unanswered);
        return;
    }
    const std::string target = fmt::format("{}:{}", pending.host, pending.port);
    std::lock_guard lock(mu_);
    asking_.emplace_back([this, elicit = std::move(elicit), answer = std::move(answer), call,
                          command, target, pending, unanswered] {
        mcp::ElicitRequest question{
            .message = fmt::format(
                "Allow a command of the agent to connect to {}?\nCommand: {}\nAsked because "
                "{}.",
                target, command.empty() ? std::string("(unknown)") : command,
                unanswered.rule.empty() ? std::string("no rule allows it")
                                        : fmt::format("of the rule {}", unanswered.rule)),
            .requested_schema = decision_schema(),
            .timeout = config_.ask_timeout};
        auto reply = elicit(question);
        const std::string action = reply ? reply->action : std::string("error");
        std::string choice;
        if (reply && reply->action == "accept" && reply->content.is_object()) {
            choice = reply->content.value("decision", "");
        }
        if (config_.events != nullptr) {
            config_.events->record(
                "NetworkAnswered",
                {{"call", call}, {"target", target}, {"action", action}, {"decision", choice}},
                true);
        }
        network::Verdict verdict = unanswered;
        if (choice == "once" || choice == "session") {
            if (choice == "session" && config_.grants != nullptr) {
                config_.grants->add(grant_key(
                    policy::CapabilityRequest{.kind = policy::CapabilityKind::kNetworkAccess,
                                              .tool = "bash",
                                              .host = pending.host,
                                              .port = pending.port}));
            }
            verdict =
                network::Verdict{.allow = true,
                                 .rule = choice == "once" ? "the user's answer (once)"
                                                          : "the user's answer for this session"};
        } else {
            verdict.allow = false;
            verdict.reason =
                fmt::format("the user declined it ({})", choice.empty() ? action : choice);
        }
        {
            std::lock_guard inner(mu_);
            --waiting_;
        }
        answer(std::move(verdict));
    });
}

}  // namespace stockade::runner
