// The policy gate of a tool call (DESIGN.md §3, steps 2–4): the model-facing texts of a
// denial, of an ask nobody can answer and of a declined ask; the question an ask puts to the
// user through MCP elicitation; and the keys of the grants a user gives "for the session".
// Denials are course corrections: they say what was refused, by which rule and where it was
// written, and what to do instead — never only "denied".
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "policy/decision.h"
#include "policy/preset.h"

namespace stockade::runner {

// "reading /ws/.env", "running `curl example.com`", "network access (`curl` reaches the
// network)", ...
std::string describe_action(const policy::CapabilityRequest& request);

// A rule that would allow the request, to suggest to the user: Read(/ws/.env),
// Bash(npm install:*), network.access, git.modify(push), ...
std::string suggested_rule(const policy::CapabilityRequest& request);

// `sandbox_network`: the session's sandbox has a network beyond its own loopback (--network
// host). Without one, no rule can let a network request through, and the texts say so.

// The call was denied: by a rule, by the preset's default, or because an ask cannot be put
// to anyone in this mode (ci, hosted).
std::string denial_text(const policy::CallDecision& decision, policy::Preset preset,
                        policy::Mode mode, bool sandbox_network);

// The call needs approval but the client cannot ask the user (no elicitation capability).
std::string ask_unavailable_text(const policy::CallDecision& decision, policy::Preset preset,
                                 bool sandbox_network);

// A call the policy lets through (a rule, or the user's answer to an ask) with network access
// that the sandbox cannot give: the note appended to its result. Empty when there is none.
std::string network_note(const policy::CallDecision& decision, bool sandbox_network);

// The user declined (or dismissed) the question.
std::string declined_text(const policy::CallDecision& decision, std::string_view action);

// The elicitation: a message naming the tool, its arguments and the rule, and a one-field
// form {"decision": "once" | "session" | "deny"}.
struct AskPrompt {
    std::string message{};
    nlohmann::json schema = nlohmann::json::object();
};
// The form of every question: once, for the session, or deny (property "decision").
nlohmann::json decision_schema();

AskPrompt ask_prompt(std::string_view tool, const nlohmann::json& arguments,
                     const policy::CallDecision& decision, policy::Preset preset);

// What a "for the session" answer remembers: the request's kind, tool and subject.
std::string grant_key(const policy::CapabilityRequest& request);

}  // namespace stockade::runner
