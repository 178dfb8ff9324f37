#include "common/log.h"

#include <chrono>
#include <random>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/ostream_sink.h>

namespace stockade::log {
namespace {

using nlohmann::json;

// 2026-12-02T15:40:08.007Z
const spdlog::log_clock::time_point kTime{std::chrono::milliseconds(1796226008007)};

std::string format_json(std::string_view payload, std::string_view module = "runner",
                        spdlog::level::level_enum level = spdlog::level::info) {
    auto formatter = make_json_formatter();
    spdlog::details::log_msg msg(kTime, spdlog::source_loc{},
                                 spdlog::string_view_t(module.data(), module.size()), level,
                                 spdlog::string_view_t(payload.data(), payload.size()));
    spdlog::memory_buf_t buf;
    formatter->format(msg, buf);
    return {buf.data(), buf.size()};
}

// The record of `payload`, which must be one line of valid JSON.
json record(std::string_view payload) {
    const std::string line = format_json(payload);
    EXPECT_FALSE(line.empty());
    EXPECT_EQ(line.back(), '\n');
    EXPECT_EQ(line.find('\n'), line.size() - 1) << line;
    return json::parse(line);  // throws on invalid JSON (or invalid UTF-8)
}

TEST(LogTest, ParseFormat) {
    EXPECT_EQ(parse_format("text"), Format::kText);
    EXPECT_EQ(parse_format("json"), Format::kJson);
    EXPECT_EQ(parse_format("JSON"), std::nullopt);
    EXPECT_EQ(parse_format(""), std::nullopt);
}

// The switch goes through the shared sink: a logger taken before it follows it.
TEST(LogTest, SetFormatSwitchesLoggersAlreadyTaken) {
    auto logger = get("runner");
    set_format(Format::kJson);
    EXPECT_EQ(format(), Format::kJson);
    ::testing::internal::CaptureStderr();
    SPDLOG_LOGGER_ERROR(logger, "switched tenant=alpha");
    set_format(Format::kText);
    SPDLOG_LOGGER_ERROR(logger, "back to text");
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(format(), Format::kText);
    const size_t eol = err.find('\n');
    ASSERT_NE(eol, std::string::npos) << err;
    const json j = json::parse(err.substr(0, eol));
    EXPECT_EQ(j["msg"], "switched");
    EXPECT_EQ(j["tenant"], "alpha");
    EXPECT_NE(err.find(" runner: back to text\n", eol), std::string::npos) << err;
    // A module of no list of ours shares the sink, not spdlog's default logger (on stdout).
    auto other = get("some-module");
    EXPECT_EQ(other->name(), "some-module");
    ASSERT_EQ(other->sinks().size(), 1U);
    EXPECT_EQ(other->sinks()[0], logger->sinks()[0]);
}

TEST(LogTest, SplitLiftsKeyValueTokens) {
    const auto split = split_message("session opened tenant=alpha session=ab12cd id=s-1 dir=/x");
    EXPECT_EQ(split.text, "session opened");
    ASSERT_EQ(split.fields.size(), 4U);
    EXPECT_EQ(split.fields[0].key, "tenant");
    EXPECT_EQ(split.fields[0].value, "alpha");
    EXPECT_EQ(split.fields[1].key, "session");
    EXPECT_EQ(split.fields[1].value, "ab12cd");
    EXPECT_EQ(split.fields[2].value, "s-1");
    EXPECT_EQ(split.fields[3].value, "/x");
}

TEST(LogTest, SplitKeepsTextBetweenPairsInOrder) {
    const auto split = split_message("mcp call end call=7 tool=bash  cancelled   dur_ms=12");
    EXPECT_EQ(split.text, "mcp call end cancelled");
    ASSERT_EQ(split.fields.size(), 3U);
    EXPECT_EQ(split.fields[2].key, "dur_ms");
    EXPECT_EQ(split.fields[2].value, "12");
    // White space between text tokens is kept as it is.
    EXPECT_EQ(split_message("a  b\tc").text, "a  b\tc");
}

// "text key=value key=value": what follows the last pair is the rest of its value, unless the
// value is quoted.
TEST(LogTest, SplitTextAfterTheLastPairEndsItsValue) {
    auto split = split_message("http session failed to open tenant=a why=no such  file \n");
    EXPECT_EQ(split.text, "http session failed to open");
    ASSERT_EQ(split.fields.size(), 2U);
    EXPECT_EQ(split.fields[0].value, "a");
    EXPECT_EQ(split.fields[1].key, "why");
    EXPECT_EQ(split.fields[1].value, "no such  file");

    split = split_message("bad request id=5: short read");
    EXPECT_EQ(split.text, "bad request");
    ASSERT_EQ(split.fields.size(), 1U);
    EXPECT_EQ(split.fields[0].value, "5: short read");

    split = split_message(R"(pruned file="a b" and more)");
    EXPECT_EQ(split.text, "pruned and more");
    ASSERT_EQ(split.fields.size(), 1U);
    EXPECT_EQ(split.fields[0].value, "a b");

    split = split_message("call end x=1 cancelled y=2");
    EXPECT_EQ(split.text, "call end cancelled");
    ASSERT_EQ(split.fields.size(), 2U);
    EXPECT_EQ(split.fields[1].value, "2");
}

TEST(LogTest, SplitKeyGrammar) {
    const auto split = split_message("--flag=x 1a=b =c a.b-c_d=1 _x= y==z");
    EXPECT_EQ(split.text, "--flag=x 1a=b =c");
    ASSERT_EQ(split.fields.size(), 3U);
    EXPECT_EQ(split.fields[0].key, "a.b-c_d");
    EXPECT_EQ(split.fields[1].key, "_x");
    EXPECT_EQ(split.fields[1].value, "");
    EXPECT_EQ(split.fields[2].key, "y");
    EXPECT_EQ(split.fields[2].value, "=z");
}

TEST(LogTest, SplitQuotedValues) {
    const auto split = split_message(
        R"(pruned file="a b.log" bytes=3 why="say \"hi\"\n\\ \x" q="" tail="x"y" end)");
    EXPECT_EQ(split.text, "pruned end");
    ASSERT_EQ(split.fields.size(), 5U);
    EXPECT_EQ(split.fields[0].value, "a b.log");
    EXPECT_EQ(split.fields[1].value, "3");
    EXPECT_EQ(split.fields[2].value, "say \"hi\"\n\\ \\x");
    EXPECT_EQ(split.fields[3].value, "");
    // A quote not before white space is part of the value.
    EXPECT_EQ(split.fields[4].value, "x\"y");
}

TEST(LogTest, SplitUnterminatedQuoteStaysText) {
    const auto split = split_message(R"(bad file="a b c)");
    EXPECT_EQ(split.text, R"(bad file="a b c)");
    EXPECT_TRUE(split.fields.empty());
    EXPECT_TRUE(split_message(R"(x="ends in \")").fields.empty());
}

TEST(LogTest, JsonRecordHasTsLevelModuleMsgAndFields) {
    const std::string line = format_json("session opened tenant=alpha session=ab12cd");
    EXPECT_EQ(line, R"({"ts":"2026-12-02T15:40:08.007Z","level":"info","module":"runner",)"
                    R"("msg":"session opened","tenant":"alpha","session":"ab12cd"})"
                    "\n");
    const json j = json::parse(format_json("x", "sandbox", spdlog::level::warn));
    EXPECT_EQ(j["level"], "warning");
    EXPECT_EQ(j["module"], "sandbox");
}

TEST(LogTest, JsonTimestampIsUtcWithMilliseconds) {
    auto formatter = make_json_formatter();
    spdlog::memory_buf_t buf;
    // Two records in one second, then one in the next: the cached second must not leak.
    for (auto ms : {1796226008007LL, 1796226008999LL, 1796226009000LL, 0LL}) {
        spdlog::details::log_msg msg(spdlog::log_clock::time_point{std::chrono::milliseconds(ms)},
                                     spdlog::source_loc{}, "runner", spdlog::level::info, "m");
        formatter->format(msg, buf);
    }
    std::istringstream lines(std::string(buf.data(), buf.size()));
    std::string line;
    std::vector<std::string> ts;
    while (std::getline(lines, line)) {
        ts.push_back(json::parse(line)["ts"].get<std::string>());
    }
    EXPECT_EQ(ts,
              (std::vector<std::string>{"2026-12-02T15:40:08.007Z", "2026-12-02T15:40:08.999Z",
                                        "2026-12-02T15:40:09.000Z", "1970-01-01T00:00:00.000Z"}));
}

TEST(LogTest, JsonMessageWithNoPairs) {
    const json j = record("mcp input closed");
    EXPECT_EQ(j.size(), 4U);
    EXPECT_EQ(j["msg"], "mcp input closed");
    EXPECT_EQ(record("")["msg"], "");
}

TEST(LogTest, JsonClashingKeysGetAPrefix) {
    const json j = record("hello ts=1 level=x module=m msg=hi _msg=u msg=again tenant=a tenant=b");
    EXPECT_EQ(j["ts"], "2026-12-02T15:40:08.007Z");
    EXPECT_EQ(j["level"], "info");
    EXPECT_EQ(j["module"], "runner");
    EXPECT_EQ(j["msg"], "hello");
    EXPECT_EQ(j["_ts"], "1");
    EXPECT_EQ(j["_level"], "x");
    EXPECT_EQ(j["_module"], "m");
    EXPECT_EQ(j["_msg"], "hi");
    EXPECT_EQ(j["__msg"], "u");
    EXPECT_EQ(j["___msg"], "again");
    EXPECT_EQ(j["tenant"], "a");
    EXPECT_EQ(j["_tenant"], "b");
}

TEST(LogTest, JsonEscapesQuotesAndControlCharacters) {
    const std::string payload =
        std::string("a\"b\\c\x01\x1f\x7f\ttab\nline ") + "k=\"v\\n\"" + std::string(" z=\0y", 5);
    const json j = record(payload);
    EXPECT_EQ(j["msg"], "a\"b\\c\x01\x1f\x7f\ttab\nline");
    EXPECT_EQ(j["k"], "v\n");
    EXPECT_EQ(j["z"], std::string("\0y", 2));
}

TEST(LogTest, JsonReplacesInvalidUtf8) {
    const json j = record("bad \xff\xfe name=\xc0\x80x ok=h\xc3\xa9");
    EXPECT_EQ(j["msg"], "bad \xEF\xBF\xBD\xEF\xBF\xBD");
    EXPECT_EQ(j["name"], "\xEF\xBF\xBD\xEF\xBF\xBDx");
    EXPECT_EQ(j["ok"], "h\xc3\xa9");
    EXPECT_EQ(json::parse(format_json("m", "mod\xff"))["module"], "mod\xEF\xBF\xBD");
}

// Whatever the bytes of the message, the record is one line of valid JSON.
TEST(LogTest, JsonAnyBytesGiveOneValidLine) {
    std::mt19937 rng(12345);
    const std::string alphabet = "ab=\" \\\t\n\r\x01\x7f\xc3\xa9\xff\xe2\x82";
    std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
    std::uniform_int_distribution<int> any_byte(0, 255);
    std::uniform_int_distribution<int> length(0, 40);
    for (int round = 0; round < 2000; ++round) {
        std::string payload;
        const int n = length(rng);
        for (int k = 0; k < n; ++k) {
            payload += round % 2 == 0 ? alphabet[pick(rng)] : static_cast<char>(any_byte(rng));
        }
        EXPECT_NO_THROW(record(payload)) << ::testing::PrintToString(payload);
    }
}

// Through a logger: each call is exactly one line, whatever newlines the message holds.
TEST(LogTest, OneRecordIsOneLine) {
    std::ostringstream out;
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_st>(out);
    sink->set_formatter(make_json_formatter());
    spdlog::logger logger("exec", sink);
    logger.set_level(spdlog::level::info);
    logger.info("first\nwith newline key=\"multi\nline\"");
    logger.warn("second n={}", 2);
    logger.debug("not shown");
    std::istringstream lines(out.str());
    std::string line;
    std::vector<json> records;
    while (std::getline(lines, line)) {
        records.push_back(json::parse(line));
    }
    ASSERT_EQ(records.size(), 2U);
    EXPECT_EQ(records[0]["msg"], "first\nwith newline");
    EXPECT_EQ(records[0]["key"], "multi\nline");
    EXPECT_EQ(records[0]["module"], "exec");
    EXPECT_EQ(records[1]["level"], "warning");
    EXPECT_EQ(records[1]["n"], "2");
}

}  // namespace
}  // namespace stockade::log
