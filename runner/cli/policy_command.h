// `stockade policy check FILE...`, `stockade policy explain [flags] TOOL 'JSON'` and
// `stockade policy explain [flags] network HOST[:PORT]`.
#pragma once

#include <string>
#include <vector>

#include "runner/cli/sandbox_flags.h"

namespace stockade::runner {
struct PolicyCheckOptions {
    std::vector<std::string> files{};
    std::string workspace{};  // anchors "./x" rules; default: the current directory
};
// Validates settings files: every problem of every file, then exit 0 (all valid; warnings
// allowed) or 1.
int policy_check_command(const PolicyCheckOptions& options);

struct PolicyExplainOptions {
    PolicyFlags policy{};
    std::string workspace{};
    std::string tool{};       // a tool's name, or "network"
    std::string arguments{};  // JSON object text; for "network", HOST[:PORT]
    bool json = false;
};
// Prints the call's capability requests, how each was decided (rule and origin, or the
// default), the decision and the destructive warnings, then a warning for each Read deny rule
// whose files git tracks in the workspace (JSON: "git_tracked_denials"); for "network", the
// decision for one connection, its rule, origin and layer. Exit 0 allow, 1 deny, 3 ask, 2
// usage.
int policy_explain_command(const PolicyExplainOptions& options);

}  // namespace stockade::runner
