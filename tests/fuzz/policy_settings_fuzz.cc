// Fuzzes the settings parser and the policy built from it. Invariants: no crash and no hang on
// any text; parsing is deterministic; an error cites the origin; every rule cites
// "origin:line" with a line inside the text; and the loaded policy decides a fixed set of
// requests (and tool visibility) without crashing.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "policy/policy.h"
#include "policy/settings.h"

namespace {

using namespace stockade::policy;  // NOLINT(google-build-using-namespace): a fuzz target

constexpr std::string_view kOrigin = "/ws/.stockade/settings.json";

void check(bool ok) {
    if (!ok) {
        std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    const SettingsSource source{
        .layer = Layer::kProject, .origin = std::string(kOrigin), .text = text};
    const RuleAnchors anchors{.workspace_root = "/ws", .home = "/home/u", .settings_dir = "/ws"};
    auto first = parse_settings(source, anchors);
    auto second = parse_settings(source, anchors);
    check(first.has_value() == second.has_value());
    if (!first) {
        check(first.error().message.starts_with(std::string(kOrigin) + ":"));
        check(first.error().message == second.error().message);
        return 0;
    }
    size_t lines = 1;
    for (char c : text) {
        lines += c == '\n' ? 1 : 0;
    }
    check(first->rules.size() == second->rules.size());
    for (const Rule& rule : first->rules) {
        check(rule.origin.starts_with(std::string(kOrigin) + ":"));
        const std::string line = rule.origin.substr(kOrigin.size() + 1);
        check(!line.empty());
        const unsigned long number = std::strtoul(line.c_str(), nullptr, 10);
        check(number >= 1 && number <= lines);
        check(!rule.text().empty());
    }

    const std::vector<SettingsSource> sources = {source};
    auto policy = Policy::load(sources, PolicyOptions{.workspace_root = "/ws", .home = "/home/u"});
    check(policy.has_value());
    const std::vector<CapabilityRequest> requests = {
        {.kind = CapabilityKind::kFileRead, .tool = "read", .path = "/ws/.env"},
        {.kind = CapabilityKind::kFileRead, .tool = "grep", .path = "/ws", .directory = true},
        {.kind = CapabilityKind::kFileWrite, .tool = "edit", .path = "/ws/src/a.cc"},
        {.kind = CapabilityKind::kFileWriteOutsideProject, .tool = "bash", .path = "/etc/x"},
        {.kind = CapabilityKind::kProcessExecute,
         .tool = "bash",
         .command = "npm test",
         .full_command = "CI=1 npm test"},
        {.kind = CapabilityKind::kProcessExecute,
         .tool = "process",
         .command = "npm run 'x",
         .full_command = "npm run 'x",
         .opaque = true},
        {.kind = CapabilityKind::kNetworkAccess, .tool = "bash", .host = "api.github.com"},
        {.kind = CapabilityKind::kGitModify, .tool = "bash", .subcommand = "push"},
        {.kind = CapabilityKind::kTool, .tool = "process", .command = "list"},
    };
    const CallDecision decision = policy->evaluate(requests);
    check(decision.outcomes.size() == requests.size());
    check(decision.deciding.has_value() && *decision.deciding < requests.size());
    for (const RequestOutcome& outcome : decision.outcomes) {
        check(outcome.decision <= decision.decision);
        check(!outcome.reason.empty());
    }
    for (const char* tool : {"read", "write", "edit", "grep", "glob", "bash", "process"}) {
        const ToolVisibility visibility = policy->visibility(tool);
        check(visibility.hidden == !visibility.reason.empty());
    }
    return 0;
}
