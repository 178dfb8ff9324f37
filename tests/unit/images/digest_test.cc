#include "images/digest.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade::images {
namespace {

using ::stockade::testing::HasErrc;
using ::stockade::testing::IsOk;
using ::testing::HasSubstr;

constexpr std::string_view kEmpty =
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr std::string_view kAbc =
    "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

TEST(DigestTest, ParsesAndFormatsSha256) {
    auto d = Digest::parse(kAbc);
    ASSERT_THAT(d, IsOk());
    EXPECT_EQ(d->str(), kAbc);
    EXPECT_EQ(d->hex(), kAbc.substr(7));
    EXPECT_FALSE(d->empty());
    EXPECT_EQ(*d, Digest::of("abc"));
    EXPECT_EQ(Digest::of("").str(), kEmpty);
    EXPECT_TRUE(Digest().empty());
    EXPECT_EQ(Digest().hex(), "");
}

std::string parse_error(std::string_view text) {
    auto d = Digest::parse(text);
    EXPECT_THAT(d, HasErrc(Errc::kInvalidArgument)) << text;
    return d ? "" : d.error().message;
}

TEST(DigestTest, RefusesOtherAlgorithmsByName) {
    EXPECT_THAT(parse_error("sha512:" + std::string(128, 'a')),
                HasSubstr("algorithm \"sha512\" is not supported: only sha256 is"));
    EXPECT_THAT(parse_error("blake3:abcd"), HasSubstr("algorithm \"blake3\" is not supported"));
    EXPECT_THAT(parse_error("SHA256:" + std::string(64, 'a')),
                HasSubstr("algorithm is not lower-case"));
    EXPECT_THAT(parse_error("sha+:aa"), HasSubstr("algorithm is not lower-case"));
}

TEST(DigestTest, RefusesMalformedHex) {
    EXPECT_THAT(parse_error(""), HasSubstr("digest is empty"));
    EXPECT_THAT(parse_error(std::string(64, 'a')), HasSubstr("no algorithm"));
    EXPECT_THAT(parse_error("sha256:abc"), HasSubstr("has 64 hex digits, not 3"));
    EXPECT_THAT(parse_error("sha256:" + std::string(65, 'a')), HasSubstr("not 65"));
    EXPECT_THAT(parse_error("sha256:" + std::string(63, 'a') + "A"),
                HasSubstr("hex digits must be lower case"));
    EXPECT_THAT(parse_error("sha256:" + std::string(63, 'a') + "g"), HasSubstr("not a hex digit"));
    EXPECT_THAT(parse_error(std::string(kAbc) + "\n"), HasSubstr("not 65"));
    EXPECT_THAT(parse_error("sha256:" + std::string(300, 'a')), HasSubstr("longer than 256"));
    // A hostile digest is quoted, not written raw into the message.
    EXPECT_THAT(parse_error("sha256:\x1b[2J"), HasSubstr("\\x1b"));
}

TEST(DigestTest, VerifyNamesBothDigestsOnMismatch) {
    EXPECT_THAT(verify("abc", Digest::of("abc")), IsOk());
    auto st = verify("abd", Digest::of("abc"));
    ASSERT_THAT(st, HasErrc(Errc::kInvalidArgument));
    EXPECT_EQ(st.error().message,
              fmt::format("digest mismatch: expected {}, got {}", kAbc, Digest::of("abd").str()));
}

TEST(DigestTest, VerifierAcceptsContentInPieces) {
    DigestVerifier v(Digest::of("hello world"), 11);
    EXPECT_THAT(v.update("hello"), IsOk());
    EXPECT_THAT(v.update(" "), IsOk());
    EXPECT_THAT(v.update("world"), IsOk());
    EXPECT_EQ(v.size(), 11U);
    EXPECT_THAT(v.finish(), IsOk());

    DigestVerifier no_size(Digest::of("hello world"));
    EXPECT_THAT(no_size.update("hello world"), IsOk());
    EXPECT_THAT(no_size.finish(), IsOk());
}

TEST(DigestTest, VerifierStopsAtTheFirstByteTooMany) {
    DigestVerifier v(Digest::of("hello"), 5);
    EXPECT_THAT(v.update("hell"), IsOk());
    auto st = v.update("o!");
    ASSERT_THAT(st, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(st.error().message, HasSubstr("is longer than its 5 bytes"));
}

TEST(DigestTest, VerifierRefusesShortAndWrongContent) {
    DigestVerifier short_one(Digest::of("hello"), 5);
    EXPECT_THAT(short_one.update("hell"), IsOk());
    auto st = short_one.finish();
    ASSERT_THAT(st, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(st.error().message, HasSubstr("has 4 bytes, not the 5 announced"));

    DigestVerifier wrong(Digest::of("hello"), 5);
    EXPECT_THAT(wrong.update("jello"), IsOk());
    st = wrong.finish();
    ASSERT_THAT(st, HasErrc(Errc::kInvalidArgument));
    EXPECT_EQ(st.error().message,
              fmt::format("digest mismatch: expected {}, got {}", Digest::of("hello").str(),
                          Digest::of("jello").str()));
}

}  // namespace
}  // namespace stockade::images
