#include "policy/explain.h"

#include <fmt/format.h>

#include "policy/host_pattern.h"

namespace stockade::policy {

Explanation explain_call(const Policy& policy, std::string_view tool,
                         std::span<const CapabilityRequest> requests,
                         std::vector<std::string> warnings) {
    return Explanation{.tool = std::string(tool),
                       .preset = policy.preset(),
                       .mode = policy.mode(),
                       .visibility = policy.visibility(tool),
                       .decision = policy.evaluate(requests),
                       .warnings = std::move(warnings)};
}

std::string describe_request(const CapabilityRequest& request) {
    switch (request.kind) {
        case CapabilityKind::kFileRead:
        case CapabilityKind::kFileWrite:
        case CapabilityKind::kFileWriteOutsideProject:
            return request.path;
        case CapabilityKind::kProcessExecute:
            return request.command;
        case CapabilityKind::kNetworkAccess: {
            if (request.host.empty()) {
                return request.port == 0 ? "(host not known)"
                                         : fmt::format("(host not known):{}", request.port);
            }
            if (request.port == 0) {
                return request.host;
            }
            if (request.host.find(':') != std::string::npos) {
                return fmt::format("[{}]:{}", request.host, request.port);
            }
            return fmt::format("{}:{}", request.host, request.port);
        }
        case CapabilityKind::kGitModify:
            return "git " + request.subcommand;
        case CapabilityKind::kTool:
            return request.tool + (request.command.empty() ? "" : " " + request.command);
    }
    return "";
}

nlohmann::json explain_json(const Explanation& explanation) {
    using nlohmann::json;
    const CallDecision& decision = explanation.decision;
    json out = {{"tool", explanation.tool},
                {"decision", decision_name(decision.decision)},
                {"preset", preset_name(explanation.preset)},
                {"mode", mode_name(explanation.mode)},
                {"hidden", explanation.visibility.hidden}};
    if (explanation.visibility.hidden) {
        out["hidden_reason"] = explanation.visibility.reason;
    }
    if (const RequestOutcome* deciding = decision.deciding_outcome()) {
        out["deciding_request"] = *decision.deciding;
        out["reason"] = deciding->reason;
        if (deciding->rule) {
            out["rule"] = deciding->rule->text;
            out["origin"] = deciding->rule->origin;
        }
    }
    json requests = json::array();
    for (const RequestOutcome& outcome : decision.outcomes) {
        const CapabilityRequest& request = outcome.request;
        json entry = {{"kind", capability_kind_name(request.kind)}, {"tool", request.tool}};
        switch (request.kind) {
            case CapabilityKind::kFileRead:
            case CapabilityKind::kFileWrite:
            case CapabilityKind::kFileWriteOutsideProject:
                entry["path"] = request.path;
                break;
            case CapabilityKind::kProcessExecute:
                entry["command"] = request.command;
                if (request.full_command != request.command) {
                    entry["full_command"] = request.full_command;
                }
                if (request.opaque) {
                    entry["opaque"] = true;
                }
                break;
            case CapabilityKind::kNetworkAccess:
                entry["host"] = request.host;
                if (request.port != 0) {
                    entry["port"] = request.port;
                }
                break;
            case CapabilityKind::kGitModify:
                entry["subcommand"] = request.subcommand;
                break;
            case CapabilityKind::kTool:
                entry["action"] = request.command;
                break;
        }
        if (!request.reason.empty()) {
            entry["derived_because"] = request.reason;
        }
        entry["decision"] = decision_name(outcome.decision);
        entry["before_mode"] = decision_name(outcome.before_mode);
        if (outcome.rule) {
            entry["rule"] = outcome.rule->text;
            entry["origin"] = outcome.rule->origin;
            entry["layer"] = layer_name(outcome.rule->layer);
        }
        entry["reason"] = outcome.reason;
        requests.push_back(std::move(entry));
    }
    out["requests"] = std::move(requests);
    out["warnings"] = explanation.warnings;
    return out;
}

std::string explain_text(const Explanation& explanation) {
    const CallDecision& decision = explanation.decision;
    std::string out = fmt::format("{}: {} (preset {}, mode {})\n", explanation.tool,
                                  decision_name(decision.decision), preset_name(explanation.preset),
                                  mode_name(explanation.mode));
    if (explanation.visibility.hidden) {
        out += fmt::format("  hidden from tools/list: {}\n", explanation.visibility.reason);
    }
    if (decision.outcomes.empty()) {
        out += "  no capability requested\n";
    }
    for (size_t i = 0; i < decision.outcomes.size(); ++i) {
        const RequestOutcome& outcome = decision.outcomes[i];
        out += fmt::format("  [{}] {:<5} {} {}{}\n", i + 1, decision_name(outcome.decision),
                           capability_kind_name(outcome.request.kind),
                           describe_request(outcome.request),
                           decision.deciding == i ? "  <- decides" : "");
        if (!outcome.request.reason.empty()) {
            out += fmt::format("            requested because {}\n", outcome.request.reason);
        }
        out += fmt::format("            {}\n", outcome.reason);
    }
    for (const std::string& warning : explanation.warnings) {
        out += fmt::format("  warning: {}\n", warning);
    }
    return out;
}

Result<CapabilityRequest> connection_request(std::string_view target) {
    ASSIGN_OR_RETURN(HostPort where, parse_host_port(target));
    return CapabilityRequest{.kind = CapabilityKind::kNetworkAccess,
                             .tool = "bash",
                             .host = std::move(where.host),
                             .port = where.port};
}

ConnectionExplanation explain_connection(const Policy& policy, const CapabilityRequest& request) {
    return ConnectionExplanation{.preset = policy.preset(),
                                 .mode = policy.mode(),
                                 .managed_domains_only = policy.managed_domains_only(),
                                 .outcome = policy.evaluate_one(request)};
}

nlohmann::json connection_json(const ConnectionExplanation& explanation) {
    using nlohmann::json;
    const RequestOutcome& outcome = explanation.outcome;
    json out = {{"kind", capability_kind_name(outcome.request.kind)},
                {"host", outcome.request.host},
                {"port", outcome.request.port == 0 ? json(nullptr) : json(outcome.request.port)},
                {"decision", decision_name(outcome.decision)},
                {"before_mode", decision_name(outcome.before_mode)},
                {"preset", preset_name(explanation.preset)},
                {"mode", mode_name(explanation.mode)}};
    if (outcome.rule) {
        out["rule"] = outcome.rule->text;
        out["origin"] = outcome.rule->origin;
        out["layer"] = layer_name(outcome.rule->layer);
    }
    out["reason"] = outcome.reason;
    if (!explanation.managed_domains_only.empty()) {
        out["managed_domains_only"] = explanation.managed_domains_only;
    }
    return out;
}

std::string connection_text(const ConnectionExplanation& explanation) {
    const RequestOutcome& outcome = explanation.outcome;
    std::string out =
        fmt::format("network {}: {} (preset {}, mode {})\n", describe_request(outcome.request),
                    decision_name(outcome.decision), preset_name(explanation.preset),
                    mode_name(explanation.mode));
    if (outcome.rule) {
        out += fmt::format("  rule:   {} \"{}\"\n", decision_name(outcome.rule->decision),
                           outcome.rule->text);
        out += fmt::format("  source: {} ({} layer)\n", outcome.rule->origin,
                           layer_name(outcome.rule->layer));
    } else {
        out += "  rule:   none\n";
    }
    if (!outcome.rule || outcome.decision != outcome.before_mode) {
        out += fmt::format("  reason: {}\n", outcome.reason);
    }
    if (outcome.request.port == 0) {
        out +=
            "  port:   not given: a rule limited to a port counts only as an allow, as for a "
            "command before it connects\n";
    }
    if (!explanation.managed_domains_only.empty() && outcome.rule) {
        out += fmt::format(
            "  note:   only the managed settings' rules allow hosts "
            "(sandbox.network.allowManagedDomainsOnly, {})\n",
            explanation.managed_domains_only);
    }
    return out;
}

}  // namespace stockade::policy
