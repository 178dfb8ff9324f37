#include "runner/mcp/http_metrics.h"

#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace stockade::mcp {
namespace {

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// Every one of `lines` is in `text`.
void expect_lines(const std::string& text, std::initializer_list<std::string> lines) {
    for (const std::string& line : lines) {
        EXPECT_TRUE(contains(text, line)) << "no line " << line << " in:\n" << text;
    }
}

TEST(PrometheusLabelTest, EscapesBackslashQuoteAndNewline) {
    EXPECT_EQ(prometheus_label("acme"), "acme");
    EXPECT_EQ(prometheus_label(R"(a"b\c)"), R"(a\"b\\c)");
    EXPECT_EQ(prometheus_label("a\nb"), R"(a\nb)");
    EXPECT_EQ(prometheus_label(""), "");
}

TEST(CallOutcomeTest, FromTheResponseMessage) {
    EXPECT_EQ(call_outcome(""), "cancelled");
    EXPECT_EQ(call_outcome(R"({"error":{"code":-32603,"message":"x"},"id":1,"jsonrpc":"2.0"})"),
              "error");
    EXPECT_EQ(call_outcome(R"({"id":1,"jsonrpc":"2.0","result":{"content":[],"isError":true}})"),
              "tool_error");
    EXPECT_EQ(call_outcome(R"({"id":1,"jsonrpc":"2.0","result":{"content":[],"isError":false}})"),
              "ok");
    // A quote in a string is escaped: text that says "isError":true is not the flag.
    EXPECT_EQ(call_outcome(
                  R"({"id":1,"jsonrpc":"2.0","result":{"content":[{"text":"\"isError\":true"}]}})"),
              "ok");
}

TEST(MetricsTest, AnEmptyExpositionHasEveryFamilyAndTheDrainingGauge) {
    const Metrics metrics;
    const std::string text = metrics.render({}, {}, false);
    for (const char* family :
         {"stockade_http_requests_total counter", "stockade_tool_calls_total counter",
          "stockade_tool_call_seconds histogram", "stockade_quota_refusals_total counter",
          "stockade_sessions_opened_total counter", "stockade_sessions gauge",
          "stockade_calls_in_progress gauge", "stockade_worker_restarts_total counter",
          "stockade_processes gauge", "stockade_output_bytes_total counter",
          "stockade_disk_bytes gauge", "stockade_disk_limit_bytes gauge",
          "stockade_policy_decisions_total counter", "stockade_draining gauge"}) {
        EXPECT_TRUE(contains(text, std::string("# TYPE ") + family + "\n")) << family;
    }
    EXPECT_TRUE(text.ends_with("stockade_draining 0\n")) << text;
    EXPECT_TRUE(metrics.render({}, {}, true).ends_with("stockade_draining 1\n"));
}

TEST(MetricsTest, CountsRequestsRefusalsAndSessions) {
    Metrics metrics;
    metrics.request("POST", 200);
    metrics.request("POST", 200);
    metrics.request("GET", 404);
    metrics.refusal("acme", "sessions");
    metrics.session_opened("acme", true);
    metrics.session_opened("acme", false);
    metrics.session_opened("acme", true);
    const std::string text = metrics.render({}, {}, false);
    expect_lines(text, {"stockade_http_requests_total{method=\"POST\",status=\"200\"} 2\n",
                        "stockade_http_requests_total{method=\"GET\",status=\"404\"} 1\n",
                        "stockade_quota_refusals_total{tenant=\"acme\",quota=\"sessions\"} 1\n",
                        "stockade_sessions_opened_total{tenant=\"acme\",result=\"ok\"} 2\n",
                        "stockade_sessions_opened_total{tenant=\"acme\",result=\"failed\"} 1\n"});
}

TEST(MetricsTest, ACallCountsInEveryBucketAtOrAboveItsLatency) {
    Metrics metrics;
    metrics.call("acme", "Bash", "ok", 0.375);
    metrics.call("acme", "Bash", "error", 0.00390625);
    const std::string text = metrics.render({}, {}, false);
    expect_lines(text,
                 {"stockade_tool_calls_total{tenant=\"acme\",tool=\"Bash\",outcome=\"ok\"} 1\n",
                  "stockade_tool_calls_total{tenant=\"acme\",tool=\"Bash\",outcome=\"error\"} 1\n",
                  "stockade_tool_call_seconds_bucket{tool=\"Bash\",le=\"0.005\"} 1\n",
                  "stockade_tool_call_seconds_bucket{tool=\"Bash\",le=\"0.25\"} 1\n",
                  "stockade_tool_call_seconds_bucket{tool=\"Bash\",le=\"0.5\"} 2\n",
                  "stockade_tool_call_seconds_bucket{tool=\"Bash\",le=\"60\"} 2\n",
                  "stockade_tool_call_seconds_bucket{tool=\"Bash\",le=\"+Inf\"} 2\n",
                  "stockade_tool_call_seconds_sum{tool=\"Bash\"} 0.37890625\n",
                  "stockade_tool_call_seconds_count{tool=\"Bash\"} 2\n"});
}

TEST(MetricsTest, GaugesAndUsageAreRenderedPerTenantWithEscapedLabels) {
    const Metrics metrics;
    const std::map<std::string, TenantGauges> gauges = {{"acme", {.sessions = 3, .calls = 2}},
                                                        {"q\"t", {.sessions = 1, .calls = 0}}};
    std::vector<TenantUsage> usage(1);
    usage[0].tenant = "acme";
    usage[0].worker_restarts = 4;
    usage[0].processes = 5;
    usage[0].output_bytes = 6;
    usage[0].disk_bytes = 7;
    usage[0].disk_limit_bytes = 8;
    usage[0].allowed = 9;
    usage[0].asked = 10;
    usage[0].denied = 11;
    const std::string text = metrics.render(gauges, usage, false);
    expect_lines(
        text, {"stockade_sessions{tenant=\"acme\"} 3\n", "stockade_sessions{tenant=\"q\\\"t\"} 1\n",
               "stockade_calls_in_progress{tenant=\"acme\"} 2\n",
               "stockade_calls_in_progress{tenant=\"q\\\"t\"} 0\n",
               "stockade_worker_restarts_total{tenant=\"acme\"} 4\n",
               "stockade_processes{tenant=\"acme\"} 5\n",
               "stockade_output_bytes_total{tenant=\"acme\"} 6\n",
               "stockade_disk_bytes{tenant=\"acme\"} 7\n",
               "stockade_disk_limit_bytes{tenant=\"acme\"} 8\n",
               "stockade_policy_decisions_total{tenant=\"acme\",decision=\"allow\"} 9\n",
               "stockade_policy_decisions_total{tenant=\"acme\",decision=\"ask\"} 10\n",
               "stockade_policy_decisions_total{tenant=\"acme\",decision=\"deny\"} 11\n"});
}

}  // namespace
}  // namespace stockade::mcp
