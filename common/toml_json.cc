#include "common/toml_json.h"

#include <fmt/format.h>

// toml++ header-only: Debian's tomlplusplus::tomlplusplus target would link
// libtomlplusplus.so, which carries the shared libstdc++ beside the static one of our binary.
// Without exceptions its parse returns a result; without formatters it has nothing to print.
#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 0
#define TOML_ENABLE_FORMATTERS 0
#include <toml++/toml.h>

namespace stockade {
namespace {

using json = nlohmann::json;

Result<json> convert(const toml::node& node, std::string_view key) {
    switch (node.type()) {
        case toml::node_type::table: {
            json out = json::object();
            for (const auto& [name, child] : *node.as_table()) {
                ASSIGN_OR_RETURN(json value, convert(child, name.str()));
                out[std::string(name.str())] = std::move(value);
            }
            return out;
        }
        case toml::node_type::array: {
            json out = json::array();
            for (const toml::node& child : *node.as_array()) {
                ASSIGN_OR_RETURN(json value, convert(child, key));
                out.push_back(std::move(value));
            }
            return out;
        }
        case toml::node_type::string:
            return json(node.as_string()->get());
        case toml::node_type::integer:
            return json(node.as_integer()->get());
        case toml::node_type::floating_point:
            return json(node.as_floating_point()->get());
        case toml::node_type::boolean:
            return json(node.as_boolean()->get());
        case toml::node_type::none:
        case toml::node_type::date:
        case toml::node_type::time:
        case toml::node_type::date_time:
            break;
    }
    return Error{
        Errc::kInvalidArgument,
        fmt::format("{} (line {}): a date or time is not a value of this file; "
                    "durations are strings such as \"30m\"",
                    json(std::string(key)).dump(-1, ' ', false, json::error_handler_t::replace),
                    node.source().begin.line)};
}

}  // namespace

Result<json> toml_to_json(std::string_view text) {
    toml::parse_result parsed = toml::parse(text);
    if (!parsed) {
        const toml::parse_error& e = parsed.error();
        return Error{Errc::kInvalidArgument,
                     fmt::format("invalid TOML at line {}, column {}: {}", e.source().begin.line,
                                 e.source().begin.column, e.description())};
    }
    return convert(parsed.table(), "");
}

}  // namespace stockade
