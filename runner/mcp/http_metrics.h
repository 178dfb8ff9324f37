// What the HTTP server counts for /metrics (docs/http.md), in Prometheus's text format 0.0.4:
// requests by method and status, tool calls by tenant, tool and outcome with their latency,
// quota refusals, sessions opened; and, given at render time, the gauges of open sessions and
// running calls and what the backend measures of each tenant (TenantUsage). Thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "runner/mcp/http_server.h"

namespace stockade::mcp {

// `value` escaped for a label value: backslash, double quote and newline.
std::string prometheus_label(std::string_view value);

// The outcome of a tools/call for the metrics, from its response message: "ok", "tool_error"
// (isError), "error" (a JSON-RPC error) or "cancelled" (no response).
std::string call_outcome(std::string_view message);

// Whether `message`, a JSON-RPC message we dumped (keys sorted), is an error response.
bool is_error_response(std::string_view message);

// The gauges of one tenant at render time.
struct TenantGauges {
    std::size_t sessions = 0;  // open
    std::size_t calls = 0;     // tools/call running or waiting
};

class Metrics {
public:
    // The upper bounds (seconds) of the tool call latency histogram's buckets.
    static constexpr std::array<double, 13> kLatencyBuckets = {
        0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};

    void request(std::string_view method, unsigned status);
    void call(const std::string& tenant, const std::string& tool, const std::string& outcome,
              double seconds);
    void refusal(const std::string& tenant, std::string_view kind);
    void session_opened(const std::string& tenant, bool ok);

    // The whole exposition. `gauges` by tenant name; `usage`: the backend's; `draining`: the
    // server drains.
    [[nodiscard]] std::string render(const std::map<std::string, TenantGauges>& gauges,
                                     const std::vector<TenantUsage>& usage, bool draining) const;

private:
    struct Histogram {
        std::array<std::uint64_t, kLatencyBuckets.size()> buckets{};
        std::uint64_t count = 0;
        double sum = 0;
    };
    mutable std::mutex mu_;
    std::map<std::pair<std::string, unsigned>, std::uint64_t> requests_;
    std::map<std::tuple<std::string, std::string, std::string>, std::uint64_t> calls_;
    std::map<std::string, Histogram> latency_;
    std::map<std::pair<std::string, std::string>, std::uint64_t> refusals_;
    std::map<std::pair<std::string, bool>, std::uint64_t> opened_;
};

}  // namespace stockade::mcp
