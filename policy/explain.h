// `stockade policy explain TOOL ARGS`: the requests a call makes, how each was decided (rule
// and origin, or the default), the call's decision and the destructive warnings, as JSON for
// tools and as text for people.
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

// What a request is about, for people: the path, the command, the host, the subcommand.
std::string describe_request(const CapabilityRequest& request);

// {"tool", "decision", "preset", "mode", "hidden", "hidden_reason"?, "deciding_request"?,
//  "reason"?, "rule"?, "origin"?,
//  "requests": [{"kind", "tool", "path"|"command"|"host"|"subcommand"|"action", "opaque"?,
//                "derived_because"?, "decision", "before_mode", "rule"?, "origin"?, "layer"?,
//                "reason"}],
//  "warnings": [...]}
// Strings are copied as they are: dump with error_handler_t::replace, as a command may hold
// invalid UTF-8.
nlohmann::json explain_json(const Explanation& explanation);
std::string explain_text(const Explanation& explanation);

}  // namespace stockade::policy
