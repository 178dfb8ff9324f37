#include "runner/doctor_command.h"

#include <fmt/format.h>

#include "sandbox/features.h"

namespace stockade::runner {

int doctor_command() {
    using sandbox::Isolation;
    sandbox::HostFeatures features = sandbox::probe_host_features();
    size_t width = 0;
    auto checks = features.checks();
    for (const auto& check : checks) {
        width = std::max(width, check.name.size());
    }
    for (const auto& check : checks) {
        fmt::print("{:<4} {:<{}}  {}\n", check.ok ? "ok" : "no", check.name, width, check.detail);
    }
    auto level = sandbox::choose_isolation(Isolation::kAuto, features);
    if (!level) {
        fmt::print("isolation: none available — {}\n", level.error().message);
        return 1;
    }
    fmt::print("isolation: --isolation auto chooses \"{}\"\n", sandbox::isolation_name(*level));
    return *level == Isolation::kFull || *level == Isolation::kNamespaces ? 0 : 1;
}

}  // namespace stockade::runner
