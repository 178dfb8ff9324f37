#include "runner/mcp/protocol.h"

#include <string_view>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "tests/testing/golden.h"
#include "tools/tool.h"

namespace stockade::mcp {
namespace {

using nlohmann::json;

json modern_meta(json version, json capabilities = json::object()) {
    json meta = {{std::string(kMetaProtocolVersion), std::move(version)}};
    if (!capabilities.is_null()) {
        meta[std::string(kMetaClientCapabilities)] = std::move(capabilities);
    }
    return {{"_meta", std::move(meta)}};
}

TEST(ProtocolTest, InitializeEchoesASupportedLegacyVersionElseOurLatestLegacy) {
    EXPECT_EQ(negotiate_initialize_version("2025-11-25"), "2025-11-25");
    EXPECT_EQ(negotiate_initialize_version("2025-06-18"), "2025-06-18");
    EXPECT_EQ(negotiate_initialize_version("2025-03-26"), "2025-03-26");
    EXPECT_EQ(negotiate_initialize_version("2024-11-05"), "2024-11-05");
    EXPECT_EQ(negotiate_initialize_version("2024-10-07"), "2025-11-25");  // a draft, never served
    EXPECT_EQ(negotiate_initialize_version("2026-07-28"), "2025-11-25");  // no handshake there
    EXPECT_EQ(negotiate_initialize_version("banana"), "2025-11-25");
}

TEST(ProtocolTest, OnlyTheStatelessRevisionIsModern) {
    EXPECT_TRUE(is_modern_version("2026-07-28"));
    EXPECT_FALSE(is_modern_version("2025-11-25"));
    EXPECT_FALSE(is_modern_version("2099-01-01"));  // unknown, so not served at all
    EXPECT_EQ(supported_versions().front(), kProtocol20260728);
}

TEST(ProtocolTest, RequestWithoutMetaUsesTheSessionVersion) {
    LegacySession session{.initialized = true,
                          .version = "2025-06-18",
                          .client_info = {{"name", "c"}},
                          .client_capabilities = {{"roots", json::object()}}};
    auto resolved = resolve_protocol(json::object(), session);
    ASSERT_TRUE(std::holds_alternative<RequestProtocol>(resolved));
    const auto& p = std::get<RequestProtocol>(resolved);
    EXPECT_EQ(p.version, "2025-06-18");
    EXPECT_FALSE(p.stateless);
    EXPECT_FALSE(p.modern);
    EXPECT_EQ(p.client_info, json({{"name", "c"}}));
    EXPECT_EQ(p.client_capabilities, json({{"roots", json::object()}}));
}

TEST(ProtocolTest, RequestBeforeInitializeIsServedAsLatestLegacy) {
    auto resolved = resolve_protocol(nullptr, LegacySession{});
    ASSERT_TRUE(std::holds_alternative<RequestProtocol>(resolved));
    EXPECT_EQ(std::get<RequestProtocol>(resolved).version, "2025-11-25");
}

TEST(ProtocolTest, ModernMetaSelectsStatelessServing) {
    json params = modern_meta("2026-07-28", {{"elicitation", json::object()}});
    params["_meta"][std::string(kMetaClientInfo)] = {{"name", "x"}, {"version", "1"}};
    params["_meta"]["progressToken"] = "tok";
    LegacySession session;
    session.initialized = true;
    session.version = "2025-06-18";
    auto resolved = resolve_protocol(params, session);
    ASSERT_TRUE(std::holds_alternative<RequestProtocol>(resolved));
    const auto& p = std::get<RequestProtocol>(resolved);
    EXPECT_EQ(p.version, "2026-07-28");
    EXPECT_TRUE(p.stateless);
    EXPECT_TRUE(p.modern);
    EXPECT_EQ(p.client_capabilities, json({{"elicitation", json::object()}}));
    EXPECT_EQ(p.client_info, json({{"name", "x"}, {"version", "1"}}));
    EXPECT_EQ(p.progress_token, json("tok"));
}

TEST(ProtocolTest, UnsupportedVersionListsWhatWeSupport) {
    auto resolved = resolve_protocol(modern_meta("1900-01-01"), LegacySession{});
    ASSERT_TRUE(std::holds_alternative<ProtocolError>(resolved));
    const auto& e = std::get<ProtocolError>(resolved);
    EXPECT_EQ(e.code, jsonrpc::ErrorCode::kUnsupportedProtocolVersion);
    EXPECT_EQ(
        e.data,
        json({{"supported", {"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}},
              {"requested", "1900-01-01"}}));
}

TEST(ProtocolTest, MissingOrMistypedRequiredMetaIsInvalidParams) {
    auto missing = resolve_protocol(modern_meta("2026-07-28", nullptr), LegacySession{});
    ASSERT_TRUE(std::holds_alternative<ProtocolError>(missing));
    EXPECT_EQ(std::get<ProtocolError>(missing).code, jsonrpc::ErrorCode::kInvalidParams);
    auto not_string = resolve_protocol(modern_meta(20260728), LegacySession{});
    ASSERT_TRUE(std::holds_alternative<ProtocolError>(not_string));
    EXPECT_EQ(std::get<ProtocolError>(not_string).code, jsonrpc::ErrorCode::kInvalidParams);
}

TEST(ProtocolTest, EachRevisionHasTheFeaturesItAdded) {
    const auto features = [](std::string_view version) {
        const RevisionFeatures f = revision_features(version);
        return std::vector<bool>{f.tool_annotations,   f.progress_message, f.titles,
                                 f.structured_content, f.elicitation,      f.elicitation_mode,
                                 f.sse_priming};
    };
    using Flags = std::vector<bool>;
    EXPECT_EQ(features("2024-11-05"), Flags({false, false, false, false, false, false, false}));
    EXPECT_EQ(features("2025-03-26"), Flags({true, true, false, false, false, false, false}));
    EXPECT_EQ(features("2025-06-18"), Flags({true, true, true, true, true, false, false}));
    EXPECT_EQ(features("2025-11-25"), Flags({true, true, true, true, true, true, true}));
    EXPECT_EQ(features("2026-07-28"), Flags({true, true, true, true, true, true, true}));
    EXPECT_EQ(features("2099-01-01"), Flags({false, false, false, false, false, false, false}))
        << "a version we do not serve has nothing";
}

TEST(ProtocolTest, ProgressTokenIsReadInBothEras) {
    auto resolved = resolve_protocol({{"_meta", {{"progressToken", 9}}}}, LegacySession{});
    ASSERT_TRUE(std::holds_alternative<RequestProtocol>(resolved));
    EXPECT_EQ(std::get<RequestProtocol>(resolved).progress_token, json(9));
}

}  // namespace
}  // namespace stockade::mcp

namespace stockade::mcp {
namespace {

// What tools/list sends for our tools, pinned whole: the one serialiser (tool_json) of the
// one declaration of each tool (its ToolSpec).
TEST(ToolsListTest, EveryToolAsTheServerSendsIt) {
    const tools::ToolRegistry registry;
    nlohmann::json list = nlohmann::json::array();
    std::vector<std::string> names;
    for (const auto& tool : registry.all()) {
        list.push_back(tool_json(tool_info(tool->spec(), false), kProtocol20251125));
        names.emplace_back(tool->name());
    }
    EXPECT_EQ(names, (std::vector<std::string>{"read", "write", "edit", "grep", "glob", "bash",
                                               "process"}));
    stockade::testing::expect_golden("mcp", "tools_list.json", list.dump(2));
    // With --structured-content, each entry also declares its metadata's schema.
    const ToolInfo read = tool_info(registry.find("read")->spec(), true);
    EXPECT_TRUE(tool_json(read, kProtocol20251125).contains("outputSchema"));
    EXPECT_FALSE(list[0].contains("outputSchema"));
    // The modern revision lists the same entries.
    for (const auto& tool : registry.all()) {
        EXPECT_EQ(tool_json(tool_info(tool->spec(), true), kProtocol20260728),
                  tool_json(tool_info(tool->spec(), true), kProtocol20251125));
    }
}

// What an older revision's client is sent of a tool: only what its schema defines.
TEST(ToolsListTest, OlderRevisionsGetOnlyTheFieldsTheyDefine) {
    const ToolInfo tool{.name = "read",
                        .title = "Read",
                        .description = "Reads.",
                        .input_schema = {{"type", "object"}},
                        .output_schema = {{"type", "object"}},
                        .annotations = tools::ToolAnnotations{.read_only = true}};
    const json schema = {{"type", "object"}, {"additionalProperties", false}};
    const json hints = {{"readOnlyHint", true},
                        {"destructiveHint", false},
                        {"idempotentHint", false},
                        {"openWorldHint", false}};
    json with_title = hints;
    with_title["title"] = "Read";
    EXPECT_EQ(tool_json(tool, kProtocol20250618), json({{"name", "read"},
                                                        {"title", "Read"},
                                                        {"description", "Reads."},
                                                        {"inputSchema", schema},
                                                        {"outputSchema", {{"type", "object"}}},
                                                        {"annotations", hints}}));
    // 2025-03-26: no outputSchema, and the title is the annotations' (Tool has none).
    EXPECT_EQ(tool_json(tool, kProtocol20250326), json({{"name", "read"},
                                                        {"description", "Reads."},
                                                        {"inputSchema", schema},
                                                        {"annotations", with_title}}));
    // 2024-11-05: no annotations at all.
    EXPECT_EQ(tool_json(tool, kProtocol20241105),
              json({{"name", "read"}, {"description", "Reads."}, {"inputSchema", schema}}));
}

}  // namespace
}  // namespace stockade::mcp
