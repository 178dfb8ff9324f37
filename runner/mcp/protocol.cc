#include "runner/mcp/protocol.h"

#include <algorithm>
#include <array>
#include <utility>

namespace stockade::mcp {

namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 5> kSupported = {
    kProtocol20260728, kProtocol20251125, kProtocol20250618, kProtocol20250326, kProtocol20241105};

json supported_list() {
    json list = json::array();
    for (auto v : kSupported) {
        list.push_back(std::string(v));
    }
    return list;
}

}  // namespace

std::span<const std::string_view> supported_versions() noexcept {
    return kSupported;
}

bool is_supported_version(std::string_view version) noexcept {
    return std::find(kSupported.begin(), kSupported.end(), version) != kSupported.end();
}

bool is_modern_version(std::string_view version) noexcept {
    // Revisions are dates, so later ones compare greater.
    return is_supported_version(version) && version >= kProtocol20260728;
}

std::string negotiate_initialize_version(std::string_view requested) {
    if (is_supported_version(requested) && !is_modern_version(requested)) {
        return std::string(requested);
    }
    return std::string(kProtocol20251125);
}

RevisionFeatures revision_features(std::string_view version) noexcept {
    if (!is_supported_version(version)) {
        return {};
    }
    // Revisions are dates, so later ones compare greater.
    return RevisionFeatures{.tool_annotations = version >= kProtocol20250326,
                            .progress_message = version >= kProtocol20250326,
                            .titles = version >= kProtocol20250618,
                            .structured_content = version >= kProtocol20250618,
                            .elicitation = version >= kProtocol20250618,
                            .elicitation_mode = version >= kProtocol20251125,
                            .sse_priming = version >= kProtocol20251125};
}

std::variant<RequestProtocol, ProtocolError> resolve_protocol(const json& params,
                                                              const LegacySession& session) {
    RequestProtocol protocol;
    const json* meta = nullptr;
    if (params.is_object()) {
        if (auto it = params.find("_meta"); it != params.end() && it->is_object()) {
            meta = &*it;
        }
    }
    if (meta != nullptr) {
        if (auto token = meta->find(kMetaProgressToken);
            token != meta->end() && jsonrpc::is_valid_id(*token)) {
            protocol.progress_token = *token;
        }
    }

    auto version = meta != nullptr ? meta->find(kMetaProtocolVersion) : json::const_iterator();
    if (meta == nullptr || version == meta->end()) {
        protocol.version = session.initialized ? session.version : std::string(kProtocol20251125);
        protocol.stateless = false;
        protocol.modern = is_modern_version(protocol.version);
        protocol.client_info = session.client_info;
        protocol.client_capabilities = session.client_capabilities;
        return protocol;
    }

    if (!version->is_string()) {
        return ProtocolError{
            .code = jsonrpc::ErrorCode::kInvalidParams,
            .message = "_meta \"" + std::string(kMetaProtocolVersion) + "\" must be a string",
            .data = nullptr};
    }
    const auto& requested = version->get_ref<const std::string&>();
    if (!is_supported_version(requested)) {
        return ProtocolError{.code = jsonrpc::ErrorCode::kUnsupportedProtocolVersion,
                             .message = "Unsupported protocol version",
                             .data = {{"supported", supported_list()}, {"requested", requested}}};
    }
    auto capabilities = meta->find(kMetaClientCapabilities);
    if (capabilities == meta->end() || !capabilities->is_object()) {
        return ProtocolError{.code = jsonrpc::ErrorCode::kInvalidParams,
                             .message = "_meta \"" + std::string(kMetaClientCapabilities) +
                                        "\" is required (an object) when \"" +
                                        std::string(kMetaProtocolVersion) + "\" is given",
                             .data = nullptr};
    }
    protocol.version = requested;
    protocol.stateless = true;
    protocol.modern = is_modern_version(requested);
    protocol.client_capabilities = *capabilities;
    if (auto info = meta->find(kMetaClientInfo); info != meta->end() && info->is_object()) {
        protocol.client_info = *info;
    }
    return protocol;
}

nlohmann::json tool_json(const ToolInfo& tool, std::string_view version) {
    using nlohmann::json;
    const RevisionFeatures features = revision_features(version);
    json schema = tool.input_schema.is_object() ? tool.input_schema : json::object();
    if (!schema.contains("type")) {
        schema["type"] = "object";
    }
    if (!schema.contains("additionalProperties")) {
        schema["additionalProperties"] = false;
    }
    json entry = {
        {"name", tool.name}, {"description", tool.description}, {"inputSchema", std::move(schema)}};
    if (!tool.title.empty() && features.titles) {
        entry["title"] = tool.title;
    }
    if (tool.output_schema.is_object() && features.structured_content) {
        entry["outputSchema"] = tool.output_schema;
    }
    json hints = json::object();
    if (!tool.title.empty() && !features.titles) {
        hints["title"] = tool.title;  // 2025-03-26's display name: ToolAnnotations.title
    }
    if (const auto& a = tool.annotations) {
        hints["readOnlyHint"] = a->read_only;
        hints["destructiveHint"] = a->destructive;
        hints["idempotentHint"] = a->idempotent;
        hints["openWorldHint"] = a->open_world;
    }
    if (!hints.empty() && features.tool_annotations) {
        entry["annotations"] = std::move(hints);
    }
    return entry;
}

ToolInfo tool_info(const tools::ToolSpec& spec, bool output_schema) {
    return ToolInfo{.name = spec.name,
                    .title = spec.title,
                    .description = spec.description,
                    .input_schema = spec.input_schema,
                    .output_schema = output_schema ? spec.output_schema : nlohmann::json(nullptr),
                    .annotations = spec.annotations};
}

}  // namespace stockade::mcp
