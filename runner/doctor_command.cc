#include "runner/doctor_command.h"

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "images/image.h"
#include "runner/host_environment.h"
#include "runner/isolation.h"
#include "runner/run_command.h"
#include "sandbox/features.h"

namespace stockade::runner {

int doctor_command() {
    using sandbox::Isolation;
    const sandbox::HostFeatures& features = host_features();
    size_t width = 0;
    auto checks = features.checks();
    for (const auto& check : checks) {
        width = std::max(width, check.name.size());
    }
    for (const auto& check : checks) {
        fmt::print("{:<4} {:<{}}  {}\n", check.ok ? "ok" : "no", check.name, width, check.detail);
    }
    // The same resolution run and every session worker make.
    auto resolved = resolve_isolation(Isolation::kAuto, features);
    if (!resolved) {
        fmt::print("isolation: none available — {}\n", resolved.error().message);
        return 1;
    }
    const Isolation level = resolved->level;
    fmt::print("isolation: --isolation auto chooses \"{}\"\n", sandbox::isolation_name(level));
    if (!resolved->shortfall.empty()) {
        fmt::print("isolation: not stronger because {}\n", resolved->shortfall);
    }
    fmt::print("default limits: {}\n", describe_limits(SandboxLimits{}, current_caller()));
    // What a sandbox on this directory (the default workspace) would not see of your PATH.
    std::error_code ec;
    std::vector<std::string> visible = images::image_readable_paths("host");
    visible.push_back(std::filesystem::current_path(ec).string());
    const char* path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe): read once
    const std::string hint =
        hidden_path_dirs_hint(hidden_path_dirs(path == nullptr ? "" : path, visible));
    fmt::print("{}",
               hint.empty() ? "toolchains: every directory of your PATH is in the image\n" : hint);
    return level == Isolation::kFull || level == Isolation::kNamespaces ? 0 : 1;
}

}  // namespace stockade::runner
