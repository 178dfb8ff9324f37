#include "runner/mcp/http_metrics.h"

#include <functional>

#include <fmt/format.h>

namespace stockade::mcp {

namespace {

// The backend's measures of each tenant.
void render_usage(const std::vector<TenantUsage>& usage, std::string& out) {
    struct Family {
        const char* name;
        const char* type;
        const char* help;
        std::function<std::string(const TenantUsage&)> value;
    };
    const Family families[] = {
        {"stockade_worker_restarts_total", "counter",
         "Session workers started again after a crash, a kill or a hung call.",
         [](const TenantUsage& u) {
             return std::to_string(u.worker_restarts);
         }},
        {"stockade_processes", "gauge", "Commands running in the tenant's sandboxes.",
         [](const TenantUsage& u) {
             return std::to_string(u.processes);
         }},
        {"stockade_output_bytes_total", "counter",
         "Tool output written to disk: spilled results and process logs.",
         [](const TenantUsage& u) {
             return std::to_string(u.output_bytes);
         }},
        {"stockade_disk_bytes", "gauge",
         "Tool output the tenant's sessions hold on disk, ended sessions' included.",
         [](const TenantUsage& u) {
             return std::to_string(u.disk_bytes);
         }},
        {"stockade_disk_limit_bytes", "gauge", "The tenant's disk quota for tool output.",
         [](const TenantUsage& u) {
             return std::to_string(u.disk_limit_bytes);
         }},
    };
    for (const Family& family : families) {
        out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", family.name, family.help, family.name,
                           family.type);
        for (const TenantUsage& u : usage) {
            out += fmt::format("{}{{tenant=\"{}\"}} {}\n", family.name, prometheus_label(u.tenant),
                               family.value(u));
        }
    }
    out +=
        "# HELP stockade_policy_decisions_total The policy's decisions on tool calls.\n"
        "# TYPE stockade_policy_decisions_total counter\n";
    for (const TenantUsage& u : usage) {
        for (const auto& [decision, n] : {std::pair{"allow", u.allowed}, std::pair{"ask", u.asked},
                                          std::pair{"deny", u.denied}}) {
            out +=
                fmt::format("stockade_policy_decisions_total{{tenant=\"{}\",decision=\"{}\"}} {}\n",
                            prometheus_label(u.tenant), decision, n);
        }
    }
}

}  // namespace

std::string prometheus_label(std::string_view value) {
    std::string out;
    for (char c : value) {
        if (c == '\\' || c == '"') {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else {
            out += c;
        }
    }
    return out;
}

// Our messages are dumped with their keys sorted, so an error response, and only one, begins
// with {"error": (a result begins with {"id":).
bool is_error_response(std::string_view message) {
    return message.starts_with(R"({"error":)");
}

// The result is not parsed: a quote inside a JSON string is escaped, so "isError":true with bare
// quotes is a key, the result's own (our results carry no other).
std::string call_outcome(std::string_view message) {
    if (message.empty()) {
        return "cancelled";
    }
    if (is_error_response(message)) {
        return "error";
    }
    return message.find(R"("isError":true)") != std::string_view::npos ? "tool_error" : "ok";
}

void Metrics::request(std::string_view method, unsigned status) {
    std::lock_guard lock(mu_);
    ++requests_[{std::string(method), status}];
}
void Metrics::call(const std::string& tenant, const std::string& tool, const std::string& outcome,
                   double seconds) {
    std::lock_guard lock(mu_);
    ++calls_[{tenant, tool, outcome}];
    auto& histogram = latency_[tool];
    for (std::size_t i = 0; i < kLatencyBuckets.size(); ++i) {
        if (seconds <= kLatencyBuckets[i]) {
            ++histogram.buckets[i];
        }
    }
    ++histogram.count;
    histogram.sum += seconds;
}
void Metrics::refusal(const std::string& tenant, std::string_view kind) {
    std::lock_guard lock(mu_);
    ++refusals_[{tenant, std::string(kind)}];
}
void Metrics::session_opened(const std::string& tenant, bool ok) {
    std::lock_guard lock(mu_);
    ++opened_[{tenant, ok}];
}

std::string Metrics::render(const std::map<std::string, TenantGauges>& gauges,
                            const std::vector<TenantUsage>& usage, bool draining) const {
    std::lock_guard lock(mu_);
    std::string out;
    out +=
        "# HELP stockade_http_requests_total HTTP requests by method and status.\n"
        "# TYPE stockade_http_requests_total counter\n";
    for (const auto& [key, n] : requests_) {
        out += fmt::format("stockade_http_requests_total{{method=\"{}\",status=\"{}\"}} {}\n",
                           prometheus_label(key.first), key.second, n);
    }
    out +=
        "# HELP stockade_tool_calls_total Tool calls by tenant, tool and outcome.\n"
        "# TYPE stockade_tool_calls_total counter\n";
    for (const auto& [key, n] : calls_) {
        out += fmt::format(
            "stockade_tool_calls_total{{tenant=\"{}\",tool=\"{}\",outcome=\"{}\"}} {}\n",
            prometheus_label(std::get<0>(key)), prometheus_label(std::get<1>(key)),
            prometheus_label(std::get<2>(key)), n);
    }
    out +=
        "# HELP stockade_tool_call_seconds Tool call latency, request to response.\n"
        "# TYPE stockade_tool_call_seconds histogram\n";
    for (const auto& [tool, h] : latency_) {
        const std::string label = prometheus_label(tool);
        for (std::size_t i = 0; i < kLatencyBuckets.size(); ++i) {
            out += fmt::format("stockade_tool_call_seconds_bucket{{tool=\"{}\",le=\"{}\"}} {}\n",
                               label, kLatencyBuckets[i], h.buckets[i]);
        }
        out += fmt::format("stockade_tool_call_seconds_bucket{{tool=\"{}\",le=\"+Inf\"}} {}\n",
                           label, h.count);
        out += fmt::format("stockade_tool_call_seconds_sum{{tool=\"{}\"}} {}\n", label, h.sum);
        out += fmt::format("stockade_tool_call_seconds_count{{tool=\"{}\"}} {}\n", label, h.count);
    }
    out +=
        "# HELP stockade_quota_refusals_total Requests refused by a tenant's quota.\n"
        "# TYPE stockade_quota_refusals_total counter\n";
    for (const auto& [key, n] : refusals_) {
        out += fmt::format("stockade_quota_refusals_total{{tenant=\"{}\",quota=\"{}\"}} {}\n",
                           prometheus_label(key.first), prometheus_label(key.second), n);
    }
    out +=
        "# HELP stockade_sessions_opened_total Sessions opened, and failed to open.\n"
        "# TYPE stockade_sessions_opened_total counter\n";
    for (const auto& [key, n] : opened_) {
        out += fmt::format("stockade_sessions_opened_total{{tenant=\"{}\",result=\"{}\"}} {}\n",
                           prometheus_label(key.first), key.second ? "ok" : "failed", n);
    }
    out +=
        "# HELP stockade_sessions Sessions open, by tenant.\n"
        "# TYPE stockade_sessions gauge\n";
    for (const auto& [tenant, g] : gauges) {
        out += fmt::format("stockade_sessions{{tenant=\"{}\"}} {}\n", prometheus_label(tenant),
                           g.sessions);
    }
    out +=
        "# HELP stockade_calls_in_progress Tool calls running or waiting, by tenant.\n"
        "# TYPE stockade_calls_in_progress gauge\n";
    for (const auto& [tenant, g] : gauges) {
        out += fmt::format("stockade_calls_in_progress{{tenant=\"{}\"}} {}\n",
                           prometheus_label(tenant), g.calls);
    }
    render_usage(usage, out);
    out += fmt::format(
        "# HELP stockade_draining 1 while the server drains after SIGTERM.\n"
        "# TYPE stockade_draining gauge\nstockade_draining {}\n",
        draining ? 1 : 0);
    return out;
}

}  // namespace stockade::mcp
