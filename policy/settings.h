// Claude Code settings files, accepted as they are:
//   {"permissions": {"allow": ["Bash(npm run test:*)"], "ask": [...], "deny": ["Read(./.env)"],
//                    "defaultMode": "acceptEdits"},
//    "sandbox": {"filesystem": {"allowRead": ["~/.cargo"], "allowWrite": ["~/.cache/pip"],
//                               "denyRead": ["./secrets"], "denyWrite": ["./vendor"]},
//                "network": {"allowedDomains": ["pypi.org", "*.npmjs.org:443"],
//                            "deniedDomains": ["evil.example"]},
//                "env": ["CARGO_HOME", "MODE=fast"]}}
// "permissions" and "sandbox" mean something to us; other keys (env, hooks, model, ...) are
// reported as warnings and ignored, as are rules for tools we do not have. In
// sandbox.filesystem, allowRead/allowWrite mount host paths into the sandbox (read-only /
// read-write, like --ro/--rw), denyRead/denyWrite hide or freeze paths (like Read/Edit deny
// rules); their paths are anchored as in Claude Code: "//x" absolute, "~/x" the home, "/x" the
// settings directory, "x" and "./x" the workspace. "sandbox.env" (ours) passes or sets
// variables, like --env. sandbox.network.allowedDomains/deniedDomains are network.access
// allow/deny rules of the file's layer; allowManagedDomainsOnly (in the managed file) makes the
// managed layer's the only network allow rules. A malformed file is an error
// that names the origin, the line and column, and what is wrong. The caller reads the file:
// this module makes no syscalls.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "policy/decision.h"
#include "policy/preset.h"
#include "policy/rule.h"

namespace stockade::policy {

struct SettingsSource {
    Layer layer = Layer::kProject;
    std::string origin{};    // a file path, or a label such as "command line": cited everywhere
    std::string text{};      // the file's contents
    std::string base_dir{};  // where "/x" rules point; empty: settings_base_dir()
};

// One path or variable of a "sandbox" block, with the layer and "origin:line" it came from.
struct SandboxEntry {
    std::string value{};  // an absolute, normalised path; or "NAME" / "NAME=VALUE" for env
    Layer layer = Layer::kProject;
    std::string origin{};
};

struct SandboxSettings {
    std::vector<SandboxEntry> allow_read{};
    std::vector<SandboxEntry> allow_write{};
    std::vector<SandboxEntry> deny_read{};
    std::vector<SandboxEntry> deny_write{};
    std::vector<SandboxEntry> env{};
    // sandbox.network.resolve (stockade's own key): "NAME[:PORT]=ADDRESS[:PORT]", as --resolve
    // pins a name for the allowlist proxy; from the operator's layers only (not a project's).
    std::vector<SandboxEntry> resolve{};
};

struct Settings {
    std::vector<Rule> rules{};  // the allow, ask and deny lists, each in file order
    SandboxSettings sandbox{};
    std::vector<std::string> warnings{};  // "origin:line: what was ignored and why"
    std::optional<Preset> preset{};       // from permissions.defaultMode
    std::string preset_origin{};          // "origin:line" of that defaultMode
    // sandbox.network.allowManagedDomainsOnly: true, in a managed file (elsewhere a warning).
    bool managed_domains_only = false;
    std::string managed_domains_only_origin{};  // "origin:line"
};

// The directory a settings file's "/x" rules are relative to: `base_dir` when set; else the
// directory holding the file, except that for "<dir>/.stockade/settings.json" (and .claude)
// it is <dir>, the directory the file configures; a source that is not a path (no leading
// "/") uses the workspace root.
std::string settings_base_dir(const SettingsSource& source, std::string_view workspace_root);

// Parses one settings text. Rules are compiled against `anchors` (settings_dir included) and
// carry the source's layer and their "origin:line".
Result<Settings> parse_settings(const SettingsSource& source, const RuleAnchors& anchors);

// The command-line layer (--allow/--ask/--deny flags) as a settings source, one rule per line.
SettingsSource command_line_source(std::span<const std::string> allow,
                                   std::span<const std::string> ask,
                                   std::span<const std::string> deny);

}  // namespace stockade::policy
