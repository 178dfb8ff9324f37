// Claude Code settings files, accepted as they are:
//   {"permissions": {"allow": ["Bash(npm run test:*)"], "ask": [...], "deny": ["Read(./.env)"],
//                    "defaultMode": "acceptEdits"}}
// Only "permissions" means something to us; other keys (env, hooks, model, ...) are reported
// as warnings and ignored, as are rules for tools we do not have. A malformed file is an error
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

struct Settings {
    std::vector<Rule> rules{};            // the allow, ask and deny lists, each in file order
    std::vector<std::string> warnings{};  // "origin:line: what was ignored and why"
    std::optional<Preset> preset{};       // from permissions.defaultMode
    std::string preset_origin{};          // "origin:line" of that defaultMode
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
