#include "tools/text.h"

#include <gtest/gtest.h>

namespace stockade::tools {
namespace {

TEST(TextTest, TruncateCharsCountsCodePoints) {
    bool cut = false;
    EXPECT_EQ(truncate_chars("\u00e9\u00e9\u00e9", 2, "\u2026", &cut), "\u00e9\u00e9\u2026");
    EXPECT_TRUE(cut);
    EXPECT_EQ(truncate_chars("abc", 3, "\u2026", &cut), "abc");
    EXPECT_FALSE(cut);
}

TEST(TextTest, SplitLinesTreatsAFinalNewlineAsAnEnd) {
    EXPECT_EQ(split_lines("a\nb\n"), (std::vector<std::string_view>{"a", "b"}));
    EXPECT_EQ(split_lines("a\nb"), (std::vector<std::string_view>{"a", "b"}));
    EXPECT_EQ(split_lines("a\n\n"), (std::vector<std::string_view>{"a", ""}));
    EXPECT_TRUE(split_lines("").empty());
    EXPECT_EQ(count_lines("a\nb\n"), 2U);
    EXPECT_EQ(count_lines("a"), 1U);
    EXPECT_EQ(count_lines(""), 0U);
    EXPECT_EQ(count_lines("\n"), 1U);
}

TEST(TextTest, ShapeDetectionAndRoundTrip) {
    const std::string crlf =
        "\xEF\xBB\xBF"
        "a\r\nb\r\n";
    const TextShape shape = detect_shape(crlf);
    EXPECT_TRUE(shape.bom);
    EXPECT_TRUE(shape.crlf);
    EXPECT_FALSE(shape.mixed);
    const std::string norm = normalize_text(crlf, shape);
    EXPECT_EQ(norm, "a\nb\n");
    EXPECT_EQ(restore_shape(norm, shape), crlf);

    const TextShape mixed = detect_shape("a\r\nb\n");
    EXPECT_FALSE(mixed.crlf);
    EXPECT_TRUE(mixed.mixed);
    EXPECT_EQ(normalize_text("a\r\nb\n", mixed), "a\r\nb\n");
    // A lone CR inside a CRLF file survives the round trip.
    const std::string cr = "x\r\r\ny\r\n";
    EXPECT_EQ(restore_shape(normalize_text(cr, detect_shape(cr)), detect_shape(cr)), cr);
}

TEST(TextTest, NumberLineUsesSixColumnsAndAnArrow) {
    EXPECT_EQ(number_line(1, "/**"), "     1\u2192/**");
    EXPECT_EQ(number_line(2000, "}"), "  2000\u2192}");
    EXPECT_EQ(number_line(1234567, "x"), "1234567\u2192x");
    EXPECT_EQ(number_lines({"a", "b"}, 141), "   141\u2192a\n   142\u2192b");
}

TEST(TextTest, HumanCountsAndSizes) {
    EXPECT_EQ(with_thousands(0), "0");
    EXPECT_EQ(with_thousands(1842), "1,842");
    EXPECT_EQ(with_thousands(1234567), "1,234,567");
    EXPECT_EQ(count_of(1, "line", "lines"), "1 line");
    EXPECT_EQ(count_of(2000, "line", "lines"), "2,000 lines");
    EXPECT_EQ(format_size(1), "1 byte");
    EXPECT_EQ(format_size(512), "512 bytes");
    EXPECT_EQ(format_size(12 * 1024 + 400), "12 KB");
    EXPECT_EQ(format_size(58 * 1024), "58 KB");
    EXPECT_EQ(format_size(1536), "1.5 KB");
    EXPECT_EQ(format_size(10ULL << 20), "10 MB");
}

TEST(TextTest, QuoteEscapesLikeACLiteral) {
    EXPECT_EQ(quote("\tconst budget ="), "\"\\tconst budget =\"");
    EXPECT_EQ(quote("say \"hi\"\\"), "\"say \\\"hi\\\"\\\\\"");
    EXPECT_EQ(quote("abcdef", 3), "\"abc\u2026\"");
    EXPECT_EQ(quote(std::string("\x01", 1)), "\"\\x01\"");
}

// ---- Inert text ----------------------------------------------------------------------------

TEST(EscapeControlsTest, TerminalSequencesBecomeVisibleText) {
    // OSC 52 (clipboard write), OSC 0 (window title) ended by BEL, and CSI 2J (clear screen).
    EXPECT_EQ(escape_controls("\x1b]52;c;cHduZWQ=\x07 \x1b]0;owned\x1b\\ \x1b[2J"),
              "\\x1b]52;c;cHduZWQ=\\x07 \\x1b]0;owned\\x1b\\ \\x1b[2J");
    EXPECT_EQ(escape_controls("del\x7f"), "del\\x7f");
    EXPECT_EQ(escape_controls(std::string("nul\0end", 7)), "nul\\x00end");
}

TEST(EscapeControlsTest, NewlineAndTabAreKeptAndALoneCarriageReturnIsNot) {
    EXPECT_EQ(escape_controls("a\tb\nc\n"), "a\tb\nc\n");
    EXPECT_EQ(escape_controls("progress 10%\rprogress 99%\r\n"),
              "progress 10%\\x0dprogress 99%\\x0d\n");
    EXPECT_EQ(escape_controls("a\tb\nc", LineBreaks::kEscape), "a\\x09b\\x0ac");
}

TEST(EscapeControlsTest, C1ControlsAreEscapedAsCodePoints) {
    // U+009B is the 8-bit CSI; U+0085 NEL. U+00A0 (no-break space) is not a control.
    EXPECT_EQ(escape_controls("\u009b2J \u0085 \u00a0 \u00e9"), "\\u009b2J \\u0085 \u00a0 \u00e9");
    // A lone 8-bit C1 byte is invalid UTF-8: it becomes U+FFFD, never a raw 0x9b.
    EXPECT_EQ(escape_controls("x\x9b"
                              "2J"),
              "x\uFFFD2J");
}

TEST(EscapeControlsTest, PlainTextIsUnchangedAndEscapingIsIdempotent) {
    const std::string plain = "int main() {\n\treturn 0; // \u2192 \\x1b stays text\n}\n";
    EXPECT_FALSE(has_control_chars(plain));
    EXPECT_EQ(escape_controls(plain), plain);
    const std::string once = escape_controls("\x1b[31mred\x1b[0m\r\u009b");
    EXPECT_FALSE(has_control_chars(once, LineBreaks::kEscape));
    EXPECT_EQ(escape_controls(once), once);
    EXPECT_TRUE(has_control_chars("\x1b"));
    EXPECT_TRUE(has_control_chars("\u0090"));
    EXPECT_FALSE(has_control_chars("\n\t"));
    EXPECT_TRUE(has_control_chars("\n", LineBreaks::kEscape));
}

// The scan takes eight bytes at a time: a control is found at every offset of a long text,
// and a C2 that starts no C1 control (U+00A0..) is none, wherever the word ends.
TEST(EscapeControlsTest, ControlsAreFoundAtEveryOffset) {
    const std::string plain(40, 'a');
    for (size_t at = 0; at < plain.size(); ++at) {
        for (const std::string control : {"\x1b", "\x7f", "\r", "\u0085"}) {
            std::string text = plain;
            text.replace(at, 1, control);
            EXPECT_TRUE(has_control_chars(text)) << at;
        }
        std::string nbsp = plain;
        nbsp.replace(at, 1, "\u00a0");
        EXPECT_FALSE(has_control_chars(nbsp)) << at;
        std::string newline = plain;
        newline[at] = '\n';
        EXPECT_FALSE(has_control_chars(newline)) << at;
        EXPECT_TRUE(has_control_chars(newline, LineBreaks::kEscape)) << at;
    }
    EXPECT_FALSE(has_control_chars(plain + "\xc2"));  // a lone C2 at the end: no C1 control
}

TEST(ListedNameTest, PlainNamesAreShownAsTheyAre) {
    EXPECT_EQ(listed_name("src/kernel/agent.ts"), "src/kernel/agent.ts");
    EXPECT_EQ(listed_name("with space/\u00e9t\u00e9 \"quoted\".txt"),
              "with space/\u00e9t\u00e9 \"quoted\".txt");
    EXPECT_TRUE(is_plain_name("a\\b"));
}

TEST(ListedNameTest, OtherNamesAreJsonStringLiterals) {
    EXPECT_EQ(listed_name("escape\nPASS forged-line"), "\"escape\\nPASS forged-line\"");
    EXPECT_EQ(listed_name("\x1b]0;title\x07.txt"), "\"\\u001b]0;title\\u0007.txt\"");
    EXPECT_EQ(listed_name("tab\there\r\b\f\x7f"), "\"tab\\there\\r\\b\\f\\u007f\"");
    EXPECT_EQ(listed_name("c1\u009b.txt"), "\"c1\\u009b.txt\"");
    // A leading quote would read as a quoted name; quotes and backslashes inside are escaped.
    EXPECT_EQ(listed_name("\"a\\nb\""), "\"\\\"a\\\\nb\\\"\"");
    EXPECT_EQ(listed_name("bad\xff"), "\"bad\uFFFD\"");
    // What the model pastes back into its JSON arguments names the same file.
    const std::string name = "escape\nPASS \x1b[2J \"x\" \\ \u009b";
    EXPECT_EQ(nlohmann::json::parse(listed_name(name)).get<std::string>(), name);
}

TEST(TextTest, OmissionMarkerMatchesTheSeed) {
    EXPECT_EQ(
        omission_marker(1842, 58 * 1024, "/s/bash-toolu_9.txt"),
        "[... 1,842 lines omitted (58 KB). Full output: /s/bash-toolu_9.txt \u2014 read or grep "
        "that file for the rest.]");
    EXPECT_EQ(omission_marker(1, 10, ""), "[... 1 line omitted (10 bytes).]");
}

std::string numbered(int n) {
    std::string s;
    for (int i = 1; i <= n; ++i) {
        s += "line " + std::to_string(i) + "\n";
    }
    return s;
}

TEST(TextTest, MiddleOutKeepsExactHeadAndTailLines) {
    const std::string text = numbered(1000);
    const TruncateLimits limits{
        .max_lines = 400, .max_bytes = 30 * 1024, .head_lines = 250, .tail_lines = 150};
    ASSERT_TRUE(exceeds(text, limits));
    const Truncated t = truncate_middle_out(text, limits, "/spill/x.txt");
    EXPECT_EQ(t.info.original_lines, 1000U);
    EXPECT_EQ(t.info.original_bytes, text.size());
    EXPECT_EQ(t.info.shown_head_lines, 250U);
    EXPECT_EQ(t.info.shown_tail_lines, 150U);
    EXPECT_EQ(t.info.omitted_lines, 600U);
    const std::vector<std::string_view> lines = split_lines(t.text);
    ASSERT_EQ(lines.size(), 401U);
    EXPECT_EQ(lines[249], "line 250");
    EXPECT_TRUE(lines[250].starts_with("[... 600 lines omitted ("));
    EXPECT_TRUE(lines[250].ends_with(
        "Full output: /spill/x.txt \u2014 read or grep that file for the rest.]"));
    EXPECT_EQ(lines[251], "line 851");
    EXPECT_EQ(lines[400], "line 1000");
    EXPECT_EQ(t.info.to_json()["spill_path"], "/spill/x.txt");
}

TEST(TextTest, MiddleOutHonoursTheByteLimit) {
    const std::string text = numbered(300);  // fewer lines than the limit, too many bytes
    const TruncateLimits limits{
        .max_lines = 400, .max_bytes = 1024, .head_lines = 250, .tail_lines = 150};
    const Truncated t = truncate_middle_out(text, limits, "");
    EXPECT_LE(t.text.size(), 1024U);
    EXPECT_TRUE(t.text.starts_with("line 1\n"));
    EXPECT_TRUE(t.text.ends_with("line 300\n"));
    EXPECT_EQ(t.info.shown_head_lines + t.info.shown_tail_lines + t.info.omitted_lines, 300U);
}

TEST(TextTest, MiddleOutCutsASingleHugeLineAtACodePoint) {
    std::string text;
    for (int i = 0; i < 50000; ++i) {
        text += "\u00e9";
    }
    const TruncateLimits limits{
        .max_lines = 10, .max_bytes = 1000, .head_lines = 6, .tail_lines = 4};
    const Truncated t = truncate_middle_out(text, limits, "");
    EXPECT_LE(t.text.size(), 1000U);
    EXPECT_TRUE(is_valid_utf8(t.text));
    EXPECT_NE(t.text.find("[... 1 line omitted"), std::string::npos);
}

TEST(TextTest, MiddleOutLeavesShortTextAlone) {
    const TruncateLimits limits{
        .max_lines = 10, .max_bytes = 1000, .head_lines = 6, .tail_lines = 4};
    EXPECT_EQ(truncate_middle_out("a\nb\n", limits, "").text, "a\nb\n");
}

}  // namespace
}  // namespace stockade::tools
