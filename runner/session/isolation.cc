#include "runner/session/isolation.h"

namespace stockade::runner {

Result<Resolved> resolve_isolation(sandbox::Isolation requested,
                                   const sandbox::HostFeatures& features) {
    ASSIGN_OR_RETURN(sandbox::Isolation level, sandbox::choose_isolation(requested, features));
    return Resolved{.level = level,
                    .cgroups = features.cgroups,
                    .shortfall = requested == sandbox::Isolation::kAuto
                                     ? sandbox::auto_shortfall(level, features)
                                     : std::string()};
}

Result<Resolved> resolve_isolation(sandbox::Isolation requested) {
    if (requested == sandbox::Isolation::kNone) {
        return Resolved{.level = sandbox::Isolation::kNone};
    }
    return resolve_isolation(requested, host_features());
}

Result<Resolved> resolve_isolation_without_children(sandbox::Isolation requested) {
    if (requested == sandbox::Isolation::kNone) {
        return Resolved{.level = sandbox::Isolation::kNone};
    }
    return resolve_isolation(requested, sandbox::probe_host_features_without_children());
}

const sandbox::HostFeatures& host_features() {
    static const sandbox::HostFeatures features = sandbox::probe_host_features();
    return features;
}

}  // namespace stockade::runner
