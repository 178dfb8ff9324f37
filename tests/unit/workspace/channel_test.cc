#include "workspace/channel.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/syscall.h"
#include "tests/testing/fd_leak_checker.h"
#include "tests/testing/matchers.h"
#include "tests/unit/workspace/test_util.h"

namespace stockade::workspace::channel {
namespace {

using nlohmann::json;
using stockade::testing::FdLeakChecker;
using stockade::testing::HasErrc;
using stockade::testing::IsOk;
using testing::bytes_of;
using ::testing::HasSubstr;
using testing::raw_frame;

// encode → decode_frame → decode_request
Result<Request> round_trip(const Request& request) {
    auto encoded = encode_request(request);
    if (!encoded) {
        return std::move(encoded).error();
    }
    auto frame = decode_frame(bytes_of(*encoded));
    if (!frame) {
        return std::move(frame).error();
    }
    return decode_request(*frame);
}

Result<Reply> round_trip(const Reply& reply, Op op) {
    auto encoded = encode_reply(reply);
    if (!encoded) {
        return std::move(encoded).error();
    }
    auto frame = decode_frame(bytes_of(*encoded));
    if (!frame) {
        return std::move(frame).error();
    }
    return decode_reply(*frame, op);
}

Result<Request> decode_request_bytes(const std::string& bytes) {
    auto frame = decode_frame(bytes_of(bytes));
    if (!frame) {
        return std::move(frame).error();
    }
    return decode_request(*frame);
}

Result<Reply> decode_reply_bytes(const std::string& bytes, Op op) {
    auto frame = decode_frame(bytes_of(bytes));
    if (!frame) {
        return std::move(frame).error();
    }
    return decode_reply(*frame, op);
}

const FileInfo kInfo{
    .type = FileType::kFile, .size = 6, .mtime_ns = 1'700'000'000'123'456'789, .mode = 0640};

void expect_info_eq(const FileInfo& a, const FileInfo& b) {
    EXPECT_EQ(a.type, b.type);
    EXPECT_EQ(a.size, b.size);
    EXPECT_EQ(a.mtime_ns, b.mtime_ns);
    EXPECT_EQ(a.mode, b.mode);
}

// ---- Frame layout ---------------------------------------------------------------------------

TEST(ChannelFrameTest, LayoutIsTotalLengthHeaderLengthHeaderPayload) {
    json header = {{"v", 1}};
    auto frame = encode_frame(header, std::string_view("\x00\xffpayload", 9));
    ASSERT_THAT(frame, IsOk());
    const std::string text = R"({"v":1})";
    ASSERT_EQ(frame->size(), 8 + text.size() + 9);
    EXPECT_EQ(static_cast<uint8_t>((*frame)[0]), frame->size());  // little-endian total
    EXPECT_EQ((*frame)[1], 0);
    EXPECT_EQ(static_cast<uint8_t>((*frame)[4]), text.size());
    EXPECT_EQ(frame->substr(8, text.size()), text);
    EXPECT_EQ(frame->substr(8 + text.size()), std::string("\x00\xffpayload", 9));
}

TEST(ChannelFrameTest, FileContentsTravelAsRawPayloadNotJson) {
    std::string content("line\n\"quoted\"\x00\x01\xfe", 16);
    auto encoded = encode_request(Request{9, WriteRequest{.path = "f", .bytes = content}});
    ASSERT_THAT(encoded, IsOk());
    EXPECT_EQ(encoded->substr(encoded->size() - content.size()), content);
    auto frame = decode_frame(bytes_of(*encoded));
    ASSERT_THAT(frame, IsOk());
    EXPECT_FALSE(frame->header.contains("bytes"));
    EXPECT_EQ(frame->payload, content);
}

TEST(ChannelFrameTest, EncodeRefusesFramesAboveTheLimit) {
    std::string big(kMaxFrameBytes, 'x');
    EXPECT_THAT(encode_frame(json::object(), big), HasErrc(Errc::kResourceExhausted));
}

TEST(ChannelFrameTest, StrictEncodingRefusesInvalidUtf8ReplaceEncodingReplacesIt) {
    json header = {{"path", "a\xff"}};
    EXPECT_THAT(encode_frame(header, "", Utf8::kStrict), HasErrc(Errc::kInvalidArgument));
    auto lossy = encode_frame(header, "", Utf8::kReplace);
    ASSERT_THAT(lossy, IsOk());
    auto frame = decode_frame(bytes_of(*lossy));
    ASSERT_THAT(frame, IsOk());
    EXPECT_EQ(frame->header["path"], "a\xef\xbf\xbd");  // U+FFFD
}

struct MalformedFrame {
    const char* name;
    std::string bytes;
    const char* message;
};

class ChannelMalformedFrameTest : public ::testing::TestWithParam<MalformedFrame> {};

TEST_P(ChannelMalformedFrameTest, IsADecodeError) {
    auto frame = decode_frame(bytes_of(GetParam().bytes));
    ASSERT_THAT(frame, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(frame.error().message, HasSubstr(GetParam().message));
}

std::string le32(uint32_t v) {
    std::string s;
    testing::append_le32(s, v);
    return s;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ChannelMalformedFrameTest,
    ::testing::Values(
        MalformedFrame{"Empty", "", "no length prefix"},
        MalformedFrame{"ShortPrefix", std::string("\x08\x00", 2), "no length prefix"},
        MalformedFrame{"TotalBelowLengthFields", le32(4) + le32(0), "shorter than"},
        MalformedFrame{"TotalAboveLimit", le32((24 << 20) + 1) + le32(2) + "{}", "exceeds"},
        MalformedFrame{"TotalMismatch", le32(100) + le32(2) + "{}", "does not match"},
        MalformedFrame{"HeaderLengthBeyondFrame", le32(10) + le32(50) + "{}", "header length 50"},
        MalformedFrame{"InvalidJson", raw_frame(std::string_view(R"({"v":1,"id":)")),
                       "not valid JSON"},
        MalformedFrame{"EmptyHeader", raw_frame(std::string_view("")), "not valid JSON"},
        MalformedFrame{"TrailingGarbage", raw_frame(std::string_view(R"({"v":1} x)")),
                       "not valid JSON"},
        MalformedFrame{"NotAnObject", raw_frame(std::string_view("[1,2]")), "not a JSON object"},
        MalformedFrame{"TooDeep",
                       raw_frame(std::string_view(std::string(64, '[') + std::string(64, ']'))),
                       "nests deeper"},
        MalformedFrame{"InvalidUtf8", raw_frame(std::string_view("{\"p\":\"\xff\"}")),
                       "not valid JSON"}),
    [](const auto& p) { return std::string(p.param.name); });

TEST(ChannelFrameTest, LengthPrefixIsCheckedBeforeAnyBodyIsRead) {
    std::string big = le32(0xFFFFFFFFU);
    auto prefix = bytes_of(big).first<kPrefixBytes>();
    EXPECT_THAT(decode_length_prefix(prefix), HasErrc(Errc::kInvalidArgument));
    std::string ok = le32(20);
    auto body = decode_length_prefix(bytes_of(ok).first<kPrefixBytes>());
    ASSERT_THAT(body, IsOk());
    EXPECT_EQ(*body, 16U);
}

// ---- Requests -------------------------------------------------------------------------------

TEST(ChannelRequestTest, EveryOpRoundTrips) {
    {
        auto r = round_trip(Request{1, HelloArgs{}});
        ASSERT_THAT(r, IsOk());
        EXPECT_EQ(r->id, 1U);
        EXPECT_EQ(op_of(r->args), Op::kHello);
    }
    {
        auto r = round_trip(Request{2, StatArgs{Root::kSpill, "out/x.txt"}});
        ASSERT_THAT(r, IsOk());
        const auto& a = std::get<StatArgs>(r->args);
        EXPECT_EQ(a.root, Root::kSpill);
        EXPECT_EQ(a.path, "out/x.txt");
    }
    {
        auto r = round_trip(Request{3, ReadArgs{Root::kWorkspace, "src/a.cc", 10 << 20}});
        ASSERT_THAT(r, IsOk());
        const auto& a = std::get<ReadArgs>(r->args);
        EXPECT_EQ(a.path, "src/a.cc");
        EXPECT_EQ(a.max_bytes, 10U << 20);
    }
    {
        WriteRequest w{.root = Root::kWorkspace,
                       .path = "n/f",
                       .bytes = std::string("a\0b", 3),
                       .mode = 0600,
                       .make_parents = false};
        auto r = round_trip(Request{4, w});
        ASSERT_THAT(r, IsOk());
        const auto& a = std::get<WriteRequest>(r->args);
        EXPECT_EQ(a.path, "n/f");
        EXPECT_EQ(a.bytes, std::string("a\0b", 3));
        EXPECT_EQ(a.mode, std::optional<uint32_t>(0600));
        EXPECT_FALSE(a.make_parents);
        w.mode.reset();
        auto no_mode = round_trip(Request{5, w});
        ASSERT_THAT(no_mode, IsOk());
        EXPECT_FALSE(std::get<WriteRequest>(no_mode->args).mode.has_value());
    }
    {
        auto r = round_trip(Request{6, MkdirsArgs{Root::kWorkspace, "a/b/c"}});
        ASSERT_THAT(r, IsOk());
        EXPECT_EQ(std::get<MkdirsArgs>(r->args).path, "a/b/c");
    }
    {
        auto r = round_trip(Request{7, ListArgs{Root::kWorkspace, "", 1000}});
        ASSERT_THAT(r, IsOk());
        EXPECT_EQ(std::get<ListArgs>(r->args).path, "");
        EXPECT_EQ(std::get<ListArgs>(r->args).max_entries, 1000U);
    }
    {
        RgRequest rg{.root = Root::kSpill,
                     .args = {"--json", "-e", "a\"b"},
                     .max_output_bytes = 1234,
                     .timeout = std::chrono::milliseconds(1500)};
        auto r = round_trip(Request{UINT64_MAX, rg});
        ASSERT_THAT(r, IsOk());
        EXPECT_EQ(r->id, UINT64_MAX);
        const auto& a = std::get<RgRequest>(r->args);
        EXPECT_EQ(a.root, Root::kSpill);
        EXPECT_EQ(a.args, rg.args);
        EXPECT_EQ(a.max_output_bytes, 1234U);
        EXPECT_EQ(a.timeout, std::chrono::milliseconds(1500));
    }
}

TEST(ChannelRequestTest, EncodeRefusesRequestsOutsideTheLimits) {
    EXPECT_THAT(encode_request(Request{1, StatArgs{Root::kWorkspace, std::string("a\0b", 3)}}),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(encode_request(Request{1, StatArgs{Root::kWorkspace, "bad\xff"}}),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(encode_request(Request{1, ReadArgs{Root::kWorkspace, "a", kMaxPayloadBytes + 1}}),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(encode_request(Request{
                    1, WriteRequest{.path = "a", .bytes = std::string(kMaxPayloadBytes + 1, 'x')}}),
                HasErrc(Errc::kResourceExhausted));
    EXPECT_THAT(encode_request(Request{1, ListArgs{Root::kWorkspace, "", kMaxListEntries + 1}}),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(encode_request(Request{1, RgRequest{.args = {std::string("a\0", 2)}}}),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(encode_request(Request{1, RgRequest{.timeout = std::chrono::milliseconds(0)}}),
                HasErrc(Errc::kInvalidArgument));
}

struct MalformedMessage {
    const char* name;
    json header;
    std::string payload;
    const char* message;
};

class ChannelMalformedRequestTest : public ::testing::TestWithParam<MalformedMessage> {};

TEST_P(ChannelMalformedRequestTest, IsADecodeError) {
    auto r = decode_request_bytes(raw_frame(GetParam().header, GetParam().payload));
    ASSERT_THAT(r, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(r.error().message, HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ChannelMalformedRequestTest,
    ::testing::Values(
        MalformedMessage{"MissingVersion", {{"id", 1}, {"op", "hello"}}, "", "\"v\" is missing"},
        MalformedMessage{"MissingId", {{"v", 1}, {"op", "hello"}}, "", "\"id\" is missing"},
        MalformedMessage{"NegativeId",
                         {{"v", 1}, {"id", -1}, {"op", "hello"}},
                         "",
                         "\"id\" must be an unsigned integer"},
        MalformedMessage{"FloatId",
                         {{"v", 1}, {"id", 1.5}, {"op", "hello"}},
                         "",
                         "\"id\" must be an unsigned integer"},
        MalformedMessage{"StringId",
                         {{"v", 1}, {"id", "1"}, {"op", "hello"}},
                         "",
                         "\"id\" must be an unsigned integer"},
        MalformedMessage{"MissingOp", {{"v", 1}, {"id", 1}}, "", "\"op\" is missing"},
        MalformedMessage{
            "UnknownOp", {{"v", 1}, {"id", 1}, {"op", "exec"}}, "", "unknown op \"exec\""},
        MalformedMessage{"MissingPath",
                         {{"v", 1}, {"id", 1}, {"op", "stat"}, {"root", "workspace"}},
                         "",
                         "\"path\" is missing"},
        MalformedMessage{"PathNotString",
                         {{"v", 1}, {"id", 1}, {"op", "stat"}, {"root", "workspace"}, {"path", 5}},
                         "",
                         "\"path\" must be a string"},
        MalformedMessage{"PathWithNul",
                         {{"v", 1},
                          {"id", 1},
                          {"op", "stat"},
                          {"root", "workspace"},
                          {"path", std::string("a\0b", 3)}},
                         "",
                         "NUL"},
        MalformedMessage{"UnknownRoot",
                         {{"v", 1}, {"id", 1}, {"op", "stat"}, {"root", "host"}, {"path", ""}},
                         "",
                         "unknown root \"host\""},
        MalformedMessage{"PayloadOnStat",
                         {{"v", 1}, {"id", 1}, {"op", "stat"}, {"root", "workspace"}, {"path", ""}},
                         "xx",
                         "unexpected payload"},
        MalformedMessage{"ReadAboveLimit",
                         {{"v", 1},
                          {"id", 1},
                          {"op", "read"},
                          {"root", "workspace"},
                          {"path", "a"},
                          {"max_bytes", uint64_t{1} << 40}},
                         "",
                         "exceeds"},
        MalformedMessage{"WriteMakeParentsNotBool",
                         {{"v", 1},
                          {"id", 1},
                          {"op", "write"},
                          {"root", "workspace"},
                          {"path", "a"},
                          {"make_parents", 1}},
                         "",
                         "\"make_parents\" must be a boolean"},
        MalformedMessage{"WriteModeTooLarge",
                         {{"v", 1},
                          {"id", 1},
                          {"op", "write"},
                          {"root", "workspace"},
                          {"path", "a"},
                          {"make_parents", true},
                          {"mode", 0177777}},
                         "",
                         "\"mode\""},
        MalformedMessage{"ListAboveLimit",
                         {{"v", 1},
                          {"id", 1},
                          {"op", "list"},
                          {"root", "workspace"},
                          {"path", ""},
                          {"max_entries", 1'000'000}},
                         "",
                         "exceeds the limit"},
        MalformedMessage{"RgArgNotString",
                         {{"v", 1},
                          {"id", 1},
                          {"op", "rg"},
                          {"root", "workspace"},
                          {"args", json::array({"-e", 3})},
                          {"max_output_bytes", 10},
                          {"timeout_ms", 10}},
                         "",
                         "only strings"},
        MalformedMessage{"RgArgsNotArray",
                         {{"v", 1},
                          {"id", 1},
                          {"op", "rg"},
                          {"root", "workspace"},
                          {"args", "-e"},
                          {"max_output_bytes", 10},
                          {"timeout_ms", 10}},
                         "",
                         "\"args\" must be an array"},
        MalformedMessage{"RgTimeoutMissing",
                         {{"v", 1},
                          {"id", 1},
                          {"op", "rg"},
                          {"root", "workspace"},
                          {"args", json::array()},
                          {"max_output_bytes", 10}},
                         "",
                         "\"timeout_ms\" is missing"}),
    [](const auto& p) { return std::string(p.param.name); });

TEST(ChannelRequestTest, AnotherVersionIsAMismatchNamingBoth) {
    auto r = decode_request_bytes(raw_frame(json{{"v", 2}, {"id", 1}, {"op", "hello"}}));
    ASSERT_THAT(r, HasErrc(Errc::kFailedPrecondition));
    EXPECT_THAT(r.error().message, HasSubstr("peer speaks version 2"));
    EXPECT_THAT(r.error().message, HasSubstr("speaks version 1"));
}

TEST(ChannelRequestTest, RecoversTheIdOfAnUndecodableRequest) {
    auto frame = decode_frame(bytes_of(raw_frame(json{{"v", 1}, {"id", 42}, {"op", "bogus"}})));
    ASSERT_THAT(frame, IsOk());
    EXPECT_EQ(recover_id(*frame), std::optional<uint64_t>(42));
    auto no_id = decode_frame(bytes_of(raw_frame(json{{"v", 1}, {"id", "42"}})));
    ASSERT_THAT(no_id, IsOk());
    EXPECT_EQ(recover_id(*no_id), std::nullopt);
}

// ---- Replies --------------------------------------------------------------------------------

TEST(ChannelReplyTest, EveryResultRoundTrips) {
    {
        auto r = round_trip(Reply{1, ReplyValue{HelloResult{}}}, Op::kHello);
        ASSERT_THAT(r, IsOk());
        EXPECT_EQ(r->id, 1U);
        EXPECT_THAT(r->result, IsOk());
    }
    {
        auto r = round_trip(Reply{2, ReplyValue{kInfo}}, Op::kStat);
        ASSERT_THAT(r, IsOk());
        ASSERT_THAT(r->result, IsOk());
        expect_info_eq(std::get<FileInfo>(*r->result), kInfo);
    }
    {
        ReadData d{.bytes = std::string("x\0y", 3), .info = kInfo, .truncated = true};
        auto r = round_trip(Reply{3, ReplyValue{d}}, Op::kRead);
        ASSERT_THAT(r, IsOk());
        ASSERT_THAT(r->result, IsOk());
        const auto& got = std::get<ReadData>(*r->result);
        EXPECT_EQ(got.bytes, d.bytes);
        EXPECT_TRUE(got.truncated);
        expect_info_eq(got.info, kInfo);
    }
    {
        auto r = round_trip(Reply{4, ReplyValue{WriteOutcome{.created = true, .info = kInfo}}},
                            Op::kWrite);
        ASSERT_THAT(r, IsOk());
        ASSERT_THAT(r->result, IsOk());
        EXPECT_TRUE(std::get<WriteOutcome>(*r->result).created);
    }
    {
        auto r = round_trip(Reply{5, ReplyValue{MkdirsResult{}}}, Op::kMkdirs);
        ASSERT_THAT(r, IsOk());
        EXPECT_THAT(r->result, IsOk());
    }
    {
        std::vector<DirEntry> entries{{"a", FileType::kFile, 1, -2},
                                      {"b c", FileType::kDirectory, 0, 3},
                                      {"l", FileType::kSymlink, 4, 5}};
        auto r = round_trip(Reply{6, ReplyValue{entries}}, Op::kList);
        ASSERT_THAT(r, IsOk());
        ASSERT_THAT(r->result, IsOk());
        const auto& got = std::get<std::vector<DirEntry>>(*r->result);
        ASSERT_EQ(got.size(), 3U);
        EXPECT_EQ(got[1].name, "b c");
        EXPECT_EQ(got[1].type, FileType::kDirectory);
        EXPECT_EQ(got[0].mtime_ns, -2);
        EXPECT_EQ(got[2].type, FileType::kSymlink);
    }
    {
        RgOutcome rg{.exit_code = 2,
                     .out = "a:1:x\n",
                     .err = "rg: bad\n",
                     .truncated = false,
                     .timed_out = false};
        auto r = round_trip(Reply{7, ReplyValue{rg}}, Op::kRg);
        ASSERT_THAT(r, IsOk());
        ASSERT_THAT(r->result, IsOk());
        const auto& got = std::get<RgOutcome>(*r->result);
        EXPECT_EQ(got.exit_code, 2);
        EXPECT_EQ(got.out, rg.out);
        EXPECT_EQ(got.err, rg.err);
        RgOutcome killed{.exit_code = -1, .truncated = true, .timed_out = true};
        auto k = round_trip(Reply{8, ReplyValue{killed}}, Op::kRg);
        ASSERT_THAT(k, IsOk());
        EXPECT_EQ(std::get<RgOutcome>(*k->result).exit_code, -1);
        EXPECT_TRUE(std::get<RgOutcome>(*k->result).timed_out);
    }
}

TEST(ChannelReplyTest, ErrorsRoundTripWithCodeMessageAndErrno) {
    Reply reply{3, Error{Errc::kNotFound, "read \"x\": ENOENT (No such file or directory)", 2}};
    for (Op op : {Op::kStat, Op::kRead, Op::kList}) {
        auto r = round_trip(reply, op);
        ASSERT_THAT(r, IsOk());
        ASSERT_THAT(r->result, HasErrc(Errc::kNotFound));
        EXPECT_EQ(r->result.error().message, reply.result.error().message);
        EXPECT_EQ(r->result.error().sys_errno, 2);
    }
}

TEST(ChannelReplyTest, NonUtf8NamesAreReplacedAndResorted) {
    // Bytewise order, as the worker lists them: "a\xf0\x9f\x98\x80" (a + U+1F600) < "a\xff".
    std::vector<DirEntry> entries{{"a\xf0\x9f\x98\x80", FileType::kFile, 0, 0},
                                  {"a\xff", FileType::kFile, 0, 0},
                                  {"b\xc0\xaf", FileType::kFile, 0, 0},       // overlong '/'
                                  {"c\xed\xa0\x80", FileType::kFile, 0, 0}};  // a surrogate
    auto r = round_trip(Reply{1, ReplyValue{entries}}, Op::kList);
    ASSERT_THAT(r, IsOk());
    ASSERT_THAT(r->result, IsOk());
    std::vector<std::string> names;
    for (const auto& e : std::get<std::vector<DirEntry>>(*r->result)) {
        names.push_back(e.name);
    }
    EXPECT_THAT(names, ::testing::ElementsAre("a\xef\xbf\xbd", "a\xf0\x9f\x98\x80",
                                              "b\xef\xbf\xbd\xef\xbf\xbd",
                                              "c\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"));
}

class ChannelMalformedReplyTest
    : public ::testing::TestWithParam<std::tuple<MalformedMessage, Op>> {};

TEST_P(ChannelMalformedReplyTest, IsADecodeError) {
    const auto& [c, op] = GetParam();
    auto r = decode_reply_bytes(raw_frame(c.header, c.payload), op);
    ASSERT_THAT(r, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(r.error().message, HasSubstr(c.message));
}

json info_json() {
    return {{"type", "file"}, {"size", 1}, {"mtime_ns", 1}, {"mode", 0644}};
}
json entry(json name) {
    return {{"name", std::move(name)}, {"type", "file"}, {"size", 1}, {"mtime_ns", 1}};
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ChannelMalformedReplyTest,
    ::testing::Values(
        std::make_tuple(
            MalformedMessage{
                "OkNotBool", {{"v", 1}, {"id", 1}, {"ok", "yes"}}, "", "\"ok\" must be a boolean"},
            Op::kHello),
        std::make_tuple(
            MalformedMessage{
                "MissingInfo", {{"v", 1}, {"id", 1}, {"ok", true}}, "", "\"info\" is missing"},
            Op::kStat),
        std::make_tuple(
            MalformedMessage{
                "SizeIsString",
                {{"v", 1},
                 {"id", 1},
                 {"ok", true},
                 {"info", {{"type", "file"}, {"size", "1"}, {"mtime_ns", 1}, {"mode", 0}}}},
                "",
                "\"size\" must be an unsigned integer"},
            Op::kStat),
        std::make_tuple(
            MalformedMessage{
                "ModeAbove07777",
                {{"v", 1},
                 {"id", 1},
                 {"ok", true},
                 {"info", {{"type", "file"}, {"size", 1}, {"mtime_ns", 1}, {"mode", 0xFFFF}}}},
                "",
                "\"mode\""},
            Op::kStat),
        std::make_tuple(
            MalformedMessage{
                "MtimeOverflowsInt64",
                {{"v", 1},
                 {"id", 1},
                 {"ok", true},
                 {"info", {{"type", "file"}, {"size", 1}, {"mtime_ns", UINT64_MAX}, {"mode", 0}}}},
                "",
                "\"mtime_ns\" must be a 64-bit integer"},
            Op::kStat),
        std::make_tuple(
            MalformedMessage{
                "UnknownFileType",
                {{"v", 1},
                 {"id", 1},
                 {"ok", true},
                 {"info", {{"type", "socket"}, {"size", 1}, {"mtime_ns", 1}, {"mode", 0}}}},
                "",
                "unknown file type"},
            Op::kStat),
        std::make_tuple(MalformedMessage{"StatWithPayload",
                                         {{"v", 1}, {"id", 1}, {"ok", true}, {"info", info_json()}},
                                         "zz",
                                         "unexpected payload"},
                        Op::kStat),
        std::make_tuple(MalformedMessage{"ReadMissingTruncated",
                                         {{"v", 1}, {"id", 1}, {"ok", true}, {"info", info_json()}},
                                         "",
                                         "\"truncated\" is missing"},
                        Op::kRead),
        std::make_tuple(
            MalformedMessage{
                "ListNameWithSlash",
                {{"v", 1}, {"id", 1}, {"ok", true}, {"entries", json::array({entry("../etc")})}},
                "",
                "not a single path component"},
            Op::kList),
        std::make_tuple(MalformedMessage{"ListNameWithNul",
                                         {{"v", 1},
                                          {"id", 1},
                                          {"ok", true},
                                          {"entries",
                                           json::array({entry(std::string("a\0b", 3))})}},
                                         "",
                                         "not a single path component"},
                        Op::kList),
        std::make_tuple(
            MalformedMessage{
                "ListNameDotDot",
                {{"v", 1}, {"id", 1}, {"ok", true}, {"entries", json::array({entry("..")})}},
                "",
                "not a single path component"},
            Op::kList),
        std::make_tuple(
            MalformedMessage{
                "ListNameEmpty",
                {{"v", 1}, {"id", 1}, {"ok", true}, {"entries", json::array({entry("")})}},
                "",
                "not a single path component"},
            Op::kList),
        std::make_tuple(
            MalformedMessage{"ListEntryNotObject",
                             {{"v", 1}, {"id", 1}, {"ok", true}, {"entries", json::array({"a"})}},
                             "",
                             "must be an object"},
            Op::kList),
        std::make_tuple(MalformedMessage{"RgOutBytesBeyondPayload",
                                         {{"v", 1},
                                          {"id", 1},
                                          {"ok", true},
                                          {"exit_code", 0},
                                          {"truncated", false},
                                          {"timed_out", false},
                                          {"out_bytes", 99}},
                                         "short",
                                         "out_bytes 99"},
                        Op::kRg),
        std::make_tuple(MalformedMessage{"RgExitCodeOutOfRange",
                                         {{"v", 1},
                                          {"id", 1},
                                          {"ok", true},
                                          {"exit_code", 300},
                                          {"truncated", false},
                                          {"timed_out", false},
                                          {"out_bytes", 0}},
                                         "",
                                         "exit code 300"},
                        Op::kRg),
        std::make_tuple(MalformedMessage{"RgStderrAboveLimit",
                                         {{"v", 1},
                                          {"id", 1},
                                          {"ok", true},
                                          {"exit_code", 2},
                                          {"truncated", false},
                                          {"timed_out", false},
                                          {"out_bytes", 0}},
                                         std::string(kRgMaxErrBytes + 1, 'e'),
                                         "stderr"},
                        Op::kRg),
        std::make_tuple(MalformedMessage{"ErrorUnknownCode",
                                         {{"v", 1},
                                          {"id", 1},
                                          {"ok", false},
                                          {"error",
                                           {{"code", "teapot"}, {"message", "x"}, {"errno", 0}}}},
                                         "",
                                         "unknown code \"teapot\""},
                        Op::kRead),
        std::make_tuple(
            MalformedMessage{
                "ErrorErrnoOutOfRange",
                {{"v", 1},
                 {"id", 1},
                 {"ok", false},
                 {"error", {{"code", "internal"}, {"message", "x"}, {"errno", 99999}}}},
                "",
                "\"errno\""},
            Op::kRead),
        std::make_tuple(
            MalformedMessage{"ErrorMessageTooLong",
                             {{"v", 1},
                              {"id", 1},
                              {"ok", false},
                              {"error",
                               {{"code", "internal"},
                                {"message", std::string(kMaxErrorMessageBytes + 1, 'm')},
                                {"errno", 0}}}},
                             "",
                             "message of"},
            Op::kRead),
        std::make_tuple(MalformedMessage{"ErrorNotObject",
                                         {{"v", 1}, {"id", 1}, {"ok", false}, {"error", "boom"}},
                                         "",
                                         "\"error\" must be an object"},
                        Op::kRead)),
    [](const auto& p) { return std::string(std::get<0>(p.param).name); });

// ---- spawn, signal, commands ---------------------------------------------------------------

json spawn_request(json overrides = json::object()) {
    json h{{"v", 1},        {"id", 1},
           {"op", "spawn"}, {"argv", {"sh", "-c", "true"}},
           {"cwd", ""},     {"env", json::array()},
           {"pty", false},  {"interactive", false},
           {"rows", 50},    {"cols", 200}};
    h.update(overrides);
    return h;
}

TEST(ChannelRequestTest, SpawnSignalAndCommandsRoundTrip) {
    {
        SpawnRequest spawn{.argv = {"bash", "-c", "echo \"$X\""},
                           .cwd = "src/sub",
                           .env = {"X=1", "EMPTY="},
                           .pty = true,
                           .interactive = true,
                           .rows = 1,
                           .cols = kMaxPtyDimension};
        auto r = round_trip(Request{9, spawn});
        ASSERT_THAT(r, IsOk());
        EXPECT_EQ(op_of(r->args), Op::kSpawn);
        const auto& a = std::get<SpawnRequest>(r->args);
        EXPECT_EQ(a.argv, spawn.argv);
        EXPECT_EQ(a.cwd, "src/sub");
        EXPECT_EQ(a.env, spawn.env);
        EXPECT_TRUE(a.pty);
        EXPECT_TRUE(a.interactive);
        EXPECT_EQ(a.rows, 1);
        EXPECT_EQ(a.cols, kMaxPtyDimension);
    }
    {
        auto r = round_trip(Request{10, SignalArgs{.pgid = kMaxPid, .signal = 9}});
        ASSERT_THAT(r, IsOk());
        EXPECT_EQ(std::get<SignalArgs>(r->args).pgid, kMaxPid);
        EXPECT_EQ(std::get<SignalArgs>(r->args).signal, 9);
        // pgid 0 and 1 travel: refusing them is the worker's decision, with its own message.
        EXPECT_THAT(round_trip(Request{11, SignalArgs{.pgid = 1, .signal = 0}}), IsOk());
    }
    {
        auto r = round_trip(Request{12, CommandsArgs{}});
        ASSERT_THAT(r, IsOk());
        EXPECT_EQ(op_of(r->args), Op::kCommands);
    }
}

TEST(ChannelRequestTest, EncodeRefusesSpawnAndSignalRequestsOutsideTheLimits) {
    auto refused = [](RequestArgs args) {
        return encode_request(Request{1, std::move(args)});
    };
    EXPECT_THAT(refused(SpawnRequest{}), HasErrc(Errc::kInvalidArgument));  // no argv
    EXPECT_THAT(refused(SpawnRequest{.argv = std::vector<std::string>(kMaxSpawnArgs + 1, "x")}),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(refused(SpawnRequest{.argv = {std::string(kMaxSpawnArgBytes + 1, 'x')}}),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(refused(SpawnRequest{.argv = {std::string("a\0b", 3)}}),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(refused(SpawnRequest{.argv = {"x"}, .env = {"NOEQUALS"}}),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(refused(SpawnRequest{.argv = {"x"}, .env = {"=value"}}),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(refused(SpawnRequest{.argv = {"x"}, .env = {std::string("A=\0", 3)}}),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(refused(SpawnRequest{.argv = {"x"},
                                     .env = std::vector<std::string>(kMaxSpawnEnv + 1, "A=1")}),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(refused(SpawnRequest{.argv = {"x"}, .cwd = std::string("a\0", 2)}),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(refused(SpawnRequest{.argv = {"x"}, .rows = 0}), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(refused(SpawnRequest{.argv = {"x"}, .cols = kMaxPtyDimension + 1}),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(refused(SignalArgs{.pgid = -1, .signal = 9}), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(refused(SignalArgs{.pgid = kMaxPid + 1, .signal = 9}),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(refused(SignalArgs{.pgid = 5, .signal = kMaxSignal + 1}),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(refused(SignalArgs{.pgid = 5, .signal = -1}), HasErrc(Errc::kInvalidArgument));
}

INSTANTIATE_TEST_SUITE_P(
    NewOps, ChannelMalformedRequestTest,
    ::testing::Values(
        MalformedMessage{"SpawnArgvMissing",
                         [] {
                             json h = spawn_request();
                             h.erase("argv");
                             return h;
                         }(),
                         "", "\"argv\" is missing"},
        MalformedMessage{"SpawnArgvNotArray", spawn_request({{"argv", "sh"}}), "",
                         "\"argv\" must be an array"},
        MalformedMessage{"SpawnArgvNotStrings", spawn_request({{"argv", {"sh", 1}}}), "",
                         "\"argv\" must hold only strings"},
        MalformedMessage{"SpawnArgvEmpty", spawn_request({{"argv", json::array()}}), "",
                         "spawn with 0 arguments"},
        MalformedMessage{
            "SpawnArgvTooMany",
            spawn_request({{"argv", std::vector<std::string>(kMaxSpawnArgs + 1, "x")}}), "",
            "above the limit"},
        MalformedMessage{"SpawnEnvWithoutEquals", spawn_request({{"env", {"PATH"}}}), "",
                         "not NAME=VALUE"},
        MalformedMessage{"SpawnPtyNotBool", spawn_request({{"pty", 1}}), "",
                         "\"pty\" must be a boolean"},
        MalformedMessage{"SpawnRowsZero", spawn_request({{"rows", 0}}), "", "PTY size 0x200"},
        MalformedMessage{"SpawnColsTooLarge", spawn_request({{"cols", 100000}}), "",
                         "\"cols\" is 100000, above the limit"},
        MalformedMessage{"SpawnRowsNegative", spawn_request({{"rows", -1}}), "",
                         "\"rows\" must be an unsigned integer"},
        MalformedMessage{"SpawnWithPayload", spawn_request(), "xx", "unexpected payload"},
        MalformedMessage{"SignalTooHigh",
                         {{"v", 1}, {"id", 1}, {"op", "signal"}, {"pgid", 5}, {"signal", 65}},
                         "",
                         "\"signal\" is 65, above the limit"},
        MalformedMessage{"SignalNegativePgid",
                         {{"v", 1}, {"id", 1}, {"op", "signal"}, {"pgid", -5}, {"signal", 9}},
                         "",
                         "\"pgid\" must be an unsigned integer"},
        MalformedMessage{
            "SignalHugePgid",
            {{"v", 1}, {"id", 1}, {"op", "signal"}, {"pgid", 1ULL << 40}, {"signal", 9}},
            "",
            "\"pgid\""},
        MalformedMessage{"CommandsWithPayload",
                         {{"v", 1}, {"id", 1}, {"op", "commands"}},
                         "x",
                         "unexpected payload"}),
    [](const auto& p) { return std::string(p.param.name); });

// A pipe whose ends stand in for a spawn's descriptors; dup()s play the received copies.
struct FakeSpawnFds {
    FakeSpawnFds() {
        for (auto* pair : {&output, &status, &input, &pidfd}) {
            auto p = make_pipe();
            EXPECT_THAT(p, IsOk());
            *pair = std::move(*p);
        }
    }
    FdPair output;
    FdPair status;
    FdPair input;
    FdPair pidfd;
};

ino_t inode_of(int fd) {
    struct stat st {};
    EXPECT_EQ(::fstat(fd, &st), 0);
    return st.st_ino;
}

std::vector<UniqueFd> dup_all(const std::vector<int>& fds) {
    std::vector<UniqueFd> out;
    for (int fd : fds) {
        out.emplace_back(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
    }
    return out;
}

TEST(ChannelReplyTest, ASpawnReplyCarriesItsDescriptorsInOrder) {
    FdLeakChecker leaks;
    FakeSpawnFds fake;
    for (bool with_optional : {true, false}) {
        SpawnedProcess p;
        p.pid = 1234;
        p.output = UniqueFd(::dup(fake.output.first.get()));
        p.status = UniqueFd(::dup(fake.status.first.get()));
        if (with_optional) {
            p.input = UniqueFd(::dup(fake.input.second.get()));
            p.pidfd = UniqueFd(::dup(fake.pidfd.first.get()));
        }
        Reply reply{5, ReplyValue{std::move(p)}};
        auto encoded = encode_reply(reply);
        ASSERT_THAT(encoded, IsOk());
        const std::vector<int> fds = reply_fds(reply);
        const auto& sent = std::get<SpawnedProcess>(*reply.result);
        std::vector<int> expected{sent.output.get(), sent.status.get()};
        if (with_optional) {
            expected.push_back(sent.input.get());
            expected.push_back(sent.pidfd.get());
        }
        EXPECT_EQ(fds, expected);

        auto frame = decode_frame(bytes_of(*encoded));
        ASSERT_THAT(frame, IsOk());
        std::vector<UniqueFd> received = dup_all(fds);
        auto decoded = decode_reply(*frame, Op::kSpawn, received);
        EXPECT_TRUE(received.empty());
        ASSERT_THAT(decoded, IsOk());
        ASSERT_THAT(decoded->result, IsOk());
        const auto& got = std::get<SpawnedProcess>(*decoded->result);
        EXPECT_EQ(decoded->id, 5U);
        EXPECT_EQ(got.pid, 1234);
        EXPECT_EQ(got.epoch, 0U);
        EXPECT_EQ(inode_of(got.output.get()), inode_of(fake.output.first.get()));
        EXPECT_EQ(inode_of(got.status.get()), inode_of(fake.status.first.get()));
        EXPECT_EQ(got.input.valid(), with_optional);
        EXPECT_EQ(got.pidfd.valid(), with_optional);
        if (with_optional) {
            EXPECT_EQ(inode_of(got.input.get()), inode_of(fake.input.second.get()));
            EXPECT_EQ(inode_of(got.pidfd.get()), inode_of(fake.pidfd.first.get()));
        }
    }
    // Replies without descriptors attach none.
    EXPECT_TRUE(reply_fds(Reply{1, ReplyValue{HelloResult{}}}).empty());
    EXPECT_TRUE(reply_fds(Reply{1, Error{Errc::kNotFound, "x"}}).empty());
}

TEST(ChannelReplyTest, ASpawnReplyWithAnotherNumberOfDescriptorsIsMalformed) {
    FdLeakChecker leaks;
    FakeSpawnFds fake;
    const int a = fake.output.first.get();
    const int b = fake.status.first.get();
    struct Case {
        json header;
        std::vector<int> fds;
        const char* message;
    };
    const json base{{"v", 1}, {"id", 1}, {"ok", true}, {"pid", 99}};
    auto with = [&](bool input, bool pidfd) {
        json h = base;
        h["has_input"] = input;
        h["has_pidfd"] = pidfd;
        return h;
    };
    for (const Case& c : {
             Case{with(false, false), {}, "announces 2 descriptors but carries 0"},
             Case{with(false, false), {a}, "announces 2 descriptors but carries 1"},
             Case{with(false, false), {a, b, a}, "announces 2 descriptors but carries 3"},
             Case{with(true, false), {a, b}, "announces 3 descriptors but carries 2"},
             Case{with(true, true), {a, b, a}, "announces 4 descriptors but carries 3"},
         }) {
        auto frame = decode_frame(bytes_of(raw_frame(c.header)));
        ASSERT_THAT(frame, IsOk());
        std::vector<UniqueFd> received = dup_all(c.fds);
        auto r = decode_reply(*frame, Op::kSpawn, received);
        ASSERT_THAT(r, HasErrc(Errc::kInvalidArgument)) << c.header.dump();
        EXPECT_THAT(r.error().message, HasSubstr(c.message));
        EXPECT_TRUE(received.empty()) << "decode_reply takes (and closes) every descriptor";
    }
    // Without descriptors at all, a spawn reply cannot decode.
    auto frame = decode_frame(bytes_of(raw_frame(with(false, false))));
    ASSERT_THAT(frame, IsOk());
    EXPECT_THAT(decode_reply(*frame, Op::kSpawn), HasErrc(Errc::kInvalidArgument));

    // Descriptors on any other reply, or on an error reply, are malformed too.
    for (auto [header, op] :
         {std::pair{json{{"v", 1}, {"id", 1}, {"ok", true}}, Op::kHello},
          std::pair{json{{"v", 1}, {"id", 1}, {"ok", true}, {"delivered", true}}, Op::kSignal},
          std::pair{json{{"v", 1},
                         {"id", 1},
                         {"ok", false},
                         {"error", {{"code", "not-found"}, {"message", "x"}, {"errno", 0}}}},
                    Op::kSpawn}}) {
        auto f = decode_frame(bytes_of(raw_frame(header)));
        ASSERT_THAT(f, IsOk());
        std::vector<UniqueFd> received = dup_all({a});
        auto r = decode_reply(*f, op, received);
        ASSERT_THAT(r, HasErrc(Errc::kInvalidArgument));
        EXPECT_THAT(r.error().message, HasSubstr("1 unexpected descriptors"));
        EXPECT_TRUE(received.empty());
    }
}

TEST(ChannelReplyTest, EncodeRefusesASpawnResultWithoutItsDescriptors) {
    FakeSpawnFds fake;
    SpawnedProcess no_status;
    no_status.pid = 10;
    no_status.output = UniqueFd(::dup(fake.output.first.get()));
    EXPECT_THAT(encode_reply(Reply{1, ReplyValue{std::move(no_status)}}),
                HasErrc(Errc::kInvalidArgument));
    SpawnedProcess bad_pid;
    bad_pid.pid = 1;
    bad_pid.output = UniqueFd(::dup(fake.output.first.get()));
    bad_pid.status = UniqueFd(::dup(fake.status.first.get()));
    EXPECT_THAT(encode_reply(Reply{1, ReplyValue{std::move(bad_pid)}}),
                HasErrc(Errc::kInvalidArgument));
}

TEST(ChannelReplyTest, SignalAndCommandsResultsRoundTrip) {
    for (bool delivered : {true, false}) {
        auto r = round_trip(Reply{1, ReplyValue{SignalResult{delivered}}}, Op::kSignal);
        ASSERT_THAT(r, IsOk());
        ASSERT_THAT(r->result, IsOk());
        EXPECT_EQ(std::get<SignalResult>(*r->result).delivered, delivered);
    }
    // Names that are not UTF-8 are replaced, then sorted and deduplicated again.
    auto r =
        round_trip(Reply{2, ReplyValue{CommandsResult{{"a\xff", "a\xfe", "b", "python3", "sh"}}}},
                   Op::kCommands);
    ASSERT_THAT(r, IsOk());
    ASSERT_THAT(r->result, IsOk());
    EXPECT_THAT(std::get<CommandsResult>(*r->result).names,
                ::testing::ElementsAre("a\xef\xbf\xbd", "b", "python3", "sh"));
    EXPECT_THAT(
        encode_reply(Reply{
            3, ReplyValue{CommandsResult{std::vector<std::string>(kMaxCommandNames + 1, "x")}}}),
        IsOk());  // duplicates collapse
    std::vector<std::string> many;
    for (size_t i = 0; i <= kMaxCommandNames; ++i) {
        many.push_back(fmt::format("c{}", i));
    }
    EXPECT_THAT(encode_reply(Reply{3, ReplyValue{CommandsResult{many}}}),
                HasErrc(Errc::kInvalidArgument));
}

TEST(ChannelRequestTest, RealPathAndCensusRoundTrip) {
    auto r = round_trip(Request{13, RealPathArgs{.root = Root::kSpill, .path = "a/b c"}});
    ASSERT_THAT(r, IsOk());
    EXPECT_EQ(op_of(r->args), Op::kRealPath);
    EXPECT_EQ(std::get<RealPathArgs>(r->args).root, Root::kSpill);
    EXPECT_EQ(std::get<RealPathArgs>(r->args).path, "a/b c");
    EXPECT_THAT(
        encode_request(Request{14, RealPathArgs{.path = std::string(kMaxPathBytes + 1, 'a')}}),
        HasErrc(Errc::kInvalidArgument));
    auto c = round_trip(Request{15, CensusArgs{}});
    ASSERT_THAT(c, IsOk());
    EXPECT_EQ(op_of(c->args), Op::kCensus);
}

TEST(ChannelReplyTest, RealPathAndCensusResultsRoundTrip) {
    auto r = round_trip(Reply{1, ReplyValue{RealPath{.path = "private/s.txt", .exists = true}}},
                        Op::kRealPath);
    ASSERT_THAT(r, IsOk());
    ASSERT_THAT(r->result, IsOk());
    EXPECT_EQ(std::get<RealPath>(*r->result).path, "private/s.txt");
    EXPECT_TRUE(std::get<RealPath>(*r->result).exists);

    ProcessCensus census{.total = 5,
                         .sessions = {{.sid = 7, .processes = 4, .name = "make"},
                                      {.sid = 40, .processes = 1, .name = "py\xffthon"}}};
    auto c = round_trip(Reply{2, ReplyValue{census}}, Op::kCensus);
    ASSERT_THAT(c, IsOk());
    ASSERT_THAT(c->result, IsOk());
    const auto& got = std::get<ProcessCensus>(*c->result);
    EXPECT_EQ(got.total, 5U);
    ASSERT_EQ(got.sessions.size(), 2U);
    EXPECT_EQ(got.sessions[0].sid, 7);
    EXPECT_EQ(got.sessions[0].processes, 4U);
    EXPECT_EQ(got.sessions[0].name, "make");
    EXPECT_EQ(got.sessions[1].name, "py\xef\xbf\xbdthon");
}

INSTANTIATE_TEST_SUITE_P(
    NewOps, ChannelMalformedReplyTest,
    ::testing::Values(
        std::make_tuple(MalformedMessage{"SpawnPidOne",
                                         {{"v", 1},
                                          {"id", 1},
                                          {"ok", true},
                                          {"pid", 1},
                                          {"has_input", false},
                                          {"has_pidfd", false}},
                                         "",
                                         "spawn pid 1 is out of range"},
                        Op::kSpawn),
        std::make_tuple(MalformedMessage{"SpawnPidAboveTheLimit",
                                         {{"v", 1},
                                          {"id", 1},
                                          {"ok", true},
                                          {"pid", kMaxPid + 1},
                                          {"has_input", false},
                                          {"has_pidfd", false}},
                                         "",
                                         "\"pid\" is 4194305, above the limit"},
                        Op::kSpawn),
        std::make_tuple(MalformedMessage{"SpawnPidNegative",
                                         {{"v", 1},
                                          {"id", 1},
                                          {"ok", true},
                                          {"pid", -3},
                                          {"has_input", false},
                                          {"has_pidfd", false}},
                                         "",
                                         "\"pid\" must be an unsigned integer"},
                        Op::kSpawn),
        std::make_tuple(
            MalformedMessage{"SpawnHasInputMissing",
                             {{"v", 1}, {"id", 1}, {"ok", true}, {"pid", 5}, {"has_pidfd", false}},
                             "",
                             "\"has_input\" is missing"},
            Op::kSpawn),
        std::make_tuple(MalformedMessage{"SignalDeliveredNotBool",
                                         {{"v", 1}, {"id", 1}, {"ok", true}, {"delivered", 1}},
                                         "",
                                         "\"delivered\" must be a boolean"},
                        Op::kSignal),
        std::make_tuple(MalformedMessage{"CommandsNameWithSlash",
                                         {{"v", 1}, {"id", 1}, {"ok", true}, {"names", {"a/b"}}},
                                         "",
                                         "not a single path component"},
                        Op::kCommands),
        std::make_tuple(MalformedMessage{"CommandsNameEmpty",
                                         {{"v", 1}, {"id", 1}, {"ok", true}, {"names", {""}}},
                                         "",
                                         "not a single path component"},
                        Op::kCommands),
        std::make_tuple(MalformedMessage{"CommandsNotStrings",
                                         {{"v", 1}, {"id", 1}, {"ok", true}, {"names", {1}}},
                                         "",
                                         "must hold only strings"},
                        Op::kCommands),
        std::make_tuple(MalformedMessage{"CommandsTooMany",
                                         {{"v", 1},
                                          {"id", 1},
                                          {"ok", true},
                                          {"names",
                                           std::vector<std::string>(kMaxCommandNames + 1, "x")}},
                                         "",
                                         "above the limit"},
                        Op::kCommands),
        std::make_tuple(
            MalformedMessage{"CommandsWithPayload",
                             {{"v", 1}, {"id", 1}, {"ok", true}, {"names", json::array()}},
                             "x",
                             "unexpected payload"},
            Op::kCommands),
        std::make_tuple(MalformedMessage{"RealPathExistsMissing",
                                         {{"v", 1}, {"id", 1}, {"ok", true}, {"path", "a"}},
                                         "",
                                         "\"exists\" is missing"},
                        Op::kRealPath),
        std::make_tuple(
            MalformedMessage{"CensusSessionNotAnObject",
                             {{"v", 1}, {"id", 1}, {"ok", true}, {"total", 1}, {"sessions", {1}}},
                             "",
                             "must be an object"},
            Op::kCensus),
        std::make_tuple(
            MalformedMessage{
                "CensusSidAboveTheLimit",
                {{"v", 1},
                 {"id", 1},
                 {"ok", true},
                 {"total", 1},
                 {"sessions", {{{"sid", kMaxPid + 1}, {"processes", 1}, {"name", "x"}}}}},
                "",
                "above the limit"},
            Op::kCensus)),
    [](const auto& p) { return std::string(std::get<0>(p.param).name); });

// ---- Over a socket --------------------------------------------------------------------------

class ChannelSocketTest : public ::testing::Test {
protected:
    void SetUp() override {
        auto pair = make_socketpair(SOCK_STREAM);
        ASSERT_THAT(pair, IsOk());
        a_ = std::move(pair->first);
        b_ = std::move(pair->second);
    }
    FdLeakChecker leaks_;
    UniqueFd a_;
    UniqueFd b_;
};

TEST_F(ChannelSocketTest, FramesLargerThanTheSocketBufferArriveWhole) {
    std::string content(kMaxPayloadBytes, '\0');
    for (size_t i = 0; i < content.size(); ++i) {
        content[i] = static_cast<char>(i * 131);
    }
    auto encoded = encode_request(Request{7, WriteRequest{.path = "big", .bytes = content}});
    ASSERT_THAT(encoded, IsOk());
    std::jthread sender([&] { EXPECT_THAT(send_frame(a_.get(), *encoded), IsOk()); });
    auto got = recv_frame(b_.get());
    ASSERT_THAT(got, IsOk());
    ASSERT_TRUE(got->has_value());
    auto request = decode_request((*got)->frame);
    ASSERT_THAT(request, IsOk());
    EXPECT_EQ(std::get<WriteRequest>(request->args).bytes, content);
}

TEST_F(ChannelSocketTest, AFrameInPartsArrivesAsTheSameBytesAsTheWholeFrame) {
    // rg's output and errors are two borrowed parts, each larger than the socket buffer, so
    // sendmsg stops inside each of the three parts.
    RgOutcome rg{.exit_code = 2};
    rg.out.assign(3 << 20, 'o');
    rg.err.assign((1 << 20) + 3, 'e');
    const Reply reply{9, ReplyValue{rg}};
    auto whole = encode_reply(reply);
    auto parts = encode_reply_parts(reply);
    ASSERT_THAT(whole, IsOk());
    ASSERT_THAT(parts, IsOk());
    EXPECT_EQ(parts->payload[0].data(), std::get<RgOutcome>(*reply.result).out.data());
    std::jthread sender([&] { EXPECT_THAT(send_frame(a_.get(), *parts), IsOk()); });
    std::string got(whole->size(), '\0');
    size_t at = 0;
    while (at < got.size()) {
        const ssize_t n = ::read(b_.get(), got.data() + at, got.size() - at);
        ASSERT_GT(n, 0);
        at += static_cast<size_t>(n);
    }
    EXPECT_TRUE(got == *whole);
}

TEST_F(ChannelSocketTest, AWriteIsSentFromTheCallersRequest) {
    const WriteRequest write{.path = "a/b", .bytes = std::string(2 << 20, 'w'), .mode = 0600};
    auto parts = encode_write_request(5, write);
    ASSERT_THAT(parts, IsOk());
    EXPECT_EQ(parts->payload[0].data(), write.bytes.data());
    auto whole = encode_request(Request{5, write});
    ASSERT_THAT(whole, IsOk());
    std::jthread sender([&] { EXPECT_THAT(send_frame(a_.get(), *parts), IsOk()); });
    auto got = recv_frame(b_.get());
    ASSERT_THAT(got, IsOk());
    ASSERT_TRUE(got->has_value());
    auto request = decode_request((*got)->frame);
    ASSERT_THAT(request, IsOk());
    EXPECT_EQ(request->id, 5U);
    const auto& decoded = std::get<WriteRequest>(request->args);
    EXPECT_EQ(decoded.path, write.path);
    EXPECT_EQ(decoded.mode, write.mode);
    EXPECT_TRUE(decoded.bytes == write.bytes);
    EXPECT_THAT(encode_write_request(5, WriteRequest{.path = "a", .bytes = "x", .mode = 010000}),
                HasErrc(Errc::kInvalidArgument));
}

TEST_F(ChannelSocketTest, DescriptorsTravelWithTheirFrame) {
    auto pipe = make_pipe();
    ASSERT_THAT(pipe, IsOk());
    auto encoded = encode_request(Request{1, HelloArgs{}});
    ASSERT_THAT(encoded, IsOk());
    const int fds[] = {pipe->first.get(), pipe->second.get()};
    ASSERT_THAT(send_frame(a_.get(), *encoded, fds), IsOk());
    ASSERT_THAT(send_frame(a_.get(), *encoded), IsOk());
    auto first = recv_frame(b_.get());
    ASSERT_THAT(first, IsOk());
    ASSERT_TRUE(first->has_value());
    ASSERT_EQ((*first)->fds.size(), 2U);
    // The received write end feeds the original read end.
    ASSERT_EQ(::write((*first)->fds[1].get(), "z", 1), 1);
    char c = 0;
    ASSERT_EQ(::read(pipe->first.get(), &c, 1), 1);
    EXPECT_EQ(c, 'z');
    auto second = recv_frame(b_.get());
    ASSERT_THAT(second, IsOk());
    ASSERT_TRUE(second->has_value());
    EXPECT_TRUE((*second)->fds.empty());
}

TEST_F(ChannelSocketTest, TooManyDescriptorsAreRefused) {
    auto encoded = encode_request(Request{1, HelloArgs{}});
    ASSERT_THAT(encoded, IsOk());
    std::vector<int> fds(kMaxFdsPerFrame + 1, a_.get());
    EXPECT_THAT(send_frame(a_.get(), *encoded, fds), HasErrc(Errc::kInvalidArgument));
}

TEST_F(ChannelSocketTest, CleanCloseBetweenFramesIsEndOfStream) {
    a_.reset();
    auto got = recv_frame(b_.get());
    ASSERT_THAT(got, IsOk());
    EXPECT_FALSE(got->has_value());
}

TEST_F(ChannelSocketTest, CloseMidFrameIsUnavailable) {
    std::string frame = raw_frame(json{{"v", 1}, {"id", 1}, {"op", "hello"}});
    ASSERT_THAT(send_frame(a_.get(), std::string_view(frame).substr(0, frame.size() - 3)), IsOk());
    a_.reset();
    auto got = recv_frame(b_.get());
    ASSERT_THAT(got, HasErrc(Errc::kUnavailable));
    EXPECT_THAT(got.error().message, HasSubstr("mid-frame"));
}

TEST_F(ChannelSocketTest, OversizedLengthIsRefusedBeforeReadingTheBody) {
    std::string prefix = le32(0x7FFFFFFFU);
    ASSERT_THAT(send_frame(a_.get(), prefix), IsOk());
    auto got = recv_frame(b_.get());
    ASSERT_THAT(got, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(got.error().message, HasSubstr("exceeds"));
}

TEST_F(ChannelSocketTest, SilentPeerHitsTheDeadline) {
    auto start = std::chrono::steady_clock::now();
    auto got = recv_frame(b_.get(), start + std::chrono::milliseconds(100));
    EXPECT_THAT(got, HasErrc(Errc::kDeadlineExceeded));
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST_F(ChannelSocketTest, SendingToAClosedPeerIsUnavailableNotSigpipe) {
    b_.reset();
    auto encoded = encode_request(Request{1, HelloArgs{}});
    ASSERT_THAT(encoded, IsOk());
    auto sent = send_frame(a_.get(), *encoded);
    ASSERT_THAT(sent, HasErrc(Errc::kUnavailable));
    EXPECT_EQ(sent.error().sys_errno, EPIPE);
}

}  // namespace
}  // namespace stockade::workspace::channel
