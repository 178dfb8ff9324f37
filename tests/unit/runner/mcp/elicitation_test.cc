#include "runner/mcp/elicitation.h"

#include <chrono>
#include <string>

#include <gtest/gtest.h>

namespace stockade::mcp {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

TEST(McpElicitationTest, FormModeCapability) {
    EXPECT_TRUE(supports_form_elicitation({{"elicitation", json::object()}}));
    EXPECT_TRUE(supports_form_elicitation({{"elicitation", {{"form", json::object()}}}}));
    EXPECT_TRUE(supports_form_elicitation(
        {{"elicitation", {{"form", json::object()}, {"url", json::object()}}}}));
    EXPECT_FALSE(supports_form_elicitation({{"elicitation", {{"url", json::object()}}}}));
    EXPECT_FALSE(supports_form_elicitation({{"elicitation", {{"form", true}}}}));
    EXPECT_FALSE(supports_form_elicitation({{"elicitation", true}}));
    EXPECT_FALSE(supports_form_elicitation({{"sampling", json::object()}}));
    EXPECT_FALSE(supports_form_elicitation(json::object()));
    EXPECT_FALSE(supports_form_elicitation(nullptr));
}

TEST(McpElicitationTest, ParamsFillInTheObjectSchema) {
    auto params =
        elicit_params({.message = "Go?", .requested_schema = nullptr, .timeout = 1s}, "2025-11-25");
    ASSERT_TRUE(params);
    EXPECT_EQ(*params,
              json({{"mode", "form"},
                    {"message", "Go?"},
                    {"requestedSchema", {{"type", "object"}, {"properties", json::object()}}}}));
    params = elicit_params({.message = "Go?", .requested_schema = json::object(), .timeout = 1s},
                           "2025-06-18");
    ASSERT_TRUE(params);
    EXPECT_FALSE(params->contains("mode")) << "2025-06-18 has no mode";
}

TEST(McpElicitationTest, ParamsRefuseWhatAFormCannotShow) {
    const json bad_schemas[] = {
        "a string",
        {{"type", "array"}},
        {{"type", "object"}, {"properties", {1, 2}}},
        {{"type", "object"}, {"properties", {{"x", {{"type", "object"}}}}}},
        {{"type", "object"}, {"properties", {{"x", "string"}}}},
        {{"type", "object"}, {"properties", {{"x", {{"type", "array"}}}}}},
        {{"type", "object"}, {"properties", {{"x", {{"type", "string"}}}}}, {"required", "x"}},
        {{"type", "object"}, {"properties", {{"x", {{"type", "string"}}}}}, {"required", {"y"}}},
    };
    for (const auto& schema : bad_schemas) {
        auto params = elicit_params({.message = "m", .requested_schema = schema, .timeout = 1s},
                                    "2025-11-25");
        ASSERT_FALSE(params) << schema;
        EXPECT_EQ(params.error().code, Errc::kInvalidArgument);
    }
}

const json kSchema = {
    {"type", "object"},
    {"properties",
     {{"name", {{"type", "string"}}},
      {"color", {{"type", "string"}, {"oneOf", {{{"const", "red"}, {"title", "Red"}}}}}},
      {"count", {{"type", "integer"}}},
      {"ratio", {{"type", "number"}}},
      {"ok", {{"type", "boolean"}}},
      {"tags", {{"type", "array"}, {"items", {{"type", "string"}, {"enum", {"a", "b"}}}}}}}},
    {"required", {"name"}}};

TEST(McpElicitationTest, AcceptedContentOfEveryPrimitiveType) {
    auto response = parse_elicit_result({{"action", "accept"},
                                         {"content",
                                          {{"name", "n"},
                                           {"color", "red"},
                                           {"count", 3.0},
                                           {"ratio", 0.5},
                                           {"ok", false},
                                           {"tags", {"b", "a"}},
                                           {"extra", "dropped"}}}},
                                        kSchema);
    ASSERT_TRUE(response) << response.error().message;
    EXPECT_TRUE(response->accepted());
    EXPECT_EQ(response->content, json({{"name", "n"},
                                       {"color", "red"},
                                       {"count", 3.0},
                                       {"ratio", 0.5},
                                       {"ok", false},
                                       {"tags", {"b", "a"}}}));
}

TEST(McpElicitationTest, MalformedResultsAreRejected) {
    const json bad_results[] = {
        nullptr,
        {{"action", "ACCEPT"}},
        {{"content", {{"name", "n"}}}},
        {{"action", "accept"}},  // required "name" missing
        {{"action", "accept"}, {"content", {{"name", 1}}}},
        {{"action", "accept"}, {"content", {{"name", "n"}, {"color", "blue"}}}},
        {{"action", "accept"}, {"content", {{"name", "n"}, {"count", 2.5}}}},
        {{"action", "accept"}, {"content", {{"name", "n"}, {"ratio", "1"}}}},
        {{"action", "accept"}, {"content", {{"name", "n"}, {"ok", "true"}}}},
        {{"action", "accept"}, {"content", {{"name", "n"}, {"tags", {"c"}}}}},
        {{"action", "accept"}, {"content", {{"name", "n"}, {"tags", "a"}}}},
        {{"action", "accept"}, {"content", {"name", "n"}}},
    };
    for (const auto& result : bad_results) {
        auto response = parse_elicit_result(result, kSchema);
        ASSERT_FALSE(response) << result;
        EXPECT_EQ(response.error().code, Errc::kInvalidArgument);
    }
}

TEST(McpElicitationTest, DeclineAndCancelDropTheContent) {
    for (const char* action : {"decline", "cancel"}) {
        auto response = parse_elicit_result({{"action", action}, {"content", "junk"}}, kSchema);
        ASSERT_TRUE(response);
        EXPECT_EQ(response->action, action);
        EXPECT_TRUE(response->content.is_null());
    }
}

TEST(McpElicitationTest, InputRequestKeysFollowTheQuestion) {
    const json a = {{"message", "a"}};
    EXPECT_EQ(input_request_key(a), input_request_key(json({{"message", "a"}})));
    EXPECT_NE(input_request_key(a), input_request_key(json({{"message", "b"}})));
    EXPECT_TRUE(input_request_key(a).starts_with("stockade-elicit-"));
}

TEST(McpElicitationTest, RequestStateRoundTripsAndRejectsEverythingElse) {
    std::array<unsigned char, 32> key{};
    key.fill(7);
    const RequestStateSealer sealer(key);
    const json args = {{"command", "ls"}};
    const json answers = {{"k", {{"action", "accept"}}}};
    const std::string state = sealer.seal("bash", args, answers, 1h);

    auto opened = sealer.open(state, "bash", args);
    ASSERT_TRUE(opened) << opened.error().message;
    EXPECT_EQ(*opened, answers);

    EXPECT_FALSE(sealer.open(state, "read", args));
    EXPECT_FALSE(sealer.open(state, "bash", json({{"command", "rm"}})));
    EXPECT_FALSE(sealer.open(sealer.seal("bash", args, answers, -1ms), "bash", args));
    EXPECT_FALSE(RequestStateSealer().open(state, "bash", args)) << "another key";
    EXPECT_FALSE(sealer.open("", "bash", args));
    EXPECT_FALSE(sealer.open("v1.zz", "bash", args));
    std::string tampered = state;
    tampered.back() = ' ';
    EXPECT_FALSE(sealer.open(tampered, "bash", args));
    const std::string forged = "v1." + std::string(64, '0') + state.substr(3 + 64);
    EXPECT_FALSE(sealer.open(forged, "bash", args));
}

}  // namespace
}  // namespace stockade::mcp
