#include <gtest/gtest.h>

#include "tests/testing/matchers.h"
#include "tests/unit/tools/tool_harness.h"
#include "tools/text.h"

namespace stockade::tools {
namespace {

using stockade::testing::HasErrc;
using stockade::testing::IsOk;
using testing::expect_golden;
using testing::ToolHarness;

std::string prose(const Tool& tool, const nlohmann::json& args) {
    Status s = validate_arguments(tool.spec(), args);
    EXPECT_THAT(s, HasErrc(Errc::kInvalidArgument));
    return s ? std::string() : s.error().message;
}

TEST(RegistryTest, FiveToolsInToolsListOrder) {
    std::vector<std::string> names;
    for (const auto& t : make_file_tools()) {
        names.emplace_back(t->name());
    }
    EXPECT_EQ(names, (std::vector<std::string>{"read", "write", "edit", "grep", "glob"}));
}

TEST(RegistryTest, SchemasAreClosedObjectsWithAtMostFiveSnakeCaseParameters) {
    for (const auto& t : make_file_tools()) {
        const nlohmann::json s = t->input_schema();
        EXPECT_EQ(s["type"], "object") << t->name();
        EXPECT_EQ(s["additionalProperties"], false) << t->name();
        EXPECT_LE(s["properties"].size(), 5U) << t->name();
        for (const auto& [name, prop] : s["properties"].items()) {
            EXPECT_EQ(name.find_first_not_of("abcdefghijklmnopqrstuvwxyz_"), std::string::npos)
                << name;
            EXPECT_TRUE(prop.contains("description")) << name;
        }
        for (const auto& r : s["required"]) {
            EXPECT_TRUE(s["properties"].contains(r.get<std::string>())) << r;
        }
    }
}

TEST(RegistryTest, AnnotationsMarkReadOnlyAndDestructiveTools) {
    for (const auto& t : make_file_tools()) {
        const bool reads = t->name() == "read" || t->name() == "grep" || t->name() == "glob";
        EXPECT_EQ(t->annotations().read_only, reads) << t->name();
        EXPECT_EQ(t->annotations().destructive, !reads) << t->name();
    }
}

class ValidateTest : public ::testing::Test {
protected:
    ToolHarness h;
};

TEST_F(ValidateTest, MissingRequiredParameterUsesTheSeedsSentence) {
    EXPECT_EQ(prose(h.tool("edit"), {{"file_path", "a"}, {"new_string", "b"}}),
              "Invalid input for tool \"edit\": parameter \"old_string\" is required. Please "
              "rewrite the input so it satisfies the expected schema.");
}

TEST_F(ValidateTest, RepairProseGolden) {
    std::string all;
    all += prose(h.tool("edit"), {{"file_path", "a"}, {"new_string", "b"}}) + "\n";
    all += prose(h.tool("read"), {{"path", "a.txt"}}) + "\n";
    all += prose(h.tool("read"), {{"file_path", "a.txt"}, {"offset", "10"}}) + "\n";
    all += prose(h.tool("read"), {{"file_path", "a.txt"}, {"ofset", 10}}) + "\n";
    all += prose(h.tool("edit"), {{"file_path", "a"},
                                  {"old_string", "x"},
                                  {"new_string", "y"},
                                  {"replace_all", "yes"}}) +
           "\n";
    all += prose(h.tool("grep"), nlohmann::json::array({"x"})) + "\n";
    all += prose(h.tool("write"), {{"file_path", 7}, {"content", "x"}});
    expect_golden("validate_repair_prose.txt", all);
}

TEST_F(ValidateTest, ValidInputsPass) {
    EXPECT_THAT(validate_arguments(h.tool("read").spec(), {{"file_path", "a"}}), IsOk());
    EXPECT_THAT(validate_arguments(h.tool("read").spec(), {{"file_path", "a"}, {"offset", 3.0}}),
                IsOk());
    EXPECT_THAT(validate_arguments(h.tool("read").spec(), {{"file_path", "a"}, {"limit", nullptr}}),
                IsOk());
    EXPECT_THAT(validate_arguments(h.tool("grep").spec(), {{"pattern", "x"}, {"include", "*.ts"}}),
                IsOk());
}

TEST_F(ValidateTest, NonIntegralNumberIsNotAnInteger) {
    EXPECT_THAT(validate_arguments(h.tool("read").spec(), {{"file_path", "a"}, {"offset", 2.5}}),
                HasErrc(Errc::kInvalidArgument));
}

TEST_F(ValidateTest, NullForARequiredParameterIsMissing) {
    EXPECT_EQ(prose(h.tool("grep"), {{"pattern", nullptr}}),
              "Invalid input for tool \"grep\": parameter \"pattern\" is required. Please rewrite "
              "the input so it satisfies the expected schema.");
}

// ---- Backstop ------------------------------------------------------------------------------

TEST(BackstopTest, ContentAbove64KBIsCutMiddleOutAndSpilled) {
    ToolHarness h;
    ToolResult r;
    for (int i = 0; i < 20000; ++i) {
        r.content += "output line " + std::to_string(i) + "\n";
    }
    const std::string full = r.content;
    apply_backstop(r, h.ctx, "bash");
    EXPECT_LE(r.content.size(), kBackstopBytes);
    EXPECT_TRUE(r.content.starts_with("output line 0\n"));
    EXPECT_TRUE(r.content.ends_with("output line 19999\n"));
    EXPECT_NE(
        r.content.find("Full output: /state/tool-output/s1/bash-result-call1.txt \u2014 read or "
                       "grep that file for the rest.]"),
        std::string::npos);
    EXPECT_EQ(h.ws.get("bash-result-call1.txt", workspace::Root::kSpill), full);
    const nlohmann::json& t = r.metadata["truncation"];
    EXPECT_EQ(t["original_bytes"], full.size());
    EXPECT_EQ(t["original_lines"], 20000);
    EXPECT_EQ(t["shown_head_lines"].get<uint64_t>() + t["shown_tail_lines"].get<uint64_t>() +
                  t["omitted_lines"].get<uint64_t>(),
              20000U);
}

TEST(BackstopTest, SmallContentIsUntouchedButMadeValidUtf8) {
    ToolHarness h;
    ToolResult r;
    r.content = "fine";
    apply_backstop(r, h.ctx, "read");
    EXPECT_EQ(r.content, "fine");
    EXPECT_FALSE(r.metadata.contains("truncation"));
    r.content = "bad \xFF byte";
    apply_backstop(r, h.ctx, "read");
    EXPECT_EQ(r.content, "bad \uFFFD byte");
}

TEST(BackstopTest, ControlCharactersAreEscapedInTheContentAndTheTitle) {
    ToolHarness h;
    ToolResult r;
    r.content =
        "a\x1b]52;c;aGk=\x07 b\x1b[2J\tc\r\nd\u009b"
        "2J\x7f";
    r.metadata = {{"title", "Read \x1b]0;owned\x07\nline2\tx"}, {"path", "raw\x1b"}};
    apply_backstop(r, h.ctx, "read");
    EXPECT_EQ(r.content, "a\\x1b]52;c;aGk=\\x07 b\\x1b[2J\tc\\x0d\nd\\u009b2J\\x7f");
    EXPECT_EQ(r.metadata["title"], "Read \\x1b]0;owned\\x07\\x0aline2\\x09x");
    EXPECT_EQ(r.metadata["path"], "raw\x1b") << "metadata other than the title is data";
    EXPECT_TRUE(testing::is_inert(r.content));
}

TEST(BackstopTest, TheSpillKeepsTheRawBytesAndTheContentIsEscaped) {
    ToolHarness h;
    ToolResult r;
    for (int i = 0; i < 20000; ++i) {
        r.content += "\x1b[31mline " + std::to_string(i) + "\x1b[0m\n";
    }
    const std::string full = r.content;
    apply_backstop(r, h.ctx, "bash");
    EXPECT_LE(r.content.size(), kBackstopBytes);
    EXPECT_TRUE(testing::is_inert(r.content));
    EXPECT_TRUE(r.content.starts_with("\\x1b[31mline 0\\x1b[0m\n")) << r.content.substr(0, 80);
    EXPECT_EQ(h.ws.get("bash-result-call1.txt", workspace::Root::kSpill), full);
    EXPECT_EQ(r.metadata["truncation"]["original_lines"], 20000);
}

TEST(BackstopTest, OneHugeLineIsCutAtACodePoint) {
    ToolHarness h;
    h.ctx.spill = nullptr;
    ToolResult r;
    for (int i = 0; i < 40000; ++i) {
        r.content += "\u20ac";
    }
    apply_backstop(r, h.ctx, "grep");
    EXPECT_LE(r.content.size(), kBackstopBytes);
    EXPECT_TRUE(is_valid_utf8(r.content));
    EXPECT_NE(r.content.find("[... 1 line omitted ("), std::string::npos);
}

}  // namespace
}  // namespace stockade::tools
