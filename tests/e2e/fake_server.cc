// mcp_fake_server: McpServer on stdin/stdout with two literal tools, `echo` and `fail`, so the
// e2e suite can drive the protocol with the official TypeScript SDK before `stockade serve`
// exists. Logs go to stderr (SPDLOG_LEVEL=debug shows every message).
#include <unistd.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/log.h"
#include "runner/mcp/server.h"
#include "runner/mcp/tool_host.h"

namespace {

using nlohmann::json;
using stockade::mcp::CallInfo;
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
                .annotations = {.read_only_hint = true,
                                .destructive_hint = false,
                                .idempotent_hint = true,
                                .open_world_hint = false}},
            ToolInfo{.name = "fail",
                     .title = "Fail",
                     .description = "Always fails, to exercise isError results.",
                     .input_schema = json::object(),
                     .output_schema = nullptr,
                     .annotations = {.read_only_hint = true,
                                     .destructive_hint = false,
                                     .idempotent_hint = true,
                                     .open_world_hint = false}},
        };
    }

    ToolCallResult call_tool(const std::string& name, const json& arguments,
                             const CallInfo& /*info*/) override {
        if (name == "echo") {
            auto text = arguments.find("text");
            if (text == arguments.end() || !text->is_string()) {
                return {
                    .text = R"(echo needs a string argument "text". Retry with {"text": "..."}.)",
                    .is_error = true,
                    .structured = nullptr,
                    .unknown_tool = false};
            }
            const auto& s = text->get_ref<const std::string&>();
            return {.text = s,
                    .is_error = false,
                    .structured = {{"length", s.size()}},
                    .unknown_tool = false};
        }
        if (name == "fail") {
            return {.text = "fail always fails: this is the expected error.",
                    .is_error = true,
                    .structured = nullptr,
                    .unknown_tool = false};
        }
        return {.text = "", .is_error = false, .structured = nullptr, .unknown_tool = true};
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
    options.instructions = "Test server: echo and fail only.";
    stockade::mcp::McpServer server(tools, options);
    auto status = server.run(STDIN_FILENO, STDOUT_FILENO);
    if (!status) {
        SPDLOG_LOGGER_CRITICAL(stockade::log::get("runner"), "mcp fake server: {}",
                               status.error().message);
        return 1;
    }
    return 0;
}
