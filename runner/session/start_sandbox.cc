#include "runner/session/start_sandbox.h"

#include <utility>

#include <fmt/format.h>

#include "common/log.h"
#include "runner/session/isolation.h"

namespace stockade::runner {

using sandbox::Isolation;

Result<StartedSandbox> start_sandbox(const SandboxConfig& config, const CallerContext& caller,
                                     const StartOptions& options) {
    auto log = log::get("runner");
    auto fail = [&](StartStage at, Error error) -> Error {
        if (options.failed_at != nullptr) {
            *options.failed_at = at;
        }
        return error;
    };
    // 1. The level, first without the probes that cost a child process.
    auto resolved = resolve_isolation_without_children(config.isolation);
    bool probed = false;
    if (!resolved) {
        resolved = resolve_isolation(config.isolation);
        probed = true;
    }
    if (!resolved) {
        return fail(StartStage::kIsolation, std::move(resolved).error());
    }
    for (;;) {
        // An image of the store is a root of its own: without a mount namespace there is only
        // the host's, and falling back to it silently would run on the wrong system.
        if (config.image.stored() && resolved->level != Isolation::kFull &&
            resolved->level != Isolation::kNamespaces) {
            return fail(
                StartStage::kIsolation,
                Error{Errc::kUnavailable,
                      fmt::format("--image {} needs a mount namespace (isolation full or "
                                  "namespaces), and this sandbox gets {}: {}",
                                  config.image.name, sandbox::isolation_name(resolved->level),
                                  resolved->shortfall.empty() ? "use --isolation full or namespaces"
                                                              : resolved->shortfall)});
        }
        // --package-config's copies are files of the sandbox's own root, which only a mount
        // namespace gives; pointing the tools at the host's originals would hand over the
        // credentials the copies leave out.
        if (!config.files.empty() && resolved->level != Isolation::kFull &&
            resolved->level != Isolation::kNamespaces) {
            return fail(StartStage::kIsolation,
                        Error{Errc::kUnavailable,
                              fmt::format("--package-config needs a mount namespace (isolation "
                                          "full or namespaces), and this sandbox gets {}",
                                          sandbox::isolation_name(resolved->level))});
        }
        // 2. The spec.
        auto built = make_sandbox_spec(config, caller, resolved->level);
        if (!built) {
            return fail(StartStage::kConfigure, std::move(built).error());
        }
        sandbox::SandboxSpec spec = std::move(built).value();
        // 3. A private /tmp where there is no mount namespace to give one.
        std::unique_ptr<PrivateTmp> private_tmp;
        if (spec.isolation == Isolation::kLandlock) {
            private_tmp = std::make_unique<PrivateTmp>(options.label);
            if (auto applied = private_tmp->apply(spec); !applied) {
                return fail(StartStage::kSetup, std::move(applied).error());
            }
        }
        // 4. The launch; probed for real once if it failed before the command.
        if (options.before_launch) {
            options.before_launch(resolved->level, resolved->shortfall);
        }
        sandbox::LaunchStage launch_stage = sandbox::LaunchStage::kSetup;
        auto box = sandbox::launch(spec, resolved->cgroups, &launch_stage);
        if (box) {
            return StartedSandbox{.private_tmp = std::move(private_tmp),
                                  .box = std::move(box).value(),
                                  .spec = std::move(spec),
                                  .shortfall = resolved->shortfall};
        }
        if (launch_stage == sandbox::LaunchStage::kExec) {
            return fail(StartStage::kExec, std::move(box).error());
        }
        if (!probed) {
            probed = true;
            auto checked = resolve_isolation(config.isolation);
            if (!checked) {
                return fail(StartStage::kIsolation, std::move(checked).error());
            }
            if (checked->level != resolved->level) {
                SPDLOG_LOGGER_DEBUG(log, "launch failed isolation={} why=\"{}\" probed={}",
                                    sandbox::isolation_name(resolved->level), box.error().message,
                                    sandbox::isolation_name(checked->level));
                resolved = std::move(checked);
                continue;
            }
        }
        return fail(StartStage::kSetup, std::move(box).error());
    }
}

}  // namespace stockade::runner
