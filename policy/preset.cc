#include "policy/preset.h"

namespace stockade::policy {

const char* preset_name(Preset preset) noexcept {
    switch (preset) {
        case Preset::kReadOnly:
            return "read-only";
        case Preset::kWorkspaceWrite:
            return "workspace-write";
        case Preset::kDangerFullAccess:
            return "danger-full-access";
    }
    return "unknown";
}

std::optional<Preset> parse_preset(std::string_view name) {
    for (Preset preset : {Preset::kReadOnly, Preset::kWorkspaceWrite, Preset::kDangerFullAccess}) {
        if (name == preset_name(preset)) {
            return preset;
        }
    }
    return std::nullopt;
}

const char* mode_name(Mode mode) noexcept {
    switch (mode) {
        case Mode::kLocal:
            return "local";
        case Mode::kCi:
            return "ci";
        case Mode::kHosted:
            return "hosted";
    }
    return "unknown";
}

std::optional<Mode> parse_mode(std::string_view name) {
    for (Mode mode : {Mode::kLocal, Mode::kCi, Mode::kHosted}) {
        if (name == mode_name(mode)) {
            return mode;
        }
    }
    return std::nullopt;
}

Decision preset_default(Preset preset, const CapabilityRequest& request) {
    using enum Decision;
    if (preset == Preset::kDangerFullAccess) {
        return kAllow;
    }
    const bool read_only = preset == Preset::kReadOnly;
    switch (request.kind) {
        case CapabilityKind::kFileRead:
        case CapabilityKind::kTool:
            return kAllow;
        case CapabilityKind::kFileWrite:
            return read_only ? kDeny : kAllow;
        case CapabilityKind::kFileWriteOutsideProject:
        case CapabilityKind::kNetworkAccess:
        case CapabilityKind::kGitModify:
            return read_only ? kDeny : kAsk;
        case CapabilityKind::kProcessExecute:
            // A command we could not parse may hide anything: someone looks at it first.
            return read_only || request.opaque ? kAsk : kAllow;
    }
    return kDeny;
}

ModeTraits mode_traits(Mode mode) {
    switch (mode) {
        case Mode::kLocal:
            return {};
        case Mode::kCi:
            return {.ask_is_deny = true, .network_default_deny = true, .quotas = false};
        case Mode::kHosted:
            return {.ask_is_deny = true, .network_default_deny = true, .quotas = true};
    }
    return {};
}

}  // namespace stockade::policy
