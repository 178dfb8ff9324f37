#include "runner/cli/policy_command.h"

#include <limits.h>
#include <netdb.h>
#include <stdlib.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/syscall.h"
#include "network/address.h"
#include "network/reachability.h"
#include "policy/explain.h"
#include "policy/settings.h"
#include "runner/cli/exit_codes.h"
#include "runner/cli/run_command.h"
#include "runner/session/git_index.h"
#include "runner/session/policy_enforcement.h"
#include "tools/tool.h"

namespace stockade::runner {

namespace {

constexpr int kExitDenied = 1;
constexpr int kExitAsk = 3;

Result<HostDir> open_workspace(const std::string& workspace) {
    const std::string ws = workspace.empty() ? "." : workspace;
    auto opened = HostDir::open(ws);
    if (!opened) {
        return Error{Errc::kNotFound,
                     fmt::format("workspace \"{}\" is not a directory that can be opened: {}", ws,
                                 errno_string(opened.error().sys_errno))};
    }
    return opened;
}

}  // namespace

int policy_check_command(const PolicyCheckOptions& options) {
    auto ws = open_workspace(options.workspace);
    if (!ws) {
        fmt::print(stderr, "stockade policy check: {}\n", ws.error().message);
        return kExitUsage;
    }
    int problems = 0;
    for (const std::string& file : options.files) {
        auto text = read_file(file, size_t{1} << 20);
        if (!text) {
            fmt::print("{}: {}\n", file, text.error().message);
            ++problems;
            continue;
        }
        policy::SettingsSource source{.layer = policy::Layer::kCommandLine,
                                      .origin = file,
                                      .text = std::move(text).value(),
                                      .base_dir = {}};
        const policy::RuleAnchors anchors{
            .workspace_root = ws->path(),
            .home = policy_home(),
            .settings_dir = policy::settings_base_dir(source, ws->path())};
        auto parsed = policy::parse_settings(source, anchors);
        if (!parsed) {
            fmt::print("{}\n", parsed.error().message);
            ++problems;
            continue;
        }
        for (const auto& warning : parsed->warnings) {
            fmt::print("{} (warning: ignored)\n", warning);
        }
        fmt::print("{}: ok, {} rule{}{}\n", file, parsed->rules.size(),
                   parsed->rules.size() == 1 ? "" : "s",
                   parsed->preset ? fmt::format(", preset {}", policy::preset_name(*parsed->preset))
                                  : std::string());
        // Its Read deny rules against what git tracks in the workspace: the sandbox hides a
        // file, not the repository's history of it.
        const std::vector<policy::SettingsSource> alone = {source};
        if (auto policy = policy::Policy::load(
                alone,
                policy::PolicyOptions{.workspace_root = ws->path(), .home = policy_home()})) {
            for (const auto& warning : git_tracked_denials(*policy, *ws)) {
                fmt::print("{}: warning: {}\n", file, warning);
            }
        }
    }
    if (problems > 0) {
        fmt::print("{} of {} file{} invalid\n", problems, options.files.size(),
                   options.files.size() == 1 ? "" : "s");
        return 1;
    }
    return 0;
}

namespace {

int exit_status(policy::Decision decision) {
    switch (decision) {
        case policy::Decision::kAllow:
            return 0;
        case policy::Decision::kAsk:
            return kExitAsk;
        case policy::Decision::kDeny:
            return kExitDenied;
    }
    return kExitDenied;
}

// The policy the explanation is made against, as serve would load it from the same flags;
// an error or warning is printed here (nullopt: exit 2).
std::optional<policy::Policy> load_explained_policy(const PolicyExplainOptions& options,
                                                    const HostDir& ws) {
    std::vector<std::string> warnings;
    auto config = parse_policy_flags(options.policy);
    auto loaded = config ? load_policy(*config, ws, warnings)
                         : Result<policy::Policy>(std::move(config).error());
    if (!loaded) {
        fmt::print(stderr, "stockade policy explain: {}\n", loaded.error().message);
        return std::nullopt;
    }
    for (const auto& warning : warnings) {
        fmt::print(stderr, "warning: {}\n", warning);
    }
    return std::move(loaded).value();
}

// After the rules, the proxy's address check (network/reachability.h) on what `host` resolves
// to here, or on the settings' pin that names it: what it would do, as text lines and JSON.
struct AddressCheck {
    std::string text;
    nlohmann::json json = nlohmann::json::object();
    bool refused = false;
};

AddressCheck check_address(const policy::Policy& policy, const std::string& host, uint16_t port) {
    AddressCheck out;
    for (const policy::SandboxEntry& entry : policy.sandbox().resolve) {
        auto pin = network::parse_resolve_pin(entry.value);
        if (pin && pin->name == host && (!pin->port || port == 0 || *pin->port == port)) {
            const std::string to = pin->address.to_string();
            out.text = fmt::format(
                "  address: pinned to {} by {} (sandbox.network.resolve): the proxy connects "
                "there, whatever kind of address it is\n",
                to, entry.origin);
            out.json = {{"pinned", to}, {"origin", entry.origin}, {"proxy", "connects"}};
            return out;
        }
    }
    boost::system::error_code ec;
    const auto literal = boost::asio::ip::make_address(host, ec);
    std::vector<boost::asio::ip::address> addresses;
    if (!ec) {
        addresses.push_back(literal);
    } else {
        addrinfo hints{};
        hints.ai_socktype = SOCK_STREAM;
        addrinfo* found = nullptr;
        if (const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found); rc != 0) {
            out.text = fmt::format(
                "  address: {} does not resolve on this host ({}): the proxy could not connect "
                "(a name only the sandbox's network knows needs a pin: --resolve {}=ADDRESS)\n",
                host, ::gai_strerror(rc), host);
            out.json = {{"resolved", nlohmann::json::array()},
                        {"error", ::gai_strerror(rc)},
                        {"proxy", "fails"}};
            out.refused = true;
            return out;
        }
        for (addrinfo* it = found; it != nullptr; it = it->ai_next) {
            boost::asio::ip::tcp::endpoint e;
            if (it->ai_addrlen <= e.capacity()) {
                std::memcpy(e.data(), it->ai_addr, it->ai_addrlen);
                if (std::find(addresses.begin(), addresses.end(), e.address()) == addresses.end()) {
                    addresses.push_back(e.address());
                }
            }
        }
        ::freeaddrinfo(found);
    }
    nlohmann::json resolved = nlohmann::json::array();
    std::string listed;
    for (const auto& a : addresses) {
        resolved.push_back(a.to_string());
        listed += (listed.empty() ? "" : ", ") + a.to_string();
    }
    const auto first = network::drop_unreachable(addresses, network::own_addresses());
    if (addresses.empty() && first) {
        const std::string hint = network::unreachable_hint(host, !ec, *first);
        out.text = fmt::format("  address: {}: the proxy refuses it\n",
                               network::unreachable_reason(host, !ec, *first));
        if (!hint.empty()) {
            out.text += fmt::format("  pin:     {}\n", hint);
        }
        out.json = {{"resolved", resolved},
                    {"proxy", "refuses"},
                    {"reason", network::unreachable_reason(host, !ec, *first)}};
        if (!hint.empty()) {
            out.json["hint"] = hint;
        }
        out.refused = true;
        return out;
    }
    out.text = fmt::format(
        "  address: {}{}: the proxy connects{}\n", ec ? host + " resolves to " : std::string(),
        listed,
        first ? fmt::format(" (not to {}: {})", first->address, first->why) : std::string());
    out.json = {{"resolved", resolved}, {"proxy", "connects"}};
    return out;
}

// `stockade policy explain network HOST[:PORT]`: the decision the allowlist proxy would get for
// a connection to HOST on PORT, and, where its rules would let it through, what its address
// check would do with what HOST resolves to (a refusal there exits as a deny does).
int explain_network(const PolicyExplainOptions& options, const HostDir& ws) {
    auto request = policy::connection_request(options.arguments);
    if (!request) {
        fmt::print(stderr, "stockade policy explain network: {}\n", request.error().message);
        return kExitUsage;
    }
    auto loaded = load_explained_policy(options, ws);
    if (!loaded) {
        return kExitUsage;
    }
    const policy::ConnectionExplanation explained = policy::explain_connection(*loaded, *request);
    std::optional<AddressCheck> address;
    if (explained.outcome.decision != policy::Decision::kDeny) {
        address = check_address(*loaded, request->host, request->port);
    }
    if (options.json) {
        nlohmann::json out = policy::connection_json(explained);
        if (address) {
            out["address"] = address->json;
        }
        fmt::print("{}\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
    } else {
        fmt::print("{}{}", policy::connection_text(explained), address ? address->text : "");
    }
    return address && address->refused ? kExitDenied : exit_status(explained.outcome.decision);
}

}  // namespace

int policy_explain_command(const PolicyExplainOptions& options) {
    auto ws = open_workspace(options.workspace);
    if (!ws) {
        fmt::print(stderr, "stockade policy explain: {}\n", ws.error().message);
        return kExitUsage;
    }
    if (options.tool == "network") {
        return explain_network(options, *ws);
    }
    nlohmann::json args = nlohmann::json::parse(options.arguments, nullptr, false);
    if (args.is_discarded() || !args.is_object()) {
        fmt::print(stderr,
                   "stockade policy explain: the arguments must be a JSON object, e.g. "
                   "'{{\"command\": \"npm test\"}}'\n");
        return kExitUsage;
    }
    auto loaded = load_explained_policy(options, *ws);
    if (!loaded) {
        return kExitUsage;
    }
    const tools::ToolRegistry registry;
    const tools::Tool* tool = registry.find(options.tool);
    if (tool == nullptr) {
        fmt::print(stderr,
                   "stockade policy explain: no tool \"{}\": read, write, edit, grep, "
                   "glob, bash or process (or network HOST[:PORT] for a connection)\n",
                   options.tool);
        return kExitUsage;
    }
    auto call = tool->parse(args);
    if (!call) {
        fmt::print(stderr, "stockade policy explain: {}\n", call.error().message);
        return kExitUsage;
    }
    // As `serve` with the default --network none would analyse the call.
    const auto requests = (*call)->capabilities(
        session_request_context(ws->path(), session_network(*loaded, sandbox::NetworkMode::kNone)));
    const std::optional<policy::Explanation> explained =
        policy::explain_call(*loaded, options.tool, requests, (*call)->warnings());
    // What no decision shows: a Read deny rule whose files git tracks cannot hide their
    // committed contents.
    const std::vector<TrackedDenial> tracked = git_tracked_denied(*loaded, *ws);
    if (options.json) {
        nlohmann::json out = policy::explain_json(*explained);
        out["git_tracked_denials"] = nlohmann::json::array();
        for (const TrackedDenial& d : tracked) {
            out["git_tracked_denials"].push_back({{"rule", d.rule},
                                                  {"origin", d.origin},
                                                  {"tracked_files", d.count},
                                                  {"first", d.first},
                                                  {"warning", tracked_denial_warning(d)}});
        }
        fmt::print("{}\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
    } else {
        fmt::print("{}", policy::explain_text(*explained));
        for (const TrackedDenial& d : tracked) {
            fmt::print("warning: {}\n", tracked_denial_warning(d));
        }
    }
    return exit_status(explained->decision.decision);
}

}  // namespace stockade::runner
