// stockade-bench-policy: the cost of deciding one tool call (DESIGN.md §3, steps 2-3) against
// a 500-rule policy of mixed allow/ask/deny lists, path globs, Bash prefixes and wildcards and
// capability rules, spread over three layers. The call is a bash command of three simple
// commands whose analysis adds a file read:
//   cat src/app/main.ts | grep -n TODO && npm run test -- --ci
// Target: p50 <= 20 us for analysis + evaluation. Per-iteration percentiles are reported as
// counters (p50_us, p99_us) next to Google Benchmark's mean.
//
//   build/bench/stockade-bench-policy [--benchmark_repetitions=N]
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "policy/bash_analysis.h"
#include "policy/policy.h"

namespace stockade::policy {
namespace {

constexpr const char* kCommand = "cat src/app/main.ts | grep -n TODO && npm run test -- --ci";
RequestContext context() {
    return {.workspace_root = "/work/project", .cwd = "", .home = "/home/dev"};
}

// One settings text with `count` rules of every shape, spread over allow, ask and deny.
std::string settings_text(int count, int seed) {
    std::vector<std::string> lists[3];
    for (int i = 0; i < count; ++i) {
        const int n = seed * 1000 + i;
        std::string rule;
        switch (i % 10) {
            case 0:
                rule = fmt::format("Bash(tool{} run:*)", n);
                break;
            case 1:
                rule = fmt::format("Bash(git * branch{})", n);
                break;
            case 2:
                rule = fmt::format("Bash(make target{})", n);
                break;
            case 3:
                rule = fmt::format("Read(./src/module{}/**)", n);
                break;
            case 4:
                rule = fmt::format("Read(**/*.ext{})", n);
                break;
            case 5:
                rule = fmt::format("Edit(./generated/{}/*.h)", n);
                break;
            case 6:
                rule = fmt::format("Read(.secret{})", n);
                break;
            case 7:
                rule = fmt::format("Read(~/.config/tool{}/**)", n);
                break;
            case 8:
                rule = fmt::format("network.access(host{}.example.com)", n);
                break;
            default:
                rule = fmt::format("file.write.outsideProject(//var/cache/{}/**)", n);
                break;
        }
        lists[i % 3].push_back(fmt::format("\"{}\"", rule));
    }
    auto join = [](const std::vector<std::string>& rules) {
        std::string out;
        for (const std::string& rule : rules) {
            out += out.empty() ? "" : ",\n    ";
            out += rule;
        }
        return out;
    };
    return fmt::format(
        "{{\"permissions\": {{\n  \"allow\": [{}],\n  \"ask\": [{}],\n  \"deny\": [{}]\n}}}}\n",
        join(lists[0]), join(lists[1]), join(lists[2]));
}

std::vector<SettingsSource> sources() {
    // 500 rules in all; the rules the call matches sit at the end of their lists, so every
    // list is walked in full before they are found.
    std::string user = settings_text(170, 3);
    user.insert(user.find("\"allow\": [") + 10, "\"Bash(npm run test:*)\", ");
    std::string project = settings_text(164, 2);
    project.insert(project.find("\"deny\": [") + 9, "\"Read(./.env)\", \"Bash(curl:*)\", ");
    return {
        SettingsSource{.layer = Layer::kManaged,
                       .origin = "/etc/stockade/managed.json",
                       .text = settings_text(163, 1)},
        SettingsSource{.layer = Layer::kProject,
                       .origin = "/work/project/.stockade/settings.json",
                       .text = project},
        SettingsSource{.layer = Layer::kUser,
                       .origin = "/home/dev/.config/stockade/settings.json",
                       .text = user},
    };
}

Policy load_policy() {
    auto policy = Policy::load(
        sources(), PolicyOptions{.workspace_root = "/work/project", .home = "/home/dev"});
    if (!policy) {
        fmt::print(stderr, "load: {}\n", policy.error().message);
        std::abort();
    }
    if (policy->rules().size() != 500) {
        fmt::print(stderr, "expected 500 rules, got {}\n", policy->rules().size());
        std::abort();
    }
    return std::move(policy).value();
}

// Runs `body` once per iteration and reports the median and 99th percentile of the
// per-iteration wall time.
template <class Body>
void timed(benchmark::State& state, Body body) {
    std::vector<double> samples;
    samples.reserve(1 << 16);
    for (auto _ : state) {
        const auto start = std::chrono::steady_clock::now();
        body();
        const auto end = std::chrono::steady_clock::now();
        if (samples.size() < samples.capacity()) {
            samples.push_back(std::chrono::duration<double, std::micro>(end - start).count());
        }
    }
    std::sort(samples.begin(), samples.end());
    if (!samples.empty()) {
        state.counters["p50_us"] = samples[samples.size() / 2];
        state.counters["p99_us"] = samples[samples.size() * 99 / 100];
    }
}

void evaluate_call(benchmark::State& state) {
    const Policy policy = load_policy();
    const RequestContext ctx = context();
    const std::vector<CapabilityRequest> requests = bash_requests(kCommand, ctx);
    timed(state, [&] { benchmark::DoNotOptimize(policy.evaluate(requests)); });
    state.counters["requests"] = static_cast<double>(requests.size());
}
BENCHMARK(evaluate_call);

void analyse_and_evaluate_call(benchmark::State& state) {
    const Policy policy = load_policy();
    const RequestContext ctx = context();
    timed(state, [&] {
        const std::vector<CapabilityRequest> requests = bash_requests(kCommand, ctx);
        benchmark::DoNotOptimize(policy.evaluate(requests));
    });
}
BENCHMARK(analyse_and_evaluate_call);

void analyse_only(benchmark::State& state) {
    const RequestContext ctx = context();
    timed(state, [&] { benchmark::DoNotOptimize(bash_requests(kCommand, ctx)); });
}
BENCHMARK(analyse_only);

void load_500_rules(benchmark::State& state) {
    const std::vector<SettingsSource> texts = sources();
    const PolicyOptions options{.workspace_root = "/work/project", .home = "/home/dev"};
    timed(state, [&] { benchmark::DoNotOptimize(Policy::load(texts, options)); });
}
BENCHMARK(load_500_rules)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace stockade::policy

BENCHMARK_MAIN();
