// The permission policy of a session: every layer's rules, a preset and a mode, compiled once.
//
// Evaluation (docs/policy.md): each request of a call is decided on its own,
//   1. the first matching deny rule  → deny
//   2. else the first matching ask   → ask
//   3. else the first matching allow → allow
//   4. else the preset's default for the request's kind (preset.h); for network.access, deny
//      when the managed settings lock the allowed hosts (allowManagedDomainsOnly)
// then the mode turns an ask into a deny when nobody can be prompted (ci, hosted). Rules are
// considered across all layers; within a list, higher layers come first (managed, command
// line, project, user), then file order, so the reported rule is the highest layer's. The
// call's decision is the strictest over its requests (deny > ask > allow).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "policy/capability.h"
#include "policy/decision.h"
#include "policy/preset.h"
#include "policy/rule.h"
#include "policy/settings.h"

namespace stockade::policy {

struct PolicyOptions {
    // --preset. Unset: the highest layer's permissions.defaultMode, else workspace-write. A
    // project file (the repository the agent works on) may choose a stricter preset but not
    // a looser one than workspace-write.
    std::optional<Preset> preset{};
    Mode mode = Mode::kLocal;
    std::string workspace_root{};  // absolute; anchors "./x" and "x" rules
    std::string home{};            // anchors "~/x" rules
    // --allow-preset: network presets (network_preset.h) whose entries become network.access
    // allow rules of the command-line layer, origin "preset NAME". An unknown name fails the
    // load.
    std::vector<std::string> allow_presets{};
};

// Whether tools/list shows a tool.
struct ToolVisibility {
    bool hidden = false;
    std::string reason{};  // why it is hidden: the rule and its origin, or the default
};

class Policy {
public:
    // Loads every source (any order; each carries its layer). The first malformed source
    // fails the load with "origin:line:col: what". Ignored keys and rules become warnings().
    static Result<Policy> load(std::span<const SettingsSource> sources,
                               const PolicyOptions& options);

    [[nodiscard]] CallDecision evaluate(std::span<const CapabilityRequest> requests) const;
    [[nodiscard]] RequestOutcome evaluate_one(const CapabilityRequest& request) const;

    // A tool is hidden when every call to it would be denied: a deny rule names the whole
    // tool (Bash, Bash(*); Read also hides grep and glob, Edit and Write hide both writers),
    // or its primary capability is denied by default and no allow (or, in local mode, ask)
    // rule could let a call through. `tool` is our name: "read", "bash", ...
    [[nodiscard]] ToolVisibility visibility(std::string_view tool) const;
    [[nodiscard]] bool hidden(std::string_view tool) const { return visibility(tool).hidden; }

    // Whether a rule of any list can match a file request: only then does it matter which file
    // a path reaches through symlinks (the default decides by kind, not by path).
    [[nodiscard]] bool has_file_rules() const;

    [[nodiscard]] Preset preset() const { return preset_; }
    [[nodiscard]] Mode mode() const { return mode_; }
    [[nodiscard]] bool quotas() const { return mode_traits(mode_).quotas; }
    // Every rule in evaluation order: deny, ask, allow lists, each highest layer first.
    [[nodiscard]] const std::vector<Rule>& rules() const { return rules_; }
    [[nodiscard]] const std::vector<std::string>& warnings() const { return warnings_; }
    // The managed settings set sandbox.network.allowManagedDomainsOnly: network.access allow and
    // ask rules of the other layers (their allowedDomains, WebFetch and network.access rules,
    // --allow-preset) were dropped at load with a warning, and a connection no rule decides is
    // denied. Deny rules of every layer still count. Empty when not locked.
    [[nodiscard]] const std::string& managed_domains_only() const { return managed_domains_only_; }
    // Every layer's "sandbox" block, in layer order (managed first). Mounts and variables from
    // the project layer are dropped at load with a warning: that file comes with the
    // repository, so it may only restrict (denyRead, denyWrite).
    [[nodiscard]] const SandboxSettings& sandbox() const { return sandbox_; }

private:
    Policy() = default;

    Preset preset_ = Preset::kWorkspaceWrite;
    Mode mode_ = Mode::kLocal;
    std::vector<Rule> rules_;
    std::vector<std::string> warnings_;
    std::string managed_domains_only_;  // "origin:line" of allowManagedDomainsOnly
    SandboxSettings sandbox_;
    // index_[decision][kind]: the rules of that list that can match that kind of request, in
    // evaluation order, so a request never looks at rules about other capabilities.
    std::array<std::array<std::vector<uint32_t>, kCapabilityKindCount>, 3> index_{};
};

}  // namespace stockade::policy
