#include "sandbox/spec.h"

namespace stockade::sandbox {

const char* isolation_name(Isolation level) noexcept {
    switch (level) {
        case Isolation::kAuto:
            return "auto";
        case Isolation::kFull:
            return "full";
        case Isolation::kNamespaces:
            return "namespaces";
        case Isolation::kLandlock:
            return "landlock";
        case Isolation::kNone:
            return "none";
    }
    return "unknown";
}

const char* network_name(NetworkMode mode) noexcept {
    switch (mode) {
        case NetworkMode::kNone:
            return "none";
        case NetworkMode::kHost:
            return "host";
        case NetworkMode::kAllowlist:
            return "allowlist";
    }
    return "unknown";
}

}  // namespace stockade::sandbox
