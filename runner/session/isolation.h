// The one place an isolation level is resolved, for `stockade run`, every session worker of
// `stockade serve`/`call`, and `stockade doctor`: from the host's real probes
// (sandbox::probe_host_features, once per process), so that `auto` falls to the same level with
// the same reason whichever command asks.
#pragma once

#include <string>

#include "common/result.h"
#include "sandbox/cgroup.h"
#include "sandbox/features.h"
#include "sandbox/spec.h"

namespace stockade::runner {

struct Resolved {
    sandbox::Isolation level = sandbox::Isolation::kNone;
    sandbox::CgroupSupport cgroups{};  // what the probe found; the launch uses it at kFull
    // `auto` took a level below full: why the one above it is missing (the cause and the fix),
    // for a warning. Empty otherwise.
    std::string shortfall{};
};

// Pure: `requested` against `features`. A level the host cannot give (or `auto` finding none)
// fails with kUnavailable ("... Fix: ..."): exit 77 material.
Result<Resolved> resolve_isolation(sandbox::Isolation requested,
                                   const sandbox::HostFeatures& features);

// The same against this host: probes once per process (none at all for `none`).
Result<Resolved> resolve_isolation(sandbox::Isolation requested);

// The same from probe_host_features_without_children: the level to launch at first when a
// failed launch can be followed by resolve_isolation(requested) (see start_sandbox.h).
Result<Resolved> resolve_isolation_without_children(sandbox::Isolation requested);

// This host's features, probed on first use and kept for the life of the process.
const sandbox::HostFeatures& host_features();

}  // namespace stockade::runner
