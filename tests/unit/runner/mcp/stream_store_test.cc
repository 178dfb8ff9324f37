#include "runner/mcp/stream_store.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace stockade::mcp {
namespace {

// A writer's wake-ups, counted.
struct Writer {
    std::shared_ptr<int> woken = std::make_shared<int>(0);
    [[nodiscard]] Wake wake() const {
        return [count = woken] {
            ++*count;
        };
    }
};

std::string event(std::uint64_t stream, std::uint64_t seq, const std::string& data) {
    return "id: " + std::to_string(stream) + "-" + std::to_string(seq) + "\ndata: " + data + "\n\n";
}

// A tools/call's response, as the connection dumps it.
const std::string kResult = R"({"id":1,"jsonrpc":"2.0","result":{"content":[]}})";

TEST(StreamStoreTest, ARequestIdInProgressIsRefusedAndFreedByItsResponse) {
    StreamStore store({});
    Writer writer;
    auto first = store.open("1", true, "", true, writer.wake());
    ASSERT_NE(first.stream, nullptr);
    auto again = store.open("1", true, "", true, writer.wake());
    EXPECT_EQ(again.stream, nullptr);
    EXPECT_FALSE(again.ended);
    (void)store.post(kResult, "1", true);
    EXPECT_NE(store.open("1", true, "", true, writer.wake()).stream, nullptr);
}

TEST(StreamStoreTest, AMessageGoesToItsRequestsStreamAndWakesItsWriter) {
    StreamStore store({});
    Writer writer;
    auto stream = store.open("7", true, "", true, writer.wake()).stream;
    ASSERT_NE(stream, nullptr);
    const auto posted = store.post("progress", "7", false);
    EXPECT_FALSE(posted.dropped);
    EXPECT_FALSE(posted.finished) << "not a tools/call";
    EXPECT_EQ(*writer.woken, 1);
    auto taken = store.take(*stream);
    EXPECT_EQ(taken.events, event(stream->number, 1, "progress"));
    EXPECT_FALSE(taken.done);
    (void)store.post("answer", "7", true);
    taken = store.take(*stream);
    EXPECT_EQ(taken.events, event(stream->number, 2, "answer"));
    EXPECT_TRUE(taken.done);
    EXPECT_TRUE(store.take(*stream).events.empty()) << "taken once";
}

TEST(StreamStoreTest, AMessageOfNoOpenRequestGoesToTheGetStreamOrIsDropped) {
    StreamStore store({});
    EXPECT_TRUE(store.post("lost", "", false).dropped) << "no GET stream yet";
    Writer writer;
    auto get = store.open_standalone(true, false, writer.wake());
    ASSERT_NE(get, nullptr);
    EXPECT_EQ(store.open_standalone(true, false, writer.wake()), nullptr) << "one writer at once";
    EXPECT_FALSE(store.post("notice", "", false).dropped);
    EXPECT_FALSE(store.post("late", "unknown-request", false).dropped);
    EXPECT_EQ(store.take(*get).events,
              event(get->number, 1, "notice") + event(get->number, 2, "late"));
}

TEST(StreamStoreTest, AJsonRequestGetsOnlyItsResponseTheRestGoesToGet) {
    StreamStore store({});
    Writer writer;
    auto get = store.open_standalone(true, false, writer.wake());
    auto json = store.open("2", false, "", true, writer.wake()).stream;
    ASSERT_NE(json, nullptr);
    EXPECT_FALSE(store.reply(*json).has_value()) << "not answered yet";
    (void)store.post("progress", "2", false);
    (void)store.post("answer", "2", true);
    EXPECT_EQ(store.reply(*json), "answer");
    EXPECT_TRUE(store.take(*json).events.empty()) << "a JSON response is no event";
    EXPECT_EQ(store.take(*get).events, event(get->number, 1, "progress"));
}

TEST(StreamStoreTest, ResumeReplaysTheEventsAfterTheLastEventId) {
    StreamStore store({});
    Writer first;
    auto stream = store.open("1", true, "", true, first.wake()).stream;
    for (const char* message : {"a", "b", "c"}) {
        (void)store.post(message, "1", false);
    }
    store.detach(*stream);  // the connection was cut
    (void)store.post("d", "1", false);
    Writer second;
    auto resumed = store.resume({.stream = stream->number, .seq = 1}, second.wake());
    ASSERT_EQ(resumed, stream);
    EXPECT_EQ(resumed->resumed_from, 1U);
    EXPECT_EQ(store.take(*resumed).events, event(stream->number, 2, "b") +
                                               event(stream->number, 3, "c") +
                                               event(stream->number, 4, "d"));
    EXPECT_EQ(store.priming_event(*resumed),
              "id: " + std::to_string(stream->number) + "-1\nretry: 1000\ndata: \n\n");
}

TEST(StreamStoreTest, ResumeRefusesAnUnknownStreamAndOneBeingWritten) {
    StreamStore store({});
    Writer writer;
    auto stream = store.open("1", true, "", true, writer.wake()).stream;
    (void)store.post("a", "1", false);
    EXPECT_EQ(store.resume({.stream = stream->number, .seq = 0}, writer.wake()), nullptr)
        << "its writer is still attached";
    EXPECT_EQ(store.resume({.stream = stream->number + 1, .seq = 0}, writer.wake()), nullptr);
    auto json = store.open("2", false, "", true, writer.wake()).stream;
    store.detach(*json);
    EXPECT_EQ(store.resume({.stream = json->number, .seq = 0}, writer.wake()), nullptr)
        << "a JSON response is not a stream";
}

TEST(StreamStoreTest, APrimingEventOnlyWhenTheRevisionHasOne) {
    StreamStore store({});
    Writer writer;
    auto primed = store.open("1", true, "", true, writer.wake()).stream;
    auto plain = store.open("2", true, "", false, writer.wake()).stream;
    EXPECT_EQ(store.priming_event(*primed),
              "id: " + std::to_string(primed->number) + "-0\nretry: 1000\ndata: \n\n");
    EXPECT_EQ(store.priming_event(*plain), "");
}

TEST(StreamStoreTest, EachStreamKeepsItsLastReplayEvents) {
    StreamStore store({.replay_events = 2});
    Writer writer;
    auto stream = store.open("1", true, "", true, writer.wake()).stream;
    for (const char* message : {"a", "b", "c", "d"}) {
        (void)store.post(message, "1", false);
    }
    store.detach(*stream);
    auto resumed = store.resume({.stream = stream->number, .seq = 0}, writer.wake());
    ASSERT_NE(resumed, nullptr);
    EXPECT_EQ(store.take(*resumed).events,
              event(stream->number, 3, "c") + event(stream->number, 4, "d"));
}

TEST(StreamStoreTest, ReplayBytesDropTheOldestEventsOfAllStreamsFirst) {
    // Each event of a one-character message on streams 1 and 2 is 17 bytes: two fit.
    StreamStore store({.replay_bytes = 34});
    Writer writer;
    auto one = store.open("1", true, "", true, writer.wake()).stream;
    auto two = store.open("2", true, "", true, writer.wake()).stream;
    ASSERT_EQ(event(one->number, 1, "a").size(), 17U);
    (void)store.post("a", "1", false);
    (void)store.post("b", "1", false);
    (void)store.post("c", "2", false);  // "a" goes
    store.detach(*one);
    auto resumed = store.resume({.stream = one->number, .seq = 0}, writer.wake());
    ASSERT_NE(resumed, nullptr);
    EXPECT_EQ(store.take(*resumed).events, event(one->number, 2, "b"));
    (void)store.post("d", "2", false);  // "b" goes: stream 1 is older
    store.detach(*one);
    resumed = store.resume({.stream = one->number, .seq = 0}, writer.wake());
    ASSERT_NE(resumed, nullptr);
    EXPECT_EQ(store.take(*resumed).events, "");
    store.detach(*two);
    resumed = store.resume({.stream = two->number, .seq = 0}, writer.wake());
    ASSERT_NE(resumed, nullptr);
    EXPECT_EQ(store.take(*resumed).events, event(two->number, 1, "c") + event(two->number, 2, "d"));
}

TEST(StreamStoreTest, AStreamsLastEventStaysHoweverLarge) {
    StreamStore store({.replay_bytes = 1});
    Writer writer;
    auto stream = store.open("1", true, "", true, writer.wake()).stream;
    const std::string big(1000, 'x');
    (void)store.post("small", "1", false);
    (void)store.post(big, "1", false);
    store.detach(*stream);
    auto resumed = store.resume({.stream = stream->number, .seq = 0}, writer.wake());
    ASSERT_NE(resumed, nullptr);
    EXPECT_EQ(store.take(*resumed).events, event(stream->number, 2, big));
}

TEST(StreamStoreTest, AWriterThatFallsBehindMaxStreamBytesOverflows) {
    StreamStore store({.max_stream_bytes = 100});
    Writer writer;
    auto stream = store.open("1", true, "", true, writer.wake()).stream;
    (void)store.post(std::string(50, 'x'), "1", false);
    EXPECT_FALSE(store.take(*stream).overflow) << "taken in time";
    (void)store.post(std::string(50, 'x'), "1", false);
    (void)store.post(std::string(50, 'y'), "1", false);
    EXPECT_TRUE(store.take(*stream).overflow);
    store.detach(*stream);
    auto resumed = store.resume({.stream = stream->number, .seq = 2}, writer.wake());
    ASSERT_NE(resumed, nullptr);
    const auto taken = store.take(*resumed);
    EXPECT_FALSE(taken.overflow) << "a resumed stream starts afresh";
    EXPECT_EQ(taken.events, event(stream->number, 3, std::string(50, 'y')));
}

TEST(StreamStoreTest, OldStreamsWithoutAWriterAreForgotten) {
    StreamStore store({.kept_streams = 2});
    Writer writer;
    auto one = store.open("1", true, "", true, writer.wake()).stream;
    auto two = store.open("2", true, "", true, writer.wake()).stream;
    store.detach(*one);
    store.detach(*two);
    (void)store.open("3", true, "", true, writer.wake());
    EXPECT_EQ(store.resume({.stream = one->number, .seq = 0}, writer.wake()), nullptr);
    EXPECT_EQ(store.resume({.stream = two->number, .seq = 0}, writer.wake()), two);
}

TEST(StreamStoreTest, ACallsStreamReportsItsToolAndOutcome) {
    StreamStore store({});
    Writer writer;
    (void)store.open("1", true, "Bash", true, writer.wake());
    const auto posted = store.post(kResult, "1", true);
    ASSERT_TRUE(posted.finished);
    EXPECT_EQ(posted.finished->tool, "Bash");
    EXPECT_EQ(posted.finished->outcome, "ok");
    EXPECT_GE(posted.finished->seconds, 0);
}

TEST(StreamStoreTest, CloseAnswersTheOpenRequestsAndEndsEveryStream) {
    StreamStore store({});
    Writer writer;
    auto get = store.open_standalone(true, false, writer.wake());
    auto call = store.open("1", true, "Bash", true, writer.wake()).stream;
    auto json = store.open("2", false, "", true, writer.wake()).stream;
    const auto finished = store.close([](const std::string& key) {
        return R"({"error":{"code":-32603,"message":"ended"},"id":)" + key + "}";
    });
    ASSERT_EQ(finished.size(), 1U);
    EXPECT_EQ(finished[0].tool, "Bash");
    EXPECT_EQ(finished[0].outcome, "error");
    auto taken = store.take(*call);
    EXPECT_TRUE(taken.done);
    EXPECT_EQ(taken.events,
              event(call->number, 1, R"({"error":{"code":-32603,"message":"ended"},"id":1})"));
    EXPECT_EQ(store.reply(*json), R"({"error":{"code":-32603,"message":"ended"},"id":2})");
    EXPECT_TRUE(store.take(*get).done);
    const auto refused = store.open("3", true, "", true, writer.wake());
    EXPECT_EQ(refused.stream, nullptr);
    EXPECT_TRUE(refused.ended);
}

TEST(StreamStoreTest, CloseWithoutAnAnswerEndsRequestsUnanswered) {
    StreamStore store({});
    Writer writer;
    auto call = store.open("1", true, "Bash", true, writer.wake()).stream;
    auto json = store.open("2", false, "", true, writer.wake()).stream;
    const auto finished = store.close({});
    ASSERT_EQ(finished.size(), 1U);
    EXPECT_EQ(finished[0].outcome, "cancelled");
    const auto taken = store.take(*call);
    EXPECT_TRUE(taken.done);
    EXPECT_EQ(taken.events, "");
    EXPECT_EQ(store.reply(*json), "");
}

}  // namespace
}  // namespace stockade::mcp
