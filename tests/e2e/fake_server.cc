// mcp_fake_server: McpServer on stdin/stdout with literal tools, `echo`, `fail` and `confirm`
// (asks the user through MCP elicitation), so the e2e suite can drive the protocol with the
// official TypeScript SDK. Logs go to stderr (SPDLOG_LEVEL=debug shows every message).
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/log.h"
#include "runner/mcp/server.h"
#include "runner/mcp/tool_host.h"

namespace {

using nlohmann::json;
using stockade::mcp::CallInfo;
using stockade::mcp::ElicitRequest;
using stockade::mcp::ToolCallResult;
using stockade::mcp::ToolInfo;

class FakeTools : public stockade::mcp::ToolHost {
public:
    std::vector<ToolInfo> list_tools() override {
        return {
            ToolInfo{
                .name = "echo",
                .title = "Echo",
                .description = "Returns the given text unchanged.",
                .input_schema = {{"type", "object"},
                                 {"properties",
                                  {{"text",
                                    {{"type", "string"}, {"description", "Text to return."}}}}},
                                 {"required", {"text"}}},
                .output_schema = nullptr,
                .annotations =
                    stockade::tools::ToolAnnotations{.read_only = true, .idempotent = true}},
            ToolInfo{.name = "fail",
                     .title = "Fail",
                     .description = "Always fails, to exercise isError results.",
                     .input_schema = json::object(),
                     .output_schema = nullptr,
                     .annotations =
                         stockade::tools::ToolAnnotations{.read_only = true, .idempotent = true}},
            ToolInfo{.name = "confirm",
                     .title = "Confirm",
                     .description = "Asks the user to allow or deny (MCP elicitation) and returns "
                                    "the answer.",
                     .input_schema = {{"type", "object"},
                                      {"properties",
                                       {{"question",
                                         {{"type", "string"},
                                          {"description", "What to ask the user."}}}}}},
                     .output_schema = nullptr,
                     .annotations = stockade::tools::ToolAnnotations{.read_only = true}},
        };
    }

    ToolCallResult call_tool(const std::string& name, const json& arguments,
                             const CallInfo& info) override {
        if (name == "echo") {
            auto text = arguments.find("text");
            if (text == arguments.end() || !text->is_string()) {
                return {
                    .text = R"(echo needs a string argument "text". Retry with {"text": "..."}.)",
                    .is_error = true,
                    .meta = nullptr,
                    .structured = nullptr,
                    .unknown_tool = false};
            }
            const auto& s = text->get_ref<const std::string&>();
            return {.text = s,
                    .is_error = false,
                    .meta = nullptr,
                    .structured = {{"length", s.size()}},
                    .unknown_tool = false};
        }
        if (name == "fail") {
            return {.text = "fail always fails: this is the expected error.",
                    .is_error = true,
                    .meta = nullptr,
                    .structured = nullptr,
                    .unknown_tool = false};
        }
        if (name == "confirm") {
            return confirm(arguments, info);
        }
        return {.text = "",
                .is_error = false,
                .meta = nullptr,
                .structured = nullptr,
                .unknown_tool = true};
    }

private:
    static ToolCallResult confirm(const json& arguments, const CallInfo& info) {
        if (!info.can_elicit()) {
            return {.text = "This client cannot ask the user (no form elicitation capability).",
                    .is_error = true,
                    .meta = nullptr,
                    .structured = nullptr,
                    .unknown_tool = false};
        }
        auto question = arguments.find("question");
        auto answer = info.elicit(
            ElicitRequest{.message = question != arguments.end() && question->is_string()
                                         ? question->get<std::string>()
                                         : std::string("Allow?"),
                          .requested_schema = {{"type", "object"},
                                               {"properties",
                                                {{"decision",
                                                  {{"type", "string"},
                                                   {"title", "Decision"},
                                                   {"enum", {"once", "deny"}},
                                                   {"enumNames", {"Allow once", "Deny"}}}}}},
                                               {"required", {"decision"}}},
                          .timeout = std::chrono::seconds(30)});
        if (!answer) {
            return {.text = "No answer: " + answer.error().message,
                    .is_error = true,
                    .meta = nullptr,
                    .structured = nullptr,
                    .unknown_tool = false};
        }
        return {.text = answer->action,
                .is_error = false,
                .meta = nullptr,
                .structured = {{"action", answer->action}, {"content", answer->content}},
                .unknown_tool = false};
    }
};

}  // namespace

int main() {
    stockade::log::init("warn");
    FakeTools tools;
    stockade::mcp::ServerOptions options;
    options.name = "stockade-fake";
    options.title = "Stockade (fake tools)";
    options.version = "0.0.0-e2e";
    options.instructions = "Test server: echo, fail and confirm only.";
    stockade::mcp::McpServer server(tools, options);
    auto status = server.run(STDIN_FILENO, STDOUT_FILENO);
    if (!status) {
        SPDLOG_LOGGER_CRITICAL(stockade::log::get("runner"), "mcp fake server: {}",
                               status.error().message);
        return 1;
    }
    return 0;
}
