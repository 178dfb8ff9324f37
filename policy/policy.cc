#include "policy/policy.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "policy/network_preset.h"

namespace stockade::policy {
namespace {

constexpr std::array<Decision, 3> kEvaluationOrder = {Decision::kDeny, Decision::kAsk,
                                                      Decision::kAllow};

size_t list_index(Decision decision) {
    return static_cast<size_t>(decision);
}

size_t kind_index(CapabilityKind kind) {
    return static_cast<size_t>(kind);
}

bool has_path(CapabilityKind kind) {
    return kind == CapabilityKind::kFileRead || kind == CapabilityKind::kFileWrite ||
           kind == CapabilityKind::kFileWriteOutsideProject;
}

// The capability every call of a tool needs, and whether a rule's subject can ever match a
// call of that tool.
std::optional<CapabilityKind> primary_kind(std::string_view tool) {
    if (tool == "read" || tool == "grep" || tool == "glob") {
        return CapabilityKind::kFileRead;
    }
    if (tool == "write" || tool == "edit") {
        return CapabilityKind::kFileWrite;
    }
    if (tool == "bash" || tool == "process") {
        return CapabilityKind::kProcessExecute;
    }
    return std::nullopt;
}

bool subject_reaches(Subject subject, std::string_view tool) {
    switch (subject) {
        case Subject::kRead:
            return tool == "read" || tool == "grep" || tool == "glob";
        case Subject::kGrep:
            return tool == "grep";
        case Subject::kGlob:
            return tool == "glob";
        case Subject::kWrite:
        case Subject::kEdit:
            return tool == "write" || tool == "edit";
        case Subject::kBash:
            return tool == "bash";
        case Subject::kProcess:
            return tool == "process";
        case Subject::kProcessExecute:
            return tool == "bash" || tool == "process";
        case Subject::kNetworkAccess:
        case Subject::kGitModify:
        case Subject::kFileWriteOutsideProject:
            return false;
    }
    return false;
}

// A whole-tool deny of `subject` denies every call of `tool`. process.execute does not hide
// the process tool: its list, read and stop actions execute nothing.
bool whole_deny_hides(Subject subject, std::string_view tool) {
    if (subject == Subject::kProcessExecute) {
        return tool == "bash";
    }
    return subject_reaches(subject, tool);
}

}  // namespace

Result<Policy> Policy::load(std::span<const SettingsSource> sources, const PolicyOptions& options) {
    if (!options.workspace_root.starts_with('/')) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("load policy: the workspace root \"{}\" is not an absolute path",
                                 options.workspace_root)};
    }
    Policy policy;
    policy.mode_ = options.mode;
    const std::string workspace = normalise_path(options.workspace_root, "/");
    struct LayerPreset {
        Preset preset;
        std::string origin;
    };
    std::array<std::optional<LayerPreset>, kLayerCount> layer_presets;
    std::array<std::vector<SandboxSettings>, kLayerCount> collected;
    for (const SettingsSource& source : sources) {
        const RuleAnchors anchors{.workspace_root = workspace,
                                  .home = options.home,
                                  .settings_dir = settings_base_dir(source, workspace)};
        ASSIGN_OR_RETURN(Settings settings, parse_settings(source, anchors));
        for (Rule& rule : settings.rules) {
            policy.rules_.push_back(std::move(rule));
        }
        for (std::string& warning : settings.warnings) {
            policy.warnings_.push_back(std::move(warning));
        }
        collected[static_cast<size_t>(source.layer)].push_back(std::move(settings.sandbox));
        auto& slot = layer_presets[static_cast<size_t>(source.layer)];
        if (settings.preset && !slot) {
            slot = LayerPreset{*settings.preset, settings.preset_origin};
        }
        if (settings.managed_domains_only && policy.managed_domains_only_.empty()) {
            policy.managed_domains_only_ = settings.managed_domains_only_origin;
        }
    }

    size_t preset_rules = 0;
    for (const std::string& name : options.allow_presets) {
        const auto entries = network_preset(name);
        if (!entries) {
            std::string known;
            for (std::string_view n : network_preset_names()) {
                known += known.empty() ? std::string(n) : ", " + std::string(n);
            }
            return Error{Errc::kInvalidArgument,
                         fmt::format("no network preset \"{}\" (known: {})", name, known)};
        }
        for (std::string_view entry : *entries) {
            ASSIGN_OR_RETURN(Rule rule, Rule::network_access(entry, Decision::kAllow));
            rule.layer = Layer::kCommandLine;
            rule.origin = fmt::format("preset {}", name);
            policy.rules_.push_back(std::move(rule));
            ++preset_rules;
        }
    }

    // allowManagedDomainsOnly: only the managed layer may let a host through. Its allow and ask
    // network rules stay; those of every other layer go (an ask is a way to allow), with a
    // warning for each (for a preset, one).
    if (!policy.managed_domains_only_.empty()) {
        const size_t first_preset_rule = policy.rules_.size() - preset_rules;
        std::vector<Rule> kept;
        kept.reserve(policy.rules_.size());
        std::vector<std::string> presets_warned;
        for (size_t i = 0; i < policy.rules_.size(); ++i) {
            Rule& rule = policy.rules_[i];
            if (rule.subject() != Subject::kNetworkAccess || rule.decision() == Decision::kDeny ||
                rule.layer == Layer::kManaged) {
                kept.push_back(std::move(rule));
                continue;
            }
            const bool from_preset = i >= first_preset_rule;
            if (from_preset && std::find(presets_warned.begin(), presets_warned.end(),
                                         rule.origin) != presets_warned.end()) {
                continue;
            }
            if (from_preset) {
                presets_warned.push_back(rule.origin);
            }
            policy.warnings_.push_back(fmt::format(
                "{}: rule \"{}\"{} ignored: the managed settings allow only their own hosts "
                "(sandbox.network.allowManagedDomainsOnly, {})",
                rule.origin, rule.text(), from_preset ? " and the rest of the preset" : "",
                policy.managed_domains_only_));
        }
        policy.rules_ = std::move(kept);
    }

    for (size_t layer = 0; layer < kLayerCount; ++layer) {
        const bool project = static_cast<Layer>(layer) == Layer::kProject;
        for (SandboxSettings& one : collected[layer]) {
            auto take = [&](std::vector<SandboxEntry>& from, std::vector<SandboxEntry>& to,
                            bool grants) {
                for (SandboxEntry& e : from) {
                    if (project && grants) {
                        policy.warnings_.push_back(
                            fmt::format("{}: a project settings file cannot mount host paths, set "
                                        "variables or pin names in the sandbox (it comes with the "
                                        "repository); \"{}\" ignored",
                                        e.origin, e.value));
                        continue;
                    }
                    to.push_back(std::move(e));
                }
            };
            take(one.allow_read, policy.sandbox_.allow_read, true);
            take(one.allow_write, policy.sandbox_.allow_write, true);
            take(one.env, policy.sandbox_.env, true);
            take(one.resolve, policy.sandbox_.resolve, true);
            take(one.deny_read, policy.sandbox_.deny_read, false);
            take(one.deny_write, policy.sandbox_.deny_write, false);
        }
    }

    if (options.preset) {
        policy.preset_ = *options.preset;
    } else {
        for (size_t layer = 0; layer < kLayerCount; ++layer) {
            const auto& slot = layer_presets[layer];
            if (!slot) {
                continue;
            }
            if (static_cast<Layer>(layer) == Layer::kProject &&
                slot->preset > Preset::kWorkspaceWrite) {
                policy.warnings_.push_back(fmt::format(
                    "{}: a project settings file cannot choose the {} preset (it comes with "
                    "the repository); ignored",
                    slot->origin, preset_name(slot->preset)));
                continue;
            }
            policy.preset_ = slot->preset;
            break;
        }
    }

    // Deny, ask, allow; within each, higher layers first; within a layer, load order.
    std::stable_sort(policy.rules_.begin(), policy.rules_.end(), [](const Rule& a, const Rule& b) {
        if (a.decision() != b.decision()) {
            return a.decision() > b.decision();
        }
        return a.layer < b.layer;
    });
    for (size_t i = 0; i < policy.rules_.size(); ++i) {
        const Rule& rule = policy.rules_[i];
        for (size_t kind = 0; kind < kCapabilityKindCount; ++kind) {
            if (rule.covers(static_cast<CapabilityKind>(kind))) {
                policy.index_[list_index(rule.decision())][kind].push_back(
                    static_cast<uint32_t>(i));
            }
        }
    }
    return policy;
}

RequestOutcome Policy::evaluate_one(const CapabilityRequest& request) const {
    std::optional<PathView> path;
    if (has_path(request.kind)) {
        path.emplace(request.path);
    }
    RequestOutcome out{.request = request};
    const Rule* matched = nullptr;
    for (Decision list : kEvaluationOrder) {
        for (uint32_t i : index_[list_index(list)][kind_index(request.kind)]) {
            if (rules_[i].matches(request, path ? &*path : nullptr)) {
                matched = &rules_[i];
                break;
            }
        }
        if (matched != nullptr) {
            break;
        }
    }

    const ModeTraits traits = mode_traits(mode_);
    if (matched != nullptr) {
        out.before_mode = matched->decision();
        out.rule = matched->ref();
        out.reason = fmt::format("matched {} rule \"{}\" ({})", decision_name(matched->decision()),
                                 matched->text(), matched->origin);
    } else if (request.kind == CapabilityKind::kNetworkAccess && !managed_domains_only_.empty()) {
        out.before_mode = Decision::kDeny;
        out.reason = fmt::format(
            "no rule matched; the managed settings allow only the hosts they list "
            "(sandbox.network.allowManagedDomainsOnly, {})",
            managed_domains_only_);
    } else if (request.kind == CapabilityKind::kNetworkAccess && traits.network_default_deny) {
        out.before_mode = Decision::kDeny;
        out.reason = fmt::format("no rule matched; network access is denied by default in {} mode",
                                 mode_name(mode_));
    } else {
        out.before_mode = preset_default(preset_, request);
        out.reason = fmt::format("no rule matched; the {} preset's default for {}{} is {}",
                                 preset_name(preset_), capability_kind_name(request.kind),
                                 request.opaque ? " (a command that could not be parsed)" : "",
                                 decision_name(out.before_mode));
    }
    out.decision = out.before_mode;
    if (out.decision == Decision::kAsk && traits.ask_is_deny) {
        out.decision = Decision::kDeny;
        out.reason +=
            fmt::format("; an ask is a deny in {} mode (nobody can be prompted)", mode_name(mode_));
    }
    return out;
}

bool Policy::has_file_rules() const {
    for (const auto& lists : index_) {
        for (CapabilityKind kind : {CapabilityKind::kFileRead, CapabilityKind::kFileWrite}) {
            if (!lists[kind_index(kind)].empty()) {
                return true;
            }
        }
    }
    return false;
}

CallDecision Policy::evaluate(std::span<const CapabilityRequest> requests) const {
    CallDecision out;
    out.outcomes.reserve(requests.size());
    for (const CapabilityRequest& request : requests) {
        out.outcomes.push_back(evaluate_one(request));
        const Decision decision = out.outcomes.back().decision;
        if (!out.deciding || decision > out.decision) {
            out.decision = decision;
            out.deciding = out.outcomes.size() - 1;
        }
    }
    return out;
}

ToolVisibility Policy::visibility(std::string_view tool) const {
    const std::optional<CapabilityKind> kind = primary_kind(tool);
    if (!kind) {
        return {};
    }
    for (const Rule& rule : rules_) {
        if (rule.decision() == Decision::kDeny && rule.whole() &&
            whole_deny_hides(rule.subject(), tool)) {
            return {.hidden = true,
                    .reason = fmt::format("denied as a whole by rule \"{}\" ({})", rule.text(),
                                          rule.origin)};
        }
    }
    const ModeTraits traits = mode_traits(mode_);
    Decision fallback = preset_default(preset_, CapabilityRequest{.kind = *kind});
    if (fallback == Decision::kAsk && traits.ask_is_deny) {
        fallback = Decision::kDeny;
    }
    if (fallback != Decision::kDeny) {
        return {};
    }
    for (const Rule& rule : rules_) {
        const bool lets_through = rule.decision() == Decision::kAllow ||
                                  (rule.decision() == Decision::kAsk && !traits.ask_is_deny);
        if (lets_through && rule.covers(*kind) && subject_reaches(rule.subject(), tool)) {
            return {};
        }
    }
    return {
        .hidden = true,
        .reason = fmt::format("the {} preset denies {} in {} mode and no rule allows it",
                              preset_name(preset_), capability_kind_name(*kind), mode_name(mode_))};
}

}  // namespace stockade::policy
