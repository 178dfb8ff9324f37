// Where a session's policy comes from (DESIGN.md §5; docs/policy.md): the settings files of
// every layer, read here (the policy module makes no syscalls), and the command line.
//   managed       /etc/stockade/settings.json ($STOCKADE_MANAGED_SETTINGS overrides the path)
//   command line  --policy FILE (repeatable; a Claude Code settings file works unchanged),
//                 --allow/--ask/--deny RULE, --allow-preset NAME (network presets)
//   project       <workspace>/.stockade/settings.json, opened beneath the workspace: a symlink
//                 out of it is refused, since the repository is not trusted
//   user          $XDG_CONFIG_HOME/stockade/settings.json, else ~/.config/stockade/settings.json
#pragma once

#include <string>
#include <vector>

#include "common/host_dir.h"
#include "common/result.h"
#include "policy/policy.h"

namespace stockade::runner {

struct PolicyFlags {
    std::vector<std::string> files{};  // --policy
    std::vector<std::string> allow{};  // --allow RULE
    std::vector<std::string> ask{};
    std::vector<std::string> deny{};
    std::string mode{};    // --mode ci|local|hosted; empty: local
    std::string preset{};  // --preset read-only|workspace-write|danger-full-access
    // --allow-preset NAME (repeatable): a network preset's allow rules (policy/network_preset.h)
    std::vector<std::string> allow_presets{};
    bool no_user_settings = false;  // --no-user-settings: ignore the user layer (tests, CI)
    // --ask-fallback: what an ask becomes when the client cannot put it to the user (local
    // mode; ci and hosted already turn every ask into a deny). "deny" (default) or "allow".
    std::string ask_fallback{};
};

// The settings sources of every layer that exists, highest first. A --policy file that does
// not exist is an error; the implicit files are optional. The project's file is opened beneath
// the workspace's descriptor.
Result<std::vector<policy::SettingsSource>> policy_sources(const PolicyFlags& flags,
                                                           const HostDir& workspace);

// Loads the policy of a session on `workspace` (its rules are anchored at its path). Warnings
// (ignored keys and rules) are returned in `warnings`.
Result<policy::Policy> load_policy(const PolicyFlags& flags, const HostDir& workspace,
                                   std::vector<std::string>& warnings);

// The home directory the policy anchors "~/x" rules on ($HOME, else the passwd entry).
std::string policy_home();

}  // namespace stockade::runner
