#include "runner/mcp/elicitation.h"

#include <sys/random.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>

#include "common/crypto.h"
#include "runner/mcp/jsonrpc.h"
#include "runner/mcp/protocol.h"

namespace stockade::mcp {

namespace {

using nlohmann::json;

Error invalid(std::string message) {
    return Error{.code = Errc::kInvalidArgument, .message = std::move(message), .sys_errno = 0};
}

bool is_one_of(std::string_view value, std::initializer_list<std::string_view> options) {
    return std::find(options.begin(), options.end(), value) != options.end();
}

// A property of a requestedSchema: an object whose "type" is a primitive. MCP allows only
// these (PrimitiveSchemaDefinition): string (and string enums), number, integer, boolean, and
// arrays of string enums (multi-select, 2025-11-25).
Status check_property(const std::string& name, const json& property) {
    if (!property.is_object()) {
        return invalid("requested_schema property \"" + name + "\" must be an object");
    }
    auto type = property.find("type");
    if (type == property.end() || !type->is_string() ||
        !is_one_of(type->get_ref<const std::string&>(),
                   {"string", "number", "integer", "boolean", "array"})) {
        return invalid("requested_schema property \"" + name +
                       "\" must have type string, number, integer, boolean or array (MCP "
                       "elicitation forms are flat)");
    }
    if (*type == "array") {
        auto items = property.find("items");
        if (items == property.end() || !items->is_object()) {
            return invalid("requested_schema property \"" + name +
                           "\" is an array without \"items\" (a string enum)");
        }
    }
    return ok_status();
}

// Whether `value` is allowed by an "enum" (a list of values) or a "oneOf"/"anyOf" (a list of
// {"const": value, "title": ...}) in `schema`. No such list allows anything.
bool in_choices(const json& schema, const json& value) {
    bool constrained = false;
    if (auto e = schema.find("enum"); e != schema.end() && e->is_array()) {
        constrained = true;
        if (std::find(e->begin(), e->end(), value) != e->end()) {
            return true;
        }
    }
    for (const char* key : {"oneOf", "anyOf"}) {
        auto list = schema.find(key);
        if (list == schema.end() || !list->is_array()) {
            continue;
        }
        constrained = true;
        for (const auto& option : *list) {
            if (option.is_object()) {
                if (auto c = option.find("const"); c != option.end() && *c == value) {
                    return true;
                }
            }
        }
    }
    return !constrained;
}

Status check_value(const std::string& name, const json& value, const json& property) {
    const auto& type = property["type"].get_ref<const std::string&>();
    bool ok = false;
    if (type == "string") {
        ok = value.is_string() && in_choices(property, value);
    } else if (type == "number") {
        ok = value.is_number();
    } else if (type == "integer") {
        ok = value.is_number_integer() ||
             (value.is_number_float() && std::isfinite(value.get<double>()) &&
              std::trunc(value.get<double>()) == value.get<double>());
    } else if (type == "boolean") {
        ok = value.is_boolean();
    } else if (type == "array") {
        const json& items = property["items"];
        ok = value.is_array() && std::all_of(value.begin(), value.end(), [&](const json& item) {
                 return item.is_string() && in_choices(items, item);
             });
    }
    if (!ok) {
        return invalid("the client's answer for \"" + name + "\" is not a valid " + type +
                       " for the form");
    }
    return ok_status();
}

}  // namespace

bool supports_form_elicitation(const json& client_capabilities) {
    if (!client_capabilities.is_object()) {
        return false;
    }
    auto elicitation = client_capabilities.find("elicitation");
    if (elicitation == client_capabilities.end() || !elicitation->is_object()) {
        return false;
    }
    if (elicitation->empty()) {
        return true;
    }
    auto form = elicitation->find("form");
    return form != elicitation->end() && form->is_object();
}

Result<json> elicit_params(const ElicitRequest& request, std::string_view protocol_version) {
    json schema = request.requested_schema.is_null() ? json::object() : request.requested_schema;
    if (!schema.is_object()) {
        return invalid("requested_schema must be a JSON Schema object");
    }
    if (auto type = schema.find("type"); type == schema.end()) {
        schema["type"] = "object";
    } else if (*type != "object") {
        return invalid("requested_schema must have \"type\": \"object\"");
    }
    if (!schema.contains("properties")) {
        schema["properties"] = json::object();
    }
    const json& properties = schema["properties"];
    if (!properties.is_object()) {
        return invalid("requested_schema \"properties\" must be an object");
    }
    for (const auto& [name, property] : properties.items()) {
        RETURN_IF_ERROR(check_property(name, property));
    }
    if (auto required = schema.find("required"); required != schema.end()) {
        if (!required->is_array()) {
            return invalid("requested_schema \"required\" must be an array of property names");
        }
        for (const auto& name : *required) {
            if (!name.is_string() || !properties.contains(name.get_ref<const std::string&>())) {
                return invalid("requested_schema \"required\" names a property it does not have");
            }
        }
    }
    json params = {{"message", request.message}, {"requestedSchema", std::move(schema)}};
    if (revision_features(protocol_version).elicitation_mode) {
        params["mode"] = "form";  // 2025-11-25 added the field; "form" is its default
    }
    return params;
}

Result<ElicitResponse> parse_elicit_result(const json& result, const json& requested_schema) {
    if (!result.is_object()) {
        return invalid("the client's elicitation result is not an object");
    }
    auto action = result.find("action");
    if (action == result.end() || !action->is_string() ||
        !is_one_of(action->get_ref<const std::string&>(), {"accept", "decline", "cancel"})) {
        return invalid(
            "the client's elicitation result has no valid \"action\" (accept, decline or cancel)");
    }
    ElicitResponse response{.action = action->get<std::string>(), .content = nullptr};
    if (!response.accepted()) {
        return response;
    }
    json content = result.value("content", json(nullptr));
    if (content.is_null()) {
        content = json::object();
    }
    if (!content.is_object()) {
        return invalid("the client's elicitation content is not an object");
    }
    static const json kNoProperties = json::object();
    const json& properties = requested_schema.is_object() && requested_schema.contains("properties")
                                 ? requested_schema["properties"]
                                 : kNoProperties;
    json accepted = json::object();
    for (const auto& [name, property] : properties.items()) {
        auto value = content.find(name);
        if (value == content.end()) {
            continue;
        }
        RETURN_IF_ERROR(check_value(name, *value, property));
        accepted[name] = *value;
    }
    if (auto required = requested_schema.find("required");
        required != requested_schema.end() && required->is_array()) {
        for (const auto& name : *required) {
            if (name.is_string() && !accepted.contains(name.get_ref<const std::string&>())) {
                return invalid("the client's elicitation content lacks the required \"" +
                               name.get<std::string>() + "\"");
            }
        }
    }
    response.content = std::move(accepted);
    return response;
}

std::string input_request_key(const json& params) {
    return "stockade-elicit-" + sha256_hex(jsonrpc::dump(params)).substr(0, 16);
}

RequestStateSealer::RequestStateSealer() {
    if (::getrandom(key_.data(), key_.size(), 0) != static_cast<ssize_t>(key_.size())) {
        std::random_device device;  // getrandom cannot fail for 32 bytes on Linux ≥ 3.17
        for (auto& byte : key_) {
            byte = static_cast<unsigned char>(device());
        }
    }
}

std::string RequestStateSealer::mac_hex(std::string_view payload) const {
    return hmac_sha256_hex(
        std::string_view(reinterpret_cast<const char*>(key_.data()), key_.size()),  // NOLINT
        payload);
}

namespace {

std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string arguments_digest(const json& arguments) {
    return sha256_hex(jsonrpc::dump(arguments));
}

}  // namespace

std::string RequestStateSealer::seal(const std::string& tool, const json& arguments,
                                     const json& answers, std::chrono::milliseconds ttl) const {
    const json payload = {{"tool", tool},
                          {"args", arguments_digest(arguments)},
                          {"exp", now_ms() + ttl.count()},
                          {"answers", answers}};
    std::string text = jsonrpc::dump(payload);
    return "v1." + mac_hex(text) + "." + text;
}

Result<json> RequestStateSealer::open(std::string_view state, const std::string& tool,
                                      const json& arguments) const {
    constexpr std::string_view kPrefix = "v1.";
    constexpr std::size_t kMacHex = 2 * sizeof(Sha256Digest);
    if (state.size() < kPrefix.size() + kMacHex + 1 || !state.starts_with(kPrefix) ||
        state[kPrefix.size() + kMacHex] != '.') {
        return invalid("requestState is not one this server issued");
    }
    const std::string_view mac = state.substr(kPrefix.size(), kMacHex);
    const std::string_view payload = state.substr(kPrefix.size() + kMacHex + 1);
    const std::string expected = mac_hex(payload);
    if (!constant_time_equal(expected, mac)) {
        return invalid(
            "requestState failed verification (tampered, or from another server "
            "process)");
    }
    json parsed = json::parse(payload.begin(), payload.end(), nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_object() || parsed.value("tool", json()) != tool ||
        parsed.value("args", json()) != arguments_digest(arguments) ||
        !parsed.value("answers", json()).is_object()) {
        return invalid("requestState belongs to another call (a different tool or arguments)");
    }
    auto exp = parsed.find("exp");
    if (exp == parsed.end() || !exp->is_number_integer() || exp->get<std::int64_t>() < now_ms()) {
        return invalid("requestState expired");
    }
    return std::move(parsed["answers"]);
}

}  // namespace stockade::mcp
