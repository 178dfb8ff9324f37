// `stockade policy explain TOOL ARGS`: the requests a call makes, how each was decided (rule
// and origin, or the default), the call's decision and the destructive warnings, as JSON for
// tools and as text for people. `stockade policy explain network HOST[:PORT]`: how one
// connection is decided, as the allowlist proxy asks when a command connects.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "policy/capability.h"
#include "policy/decision.h"
#include "policy/policy.h"

namespace stockade::policy {

struct Explanation {
    std::string tool{};
    Preset preset = Preset::kWorkspaceWrite;
    Mode mode = Mode::kLocal;
    ToolVisibility visibility{};
    CallDecision decision{};
    std::vector<std::string> warnings{};  // destructive patterns (bash, process start)
};

// Policy::evaluate of a call's requests (what the tool's capabilities() said), with what the
// tool warns of.
Explanation explain_call(const Policy& policy, std::string_view tool,
                         std::span<const CapabilityRequest> requests,
                         std::vector<std::string> warnings);

// What a request is about, for people: the path, the command, the host (with ":port" when
// known; an IPv6 literal in brackets), the subcommand.
std::string describe_request(const CapabilityRequest& request);

// A connection to `target` ("pypi.org", "pypi.org:443", "[::1]:8080", "10.0.0.1"), as the
// allowlist proxy asks the policy: network.access by tool "bash", the normalised host and the
// port (0 when the target names none). An error says what is wrong with the target.
Result<CapabilityRequest> connection_request(std::string_view target);

struct ConnectionExplanation {
    Preset preset = Preset::kWorkspaceWrite;
    Mode mode = Mode::kLocal;
    std::string managed_domains_only{};  // Policy::managed_domains_only()
    RequestOutcome outcome{};
};
ConnectionExplanation explain_connection(const Policy& policy, const CapabilityRequest& request);

// {"kind": "network.access", "host", "port" (null: not given), "decision", "before_mode",
//  "preset", "mode", "rule"?, "origin"?, "layer"?, "reason", "managed_domains_only"?}
nlohmann::json connection_json(const ConnectionExplanation& explanation);
// network pypi.org:443: allow (preset workspace-write, mode local)
//   rule:   allow "network.access(pypi.org:443)"
//   source: preset registries (command-line layer)
std::string connection_text(const ConnectionExplanation& explanation);

// {"tool", "decision", "preset", "mode", "hidden", "hidden_reason"?, "deciding_request"?,
//  "reason"?, "rule"?, "origin"?,
//  "requests": [{"kind", "tool", "path"|"command"|"host"|"subcommand"|"action", "port"?, "opaque"?,
//                "derived_because"?, "decision", "before_mode", "rule"?, "origin"?, "layer"?,
//                "reason"}],
//  "warnings": [...]}
// Strings are copied as they are: dump with error_handler_t::replace, as a command may hold
// invalid UTF-8.
nlohmann::json explain_json(const Explanation& explanation);
std::string explain_text(const Explanation& explanation);

}  // namespace stockade::policy
