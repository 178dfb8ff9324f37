#include "common/crypto.h"

#include <gtest/gtest.h>

namespace stockade {
namespace {

TEST(CryptoTest, Sha256OfKnownInputs) {
    EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(sha256_hex("abc"),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(hex(sha256("ab", "c")), sha256_hex("abc")) << "two parts hash as one";
}

TEST(CryptoTest, HasherInPiecesEqualsOneShot) {
    const std::string text = "The quick brown fox jumps over the lazy dog";
    for (size_t split = 0; split <= text.size(); split += 7) {
        Sha256Hasher hasher;
        hasher.update(std::string_view(text).substr(0, split));
        hasher.update(std::string_view(text).substr(split));
        EXPECT_EQ(hasher.size(), text.size());
        EXPECT_EQ(hex(hasher.finish()), sha256_hex(text)) << "split at " << split;
    }
    EXPECT_EQ(hex(Sha256Hasher().finish()),
              "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(CryptoTest, HasherCrossesBlockBoundariesOneByteAtATime) {
    // 1,000 bytes: many 64-byte blocks, fed so that no update lines up with one.
    const std::string text(1000, 'a');
    Sha256Hasher hasher;
    for (char c : text) {
        hasher.update(std::string_view(&c, 1));
    }
    Sha256Hasher moved = std::move(hasher);
    EXPECT_EQ(hex(moved.finish()), sha256_hex(text));
    EXPECT_EQ(sha256_hex(text), "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

TEST(CryptoTest, HmacSha256OfRfc4231Cases) {
    // RFC 4231 test case 2.
    EXPECT_EQ(hmac_sha256_hex("Jefe", "what do ya want for nothing?"),
              "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    // Test case 1: a 20-byte key of 0x0b.
    EXPECT_EQ(hmac_sha256_hex(std::string(20, '\x0b'), "Hi There"),
              "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
}

TEST(CryptoTest, ConstantTimeEqualIsEquality) {
    EXPECT_TRUE(constant_time_equal("abc", "abc"));
    EXPECT_FALSE(constant_time_equal("abc", "abd"));
    EXPECT_FALSE(constant_time_equal("abc", "ab"));
}

TEST(CryptoTest, Base64DecodesPaddedTextAndRefusesTheRest) {
    EXPECT_EQ(base64_decode("aGVsbG8="), "hello");
    EXPECT_EQ(base64_decode("aGk="), "hi");
    EXPECT_EQ(base64_decode("aGl0"), "hit");
    EXPECT_EQ(base64_decode(""), "");
    EXPECT_EQ(base64_decode("AP8A"), std::string("\x00\xff\x00", 3));
    EXPECT_FALSE(base64_decode("aGVsbG8").has_value());
    EXPECT_FALSE(base64_decode("a$==").has_value());
}

TEST(CryptoTest, Base64EncodesWithPaddingAndDecodesBack) {
    EXPECT_EQ(base64_encode("hello"), "aGVsbG8=");
    EXPECT_EQ(base64_encode("hi"), "aGk=");
    EXPECT_EQ(base64_encode("hit"), "aGl0");
    EXPECT_EQ(base64_encode(""), "");
    const std::string bytes("\x00\xff\x00user:pa:ss", 13);
    EXPECT_EQ(base64_decode(base64_encode(bytes)), bytes);
}

}  // namespace
}  // namespace stockade
