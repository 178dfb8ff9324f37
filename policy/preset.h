// Presets (what happens when no rule matches, named after Codex's sandbox modes so its users
// recognise them) and modes (who answers an ask). docs/policy.md has the table:
//
//   no rule matched            read-only   workspace-write   danger-full-access
//   file.read                  allow       allow             allow
//   file.write (in project)    deny        allow             allow
//   file.write.outsideProject  deny        ask               allow
//   process.execute            ask         allow             allow
//   process.execute, opaque    ask         ask               allow
//   network.access             deny        ask               allow
//   git.modify                 deny        ask               allow
//   tool (process list/read)   allow       allow             allow
//
//   mode     an ask becomes   network with no rule   quotas
//   local    a prompt         the preset's default   off
//   ci       deny             deny                   off
//   hosted   deny             deny                   on
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "policy/capability.h"
#include "policy/decision.h"

namespace stockade::policy {

enum class Preset : uint8_t { kReadOnly, kWorkspaceWrite, kDangerFullAccess };
enum class Mode : uint8_t { kLocal, kCi, kHosted };

const char* preset_name(Preset preset) noexcept;  // "read-only", ...
std::optional<Preset> parse_preset(std::string_view name);
const char* mode_name(Mode mode) noexcept;  // "local", "ci", "hosted"
std::optional<Mode> parse_mode(std::string_view name);

// The decision for a request that no rule matched, before the mode applies.
Decision preset_default(Preset preset, const CapabilityRequest& request);

struct ModeTraits {
    bool ask_is_deny = false;           // nobody to prompt: fail closed
    bool network_default_deny = false;  // network.access with no matching rule is denied
    bool quotas = false;                // per-session quotas (hosted tenants)
};
ModeTraits mode_traits(Mode mode);

}  // namespace stockade::policy
