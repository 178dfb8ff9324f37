#include "runner/mcp/jsonrpc.h"

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <variant>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace stockade::mcp::jsonrpc {
namespace {

using nlohmann::json;

Message decode_ok(std::string_view text) {
    auto decoded = decode(text);
    if (auto* failure = std::get_if<DecodeFailure>(&decoded)) {
        ADD_FAILURE() << "decode failed: " << failure->message;
        return Notification{};
    }
    return std::get<Message>(decoded);
}

DecodeFailure decode_failure(std::string_view text) {
    auto decoded = decode(text);
    if (!std::holds_alternative<DecodeFailure>(decoded)) {
        ADD_FAILURE() << "decode succeeded: " << text;
        return {};
    }
    return std::get<DecodeFailure>(decoded);
}

TEST(JsonRpcDecodeTest, RequestKeepsIdMethodAndParams) {
    auto message =
        decode_ok(R"({"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"cursor":null}})");
    ASSERT_TRUE(std::holds_alternative<Request>(message));
    const auto& request = std::get<Request>(message);
    EXPECT_EQ(request.id, json(7));
    EXPECT_EQ(request.method, "tools/list");
    EXPECT_EQ(request.params, json({{"cursor", nullptr}}));
}

TEST(JsonRpcDecodeTest, StringIdsAndNegativeIntegerIdsAreValid) {
    EXPECT_EQ(std::get<Request>(decode_ok(R"({"jsonrpc":"2.0","id":"a-1","method":"ping"})")).id,
              json("a-1"));
    EXPECT_EQ(std::get<Request>(decode_ok(R"({"jsonrpc":"2.0","id":-3,"method":"ping"})")).id,
              json(-3));
}

TEST(JsonRpcDecodeTest, MessageWithoutIdIsNotification) {
    auto message = decode_ok(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    ASSERT_TRUE(std::holds_alternative<Notification>(message));
    EXPECT_EQ(std::get<Notification>(message).method, "notifications/initialized");
    EXPECT_TRUE(std::get<Notification>(message).params.is_null());
}

TEST(JsonRpcDecodeTest, ResultAndErrorAreResponses) {
    auto result = decode_ok(R"({"jsonrpc":"2.0","id":1,"result":{}})");
    ASSERT_TRUE(std::holds_alternative<Response>(result));
    EXPECT_EQ(std::get<Response>(result).result, json::object());
    auto error = decode_ok(R"({"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"x"}})");
    ASSERT_TRUE(std::holds_alternative<Response>(error));
    EXPECT_TRUE(std::get<Response>(error).id.is_null());
}

TEST(JsonRpcDecodeTest, NullFractionalAndObjectIdsAreInvalidRequests) {
    for (const char* text : {R"({"jsonrpc":"2.0","id":null,"method":"ping"})",
                             R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})",
                             R"({"jsonrpc":"2.0","id":{},"method":"ping"})",
                             R"({"jsonrpc":"2.0","id":true,"method":"ping"})"}) {
        auto failure = decode_failure(text);
        EXPECT_EQ(failure.code, ErrorCode::kInvalidRequest) << text;
        EXPECT_TRUE(failure.id.is_null()) << text;
    }
}

TEST(JsonRpcDecodeTest, WrongVersionIsInvalidRequestWithTheIdWhenReadable) {
    auto failure = decode_failure(R"({"jsonrpc":"1.0","id":"x","method":"ping"})");
    EXPECT_EQ(failure.code, ErrorCode::kInvalidRequest);
    EXPECT_EQ(failure.id, json("x"));
    EXPECT_EQ(decode_failure(R"({"id":2,"method":"ping"})").id, json(2));
}

TEST(JsonRpcDecodeTest, NonStringMethodAndScalarParamsAreInvalidRequests) {
    EXPECT_EQ(decode_failure(R"({"jsonrpc":"2.0","id":1,"method":5})").code,
              ErrorCode::kInvalidRequest);
    EXPECT_EQ(decode_failure(R"({"jsonrpc":"2.0","id":1,"method":"a","params":"x"})").code,
              ErrorCode::kInvalidRequest);
    EXPECT_EQ(decode_failure(R"({"jsonrpc":"2.0","id":1})").code, ErrorCode::kInvalidRequest);
}

TEST(JsonRpcDecodeTest, BatchesAreRejectedAsInvalidRequest) {
    auto failure = decode_failure(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])");
    EXPECT_EQ(failure.code, ErrorCode::kInvalidRequest);
    EXPECT_TRUE(failure.id.is_null());
    EXPECT_NE(failure.message.find("batch"), std::string::npos);
    EXPECT_EQ(decode_failure("[]").code, ErrorCode::kInvalidRequest);
    EXPECT_EQ(decode_failure("42").code, ErrorCode::kInvalidRequest);
}

TEST(JsonRpcDecodeTest, MalformedJsonIsParseError) {
    for (const char* text : {"{", "{not json}", "", R"({"jsonrpc":"2.0"} trailing)", "\xff\xfe"}) {
        auto failure = decode_failure(text);
        EXPECT_EQ(failure.code, ErrorCode::kParseError) << text;
        EXPECT_TRUE(failure.id.is_null());
    }
}

TEST(JsonRpcDecodeTest, InvalidUtf8InsideAStringIsParseError) {
    EXPECT_EQ(decode_failure("{\"jsonrpc\":\"2.0\",\"method\":\"\xc3\x28\"}").code,
              ErrorCode::kParseError);
}

TEST(JsonRpcDecodeTest, DeepNestingIsRejectedBeforeParsing) {
    std::string deep = R"({"jsonrpc":"2.0","id":1,"method":"x","params":{"a":)";
    deep += std::string(kMaxNestingDepth + 10, '[');
    deep += std::string(kMaxNestingDepth + 10, ']');
    deep += "}}";
    EXPECT_EQ(decode_failure(deep).code, ErrorCode::kInvalidRequest);

    std::string brackets_in_string =
        R"({"jsonrpc":"2.0","id":1,"method":")" + std::string(1000, '[') + R"("})";
    EXPECT_TRUE(std::holds_alternative<Message>(decode(brackets_in_string)));
}

TEST(JsonRpcEncodeTest, EncodedMessagesAreOneLineAndRoundTrip) {
    std::string line = encode_result(json(3), {{"text", "a\nb"}});
    EXPECT_EQ(line.find('\n'), std::string::npos);
    EXPECT_EQ(json::parse(line),
              json({{"jsonrpc", "2.0"}, {"id", 3}, {"result", {{"text", "a\nb"}}}}));
}

TEST(JsonRpcEncodeTest, ErrorCarriesCodeMessageAndOptionalData) {
    // An id that could not be read is left out (MCP's JSONRPCErrorResponse), never "id": null.
    EXPECT_EQ(
        json::parse(encode_error(nullptr, ErrorCode::kParseError, "Parse error")),
        json({{"jsonrpc", "2.0"}, {"error", {{"code", -32700}, {"message", "Parse error"}}}}));
    EXPECT_EQ(json::parse(encode_error(7, ErrorCode::kMethodNotFound, "m"))["id"], 7);
    EXPECT_EQ(json::parse(encode_error("x", ErrorCode::kUnsupportedProtocolVersion, "m",
                                       {{"a", 1}}))["error"],
              json({{"code", -32022}, {"message", "m"}, {"data", {{"a", 1}}}}));
}

TEST(JsonRpcEncodeTest, InvalidUtf8IsReplacedNotThrown) {
    std::string line =
        encode_notification("notifications/progress", {{"message", std::string("a\xff"
                                                                               "b")}});
    EXPECT_EQ(json::parse(line)["params"]["message"],
              "a\xEF\xBF\xBD"
              "b");
}

TEST(JsonRpcIdTest, TextAndKeyForms) {
    EXPECT_EQ(id_text(json("abc")), "abc");
    EXPECT_EQ(id_text(json(42)), "42");
    EXPECT_NE(id_key(json("42")), id_key(json(42)));
    EXPECT_TRUE(is_valid_id(json(18446744073709551615ULL)));
    EXPECT_FALSE(is_valid_id(json(nullptr)));
}

TEST(JsonRpcDecodeTest, ANumberBeyondADoublesRangeIsAParseErrorAnsweredToItsId) {
    const auto decoded =
        decode(R"({"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"x":1e999}})");
    const auto* failure = std::get_if<DecodeFailure>(&decoded);
    ASSERT_NE(failure, nullptr);
    EXPECT_EQ(failure->code, ErrorCode::kParseError);
    EXPECT_EQ(failure->id, 42);
    EXPECT_THAT(failure->message, ::testing::HasSubstr("number overflow"));
    const auto named = decode(R"({"id":"a","jsonrpc":"2.0","method":"m","params":{"x":-1e400}})");
    EXPECT_EQ(std::get<DecodeFailure>(named).id, "a");
    // An id after the bad number is not reached; a syntax error never guesses one.
    EXPECT_TRUE(std::get<DecodeFailure>(decode(R"({"params":{"x":1e999},"id":7})")).id.is_null());
    EXPECT_TRUE(
        std::get<DecodeFailure>(decode(R"({"jsonrpc":"2.0","id":5,"method":)")).id.is_null());
}

// dump writes strings itself, a run of plain bytes at a time; it must write exactly what
// nlohmann writes with the replace handler, for every kind of byte a string can hold.
std::string random_text(std::mt19937& rng) {
    static const std::vector<std::string> pieces = {"a",
                                                    "Z",
                                                    " ",
                                                    "\"",
                                                    "\\",
                                                    "/",
                                                    "\n",
                                                    "\t",
                                                    "\r",
                                                    "\b",
                                                    "\f",
                                                    std::string(1, '\0'),
                                                    "\x01",
                                                    "\x1b",
                                                    "\x1f",
                                                    "\x7f",
                                                    "\u2192",
                                                    "\u00e9",
                                                    "\U0001F600",
                                                    "\xc2\x9b",
                                                    "\xff",
                                                    "\xc0\xaf",
                                                    "\xed\xa0\x80",
                                                    "\xe2\x86",
                                                    "\x80",
                                                    "\xf4\x90\x80\x80"};
    std::uniform_int_distribution<size_t> length(0, 12);
    std::uniform_int_distribution<size_t> pick(0, pieces.size() - 1);
    std::string text;
    for (size_t n = length(rng); n > 0; --n) {
        text += pieces[pick(rng)];
    }
    return text;
}

json random_value(std::mt19937& rng, int depth) {
    std::uniform_int_distribution<int> kind(0, depth > 3 ? 5 : 7);
    switch (kind(rng)) {
        case 0:
            return nullptr;
        case 1:
            return rng() % 2 == 0;
        case 2:
            return static_cast<int64_t>(rng()) - (int64_t{1} << 31);
        case 3:
            return static_cast<double>(rng()) / 7.0;
        case 4:
            return std::numeric_limits<uint64_t>::max() - rng();
        case 5:
            return random_text(rng);
        case 6: {
            json array = json::array();
            for (int n = static_cast<int>(rng() % 4); n > 0; --n) {
                array.push_back(random_value(rng, depth + 1));
            }
            return array;
        }
        default: {
            json object = json::object();
            for (int n = static_cast<int>(rng() % 4); n > 0; --n) {
                object[random_text(rng)] = random_value(rng, depth + 1);
            }
            return object;
        }
    }
}

TEST(DumpTest, WritesWhatNlohmannWritesForEveryKindOfValue) {
    std::mt19937 rng(20261202);
    for (int i = 0; i < 5000; ++i) {
        const json value = random_value(rng, 0);
        ASSERT_EQ(dump(value), value.dump(-1, ' ', false, json::error_handler_t::replace))
            << "case " << i;
    }
}

TEST(DumpTest, EscapesControlsAndKeepsUtf8) {
    EXPECT_EQ(dump(json("a\"b\\c\n\x01\x7f\u2192")), "\"a\\\"b\\\\c\\n\\u0001\x7f\u2192\"");
    EXPECT_EQ(dump(json("bad \xff")), "\"bad \xef\xbf\xbd\"");
}

}  // namespace
}  // namespace stockade::mcp::jsonrpc
