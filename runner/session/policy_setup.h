// Where a session's policy comes from (DESIGN.md §5; docs/policy.md): the settings files of
// every layer, read here (the policy module makes no syscalls), and the command line.
//   managed       /etc/stockade/settings.json ($STOCKADE_MANAGED_SETTINGS overrides the path)
//   command line  --policy FILE (repeatable; a Claude Code settings file works unchanged),
//                 --allow/--ask/--deny RULE, --allow-preset NAME (network presets)
//   project       <workspace>/.stockade/settings.json, opened beneath the workspace: a symlink
//                 out of it is refused, since the repository is not trusted
//   user          $XDG_CONFIG_HOME/stockade/settings.json, else ~/.config/stockade/settings.json
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/host_dir.h"
#include "common/result.h"
#include "policy/policy.h"
#include "policy/preset.h"

namespace stockade::runner {

// What an ask becomes when the client cannot put it to the user (local mode; ci and hosted
// already turn every ask into a deny).
enum class AskFallback { kDeny, kAllow };

// A session's policy as its operator set it, typed (the CLI's flags: runner/cli/sandbox_flags.h;
// a tenant's file and rules: runner/host/tenant_backend.h).
struct PolicyConfig {
    std::vector<std::string> files{};  // settings files (--policy; a tenant's "policy")
    std::vector<std::string> allow{};  // rules, as --allow RULE
    std::vector<std::string> ask{};
    std::vector<std::string> deny{};
    std::optional<policy::Mode> mode{};      // nullopt: local
    std::optional<policy::Preset> preset{};  // nullopt: the settings', else workspace-write
    // Network presets whose allow rules apply (policy/network_preset.h), each one known.
    std::vector<std::string> allow_presets{};
    bool no_user_settings = false;  // ignore the user layer (tests, CI)
    AskFallback ask_fallback = AskFallback::kDeny;
};

// The settings sources of every layer that exists, highest first. A --policy file that does
// not exist is an error; the implicit files are optional. The project's file is opened beneath
// the workspace's descriptor.
Result<std::vector<policy::SettingsSource>> policy_sources(const PolicyConfig& config,
                                                           const HostDir& workspace);

// Loads the policy of a session on `workspace` (its rules are anchored at its path). Warnings
// (ignored keys and rules) are returned in `warnings`. `policy_root` is the workspace's path as
// the policy sees it (the sandbox's view: SandboxConfig::workspace_inside); "" for its own.
Result<policy::Policy> load_policy(const PolicyConfig& config, const HostDir& workspace,
                                   std::vector<std::string>& warnings,
                                   const std::string& policy_root = "");

// The home directory the policy anchors "~/x" rules on ($HOME, else the passwd entry).
std::string policy_home();

}  // namespace stockade::runner
