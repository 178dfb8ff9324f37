// The tools in tools/list order, and argument validation against their schemas with the seed's
// repair prose (TOOL_PROTOCOL §1.2).
#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "tools/file_tools.h"
#include "tools/process_tools.h"
#include "tools/similar.h"
#include "tools/tool.h"
#include "tools/tool_support.h"

namespace stockade::tools {
namespace {

std::string type_phrase(const nlohmann::json& v) {
    switch (v.type()) {
        case nlohmann::json::value_t::null:
            return "null";
        case nlohmann::json::value_t::boolean:
            return "a boolean";
        case nlohmann::json::value_t::string:
            return "a string";
        case nlohmann::json::value_t::number_integer:
        case nlohmann::json::value_t::number_unsigned:
            return "an integer";
        case nlohmann::json::value_t::number_float:
            return "a number";
        case nlohmann::json::value_t::array:
            return "an array";
        case nlohmann::json::value_t::object:
            return "an object";
        case nlohmann::json::value_t::binary:
        case nlohmann::json::value_t::discarded:
            break;
    }
    return "an unknown value";
}

std::string expected_phrase(std::string_view type) {
    const bool vowel = type == "integer" || type == "object" || type == "array";
    return fmt::format("{} {}", vowel ? "an" : "a", type);
}

bool matches_type(const nlohmann::json& v, std::string_view type) {
    if (type == "integer") {
        // JSON Schema counts 3.0 as an integer.
        return v.is_number_integer() ||
               (v.is_number_float() && std::trunc(v.get<double>()) == v.get<double>());
    }
    const std::array<std::pair<std::string_view, bool>, 5> checks = {{
        {"string", v.is_string()},
        {"boolean", v.is_boolean()},
        {"number", v.is_number()},
        {"object", v.is_object()},
        {"array", v.is_array()},
    }};
    for (const auto& [name, ok] : checks) {
        if (type == name) {
            return ok;
        }
    }
    return true;
}

std::string quoted_list(const std::vector<std::string>& names) {
    std::vector<std::string> q;
    q.reserve(names.size());
    for (const std::string& n : names) {
        q.push_back(fmt::format("\"{}\"", n));
    }
    return fmt::format("{}", fmt::join(q, ", "));
}

}  // namespace

ToolResult timed(const std::function<ToolResult()>& run) {
    const Stopwatch clock;
    ToolResult result = run();
    result.metadata["duration_ms"] = clock.ms();
    return result;
}

Result<std::unique_ptr<ToolCall>> Tool::parse(const nlohmann::json& args) const {
    RETURN_IF_ERROR(validate_arguments(spec_, args));
    static const nlohmann::json kEmpty = nlohmann::json::object();
    return make_call(args.is_null() ? kEmpty : args);
}

ToolResult Tool::execute(const nlohmann::json& args, ToolContext& ctx) const {
    Result<std::unique_ptr<ToolCall>> call = parse(args);
    if (!call) {
        return error_result(call.error().message);
    }
    return (*call)->execute(ctx);
}

std::vector<std::unique_ptr<Tool>> make_file_tools() {
    std::vector<std::unique_ptr<Tool>> tools;
    tools.push_back(make_read_tool());
    tools.push_back(make_write_tool());
    tools.push_back(make_edit_tool());
    tools.push_back(make_grep_tool());
    tools.push_back(make_glob_tool());
    return tools;
}

ToolRegistry::ToolRegistry() : tools_(make_file_tools()) {
    for (auto& tool : make_process_tools()) {
        tools_.push_back(std::move(tool));
    }
}

const Tool* ToolRegistry::find(std::string_view name) const {
    for (const auto& tool : tools_) {
        if (tool->name() == name) {
            return tool.get();
        }
    }
    return nullptr;
}

std::vector<std::unique_ptr<Tool>> make_process_tools() {
    std::vector<std::unique_ptr<Tool>> tools;
    tools.push_back(make_bash_tool());
    tools.push_back(make_process_tool());
    return tools;
}

Status validate_arguments(const ToolSpec& spec, const nlohmann::json& args) {
    auto fail = [&](const std::string& what) {
        return Error{
            Errc::kInvalidArgument,
            fmt::format("Invalid input for tool \"{}\": {}. Please rewrite the input so it "
                        "satisfies the expected schema.",
                        spec.name, what)};
    };
    const nlohmann::json& schema = spec.input_schema;
    const nlohmann::json props = schema.value("properties", nlohmann::json::object());
    const nlohmann::json empty = nlohmann::json::object();
    const nlohmann::json& input = args.is_null() ? empty : args;
    if (!input.is_object()) {
        return fail(fmt::format("the input must be a JSON object of named parameters, not {}",
                                type_phrase(input)));
    }
    for (const nlohmann::json& required : schema.value("required", nlohmann::json::array())) {
        const std::string name = required.get<std::string>();
        const auto it = input.find(name);
        if (it == input.end() || it->is_null()) {
            return fail(fmt::format("parameter \"{}\" is required", name));
        }
    }
    std::vector<std::string> names;
    for (const auto& [name, _] : props.items()) {
        names.push_back(name);
    }
    for (const auto& [key, value] : input.items()) {
        const auto prop = props.find(key);
        if (prop == props.end()) {
            std::string what = fmt::format("unknown parameter \"{}\"", key);
            if (auto guess = closest(key, names, std::max<size_t>(2, key.size() / 2))) {
                what += fmt::format(" (did you mean \"{}\"?)", *guess);
            }
            return fail(fmt::format("{}; the parameters are {}", what, quoted_list(names)));
        }
        if (value.is_null()) {
            continue;  // an optional parameter left out
        }
        const std::string type = prop->value("type", "");
        if (!type.empty() && !matches_type(value, type)) {
            return fail(fmt::format("parameter \"{}\" must be {}, not {}", key,
                                    expected_phrase(type), type_phrase(value)));
        }
        if (const auto e = prop->find("enum"); e != prop->end() && e->is_array()) {
            if (std::find(e->begin(), e->end(), value) == e->end()) {
                std::vector<std::string> allowed;
                for (const nlohmann::json& a : *e) {
                    allowed.push_back(a.is_string() ? a.get<std::string>() : a.dump());
                }
                return fail(fmt::format("parameter \"{}\" must be one of {}, not {}", key,
                                        quoted_list(allowed), value.dump()));
            }
        }
    }
    return {};
}

}  // namespace stockade::tools
