#include "runner/session/policy_gate.h"

#include <fmt/format.h>

namespace stockade::runner {

namespace {

using policy::CapabilityKind;

// The first two words of a command: "npm install lodash" → "npm install".
std::string command_prefix(const std::string& command) {
    size_t first = command.find(' ');
    if (first == std::string::npos) {
        return command;
    }
    size_t second = command.find(' ', first + 1);
    return second == std::string::npos ? command : command.substr(0, second);
}

std::string rule_clause(const policy::RequestOutcome& outcome, policy::Preset preset) {
    if (outcome.rule) {
        return fmt::format("the rule {} ({})", outcome.rule->text, outcome.rule->origin);
    }
    return fmt::format("the {} preset's default (no rule matched)", policy::preset_name(preset));
}

bool needs_network(const policy::RequestOutcome& outcome, bool sandbox_network) {
    return outcome.request.kind == CapabilityKind::kNetworkAccess && !sandbox_network;
}

// What else it takes when the sandbox has no network: no rule can give it one.
std::string network_restart(const policy::RequestOutcome& outcome, bool sandbox_network) {
    if (!needs_network(outcome, sandbox_network)) {
        return "";
    }
    return ", and this session's sandbox has no network at all: nothing can connect until the "
           "operator restarts Stockade with --network allowlist (or host)";
}

// How the user could let an asked request through: an ask rule wins over any allow rule, so
// it has to move; without one, an allow rule does.
std::string how_to_allow(const policy::RequestOutcome& outcome, bool sandbox_network) {
    std::string how;
    if (outcome.rule && outcome.rule->decision == policy::Decision::kAsk) {
        how = fmt::format("by moving {} from \"ask\" to \"allow\" ({})", outcome.rule->text,
                          outcome.rule->origin);
    } else {
        how = fmt::format("with the rule {}", suggested_rule(outcome.request));
    }
    return how + network_restart(outcome, sandbox_network);
}

std::string tool_word(const std::string& tool) {
    return tool.empty() ? std::string("this tool") : tool;
}

}  // namespace

std::string describe_action(const policy::CapabilityRequest& request) {
    switch (request.kind) {
        case CapabilityKind::kFileRead:
            return fmt::format("reading {}", request.path);
        case CapabilityKind::kFileWrite:
            return fmt::format("writing {}", request.path);
        case CapabilityKind::kFileWriteOutsideProject:
            return fmt::format("writing {}, outside the project", request.path);
        case CapabilityKind::kProcessExecute:
            return fmt::format("running `{}`", request.command);
        case CapabilityKind::kNetworkAccess:
            if (!request.reason.empty()) {
                return fmt::format("network access ({})", request.reason);
            }
            return request.host.empty() ? std::string("network access")
                                        : fmt::format("network access to {}", request.host);
        case CapabilityKind::kGitModify:
            return fmt::format("changing the git repository (git {})", request.subcommand);
        case CapabilityKind::kTool:
            return fmt::format("using the {} tool", tool_word(request.tool));
    }
    return "this call";
}

std::string suggested_rule(const policy::CapabilityRequest& request) {
    switch (request.kind) {
        case CapabilityKind::kFileRead:
            return fmt::format("Read({})", request.path);
        case CapabilityKind::kFileWrite:
            return fmt::format("Edit({})", request.path);
        case CapabilityKind::kFileWriteOutsideProject:
            return fmt::format("file.write.outsideProject({})", request.path);
        case CapabilityKind::kProcessExecute:
            return fmt::format("{}({}:*)", request.tool == "process" ? "Process" : "Bash",
                               command_prefix(request.command));
        case CapabilityKind::kNetworkAccess:
            return request.host.empty() ? std::string("network.access")
                                        : fmt::format("network.access({})", request.host);
        case CapabilityKind::kGitModify:
            return fmt::format("git.modify({})", request.subcommand);
        case CapabilityKind::kTool:
            return request.tool == "process" ? std::string("Process") : request.tool;
    }
    return "";
}

std::string denial_text(const policy::CallDecision& decision, policy::Preset preset,
                        policy::Mode mode, bool sandbox_network) {
    const policy::RequestOutcome* o = decision.deciding_outcome();
    if (o == nullptr) {
        return "Stockade's policy denied this call.";
    }
    const std::string what = describe_action(o->request);
    if (o->before_mode == policy::Decision::kAsk) {
        return fmt::format(
            "Not allowed: {} needs the user's approval under {}, and in {} mode there is nobody "
            "to ask, so it is denied. Continue without it; if the task cannot be done without "
            "it, say so in your answer: the user can allow it {}.",
            what, rule_clause(*o, preset), policy::mode_name(mode),
            how_to_allow(*o, sandbox_network));
    }
    if (o->rule) {
        return fmt::format(
            "Not allowed: {} is denied by the rule {} ({}). The user set this rule on purpose: "
            "do not try to reach the same thing another way (another tool, a copy, a script). "
            "Continue without it, or ask the user for what you need.",
            what, o->rule->text, o->rule->origin);
    }
    if (o->request.kind == CapabilityKind::kNetworkAccess &&
        policy::mode_traits(mode).network_default_deny) {
        return fmt::format(
            "Not allowed: {} — in {} mode the network is closed unless a rule allows it, and "
            "none does. Continue without it (use what is already in the workspace); if the "
            "task needs it, say so in your answer and name the rule that would allow it: {}{}.",
            what, policy::mode_name(mode), suggested_rule(o->request),
            network_restart(*o, sandbox_network));
    }
    return fmt::format(
        "Not allowed: {} is not permitted by the {} preset, and no rule allows it. Continue "
        "without it; if the task needs it, ask the user to allow it (for example with the rule "
        "{} in .stockade/settings.json{}).",
        what, policy::preset_name(preset), suggested_rule(o->request),
        network_restart(*o, sandbox_network));
}

std::string network_note(const policy::CallDecision& decision, bool sandbox_network) {
    if (sandbox_network) {
        return "";
    }
    for (const policy::RequestOutcome& outcome : decision.outcomes) {
        // A call that runs had every request allowed, by a rule or by the user's answer.
        if (outcome.request.kind == CapabilityKind::kNetworkAccess &&
            outcome.decision != policy::Decision::kDeny) {
            return fmt::format(
                "Note: the policy allows {}, but this session's sandbox has no network: only "
                "its own loopback (127.0.0.1) answers, and every other connection fails. If the "
                "task needs the network, say so in your answer: the operator must restart "
                "Stockade with --network allowlist (or host).",
                describe_action(outcome.request));
        }
    }
    return "";
}

std::string ask_unavailable_text(const policy::CallDecision& decision, policy::Preset preset,
                                 bool sandbox_network) {
    const policy::RequestOutcome* o = decision.deciding_outcome();
    if (o == nullptr) {
        return "This call needs the user's approval, and this client cannot ask for it.";
    }
    return fmt::format(
        "Not run: {} needs the user's approval under {}, but this MCP client cannot ask the "
        "user (it did not declare the elicitation capability), so it is denied. Ask the user "
        "in your reply; they can allow it {}.",
        describe_action(o->request), rule_clause(*o, preset), how_to_allow(*o, sandbox_network));
}

std::string declined_text(const policy::CallDecision& decision, std::string_view action) {
    const policy::RequestOutcome* o = decision.deciding_outcome();
    const std::string what = o == nullptr ? std::string("this call") : describe_action(o->request);
    if (action == "decline" || action == "deny") {
        return fmt::format(
            "The user declined {}. Do not retry it; continue another way, or ask the user what "
            "they would prefer.",
            what);
    }
    return fmt::format(
        "The user did not answer the request to allow {}, so it was not run. Ask again only if "
        "it is necessary, and say why.",
        what);
}

AskPrompt ask_prompt(std::string_view tool, const nlohmann::json& arguments,
                     const policy::CallDecision& decision, policy::Preset preset) {
    const policy::RequestOutcome* o = decision.deciding_outcome();
    std::string args = arguments.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (args.size() > 400) {
        args = args.substr(0, 400) + "…";
    }
    AskPrompt prompt;
    prompt.message = fmt::format(
        "Allow the agent's {} call? It would be {}.\nArguments: {}\n"
        "Asked because of {}.",
        tool, o == nullptr ? "this call" : describe_action(o->request), args,
        o == nullptr ? "the policy" : rule_clause(*o, preset));
    prompt.schema = decision_schema();
    return prompt;
}

nlohmann::json decision_schema() {
    return {{"type", "object"},
            {"properties",
             {{"decision",
               {{"type", "string"},
                {"title", "Decision"},
                {"description", "Allow once, allow for the rest of this session, or deny"},
                {"oneOf",
                 {{{"const", "once"}, {"title", "Allow once"}},
                  {{"const", "session"}, {"title", "Allow for the rest of this session"}},
                  {{"const", "deny"}, {"title", "Deny"}}}}}}}},
            {"required", {"decision"}}};
}

std::string grant_key(const policy::CapabilityRequest& request) {
    return fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}",
                       policy::capability_kind_name(request.kind), request.tool, request.path,
                       request.command, request.host, request.subcommand);
}

}  // namespace stockade::runner
