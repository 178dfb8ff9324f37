#include "network/client_hello.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "tests/testing/hex_vector.h"

namespace stockade::network {
namespace {

// tests/unit/network/testdata/*.hex: ClientHellos as OpenSSL 3.0's s_client and curl sent them
// to a listening socket (one line of hex each).
std::string vector_bytes(const std::string& name) {
    return testing::hex_vector(std::filesystem::path(__FILE__).parent_path() / "testdata" /
                               (name + ".hex"));
}

void put_uint(std::string& out, size_t value, int width) {
    for (int shift = (width - 1) * 8; shift >= 0; shift -= 8) {
        out.push_back(static_cast<char>((value >> shift) & 0xff));
    }
}

std::string vec(const std::string& data, int width) {
    std::string out;
    put_uint(out, data.size(), width);
    return out + data;
}

std::string extension(uint16_t type, const std::string& data) {
    std::string out;
    put_uint(out, type, 2);
    return out + vec(data, 2);
}

// A server_name extension naming each of `names` as a host_name.
std::string sni(std::initializer_list<std::string> names) {
    std::string list;
    for (const std::string& name : names) {
        list += '\0' + vec(name, 2);
    }
    return extension(0, vec(list, 2));
}

// A ClientHello handshake message (header included) with these extensions; `extensions`
// nullopt leaves the extensions block out altogether.
std::string hello_message(const std::optional<std::string>& extensions) {
    std::string body = "\x03\x03" + std::string(32, 'r');  // legacy_version, random
    body += vec("", 1);                                    // legacy_session_id
    body += vec(std::string("\x13\x01", 2), 2);            // cipher_suites
    body += vec(std::string(1, '\0'), 1);                  // compression_methods: null
    if (extensions) {
        body += vec(*extensions, 2);
    }
    std::string message = "\x01";
    put_uint(message, body.size(), 3);
    return message + body;
}

// `message` in handshake records of at most `fragment` bytes each.
std::string records(const std::string& message, size_t fragment = 16384) {
    std::string out;
    for (size_t at = 0; at < message.size(); at += fragment) {
        const std::string piece = message.substr(at, fragment);
        out += "\x16\x03\x01";
        put_uint(out, piece.size(), 2);
        out += piece;
    }
    return out;
}

// The records of a real capture, re-fragmented: the handshake message taken out of its one
// record and cut into records of `fragment` bytes.
std::string refragment(const std::string& capture, size_t fragment) {
    const size_t length =
        size_t{static_cast<uint8_t>(capture[3])} << 8 | static_cast<uint8_t>(capture[4]);
    return records(capture.substr(5, length), fragment);
}

void expect_need_more_for_every_prefix(const std::string& bytes, const std::string& what) {
    for (size_t n = 0; n < bytes.size(); ++n) {
        const HelloParse r = parse_client_hello(std::string_view(bytes).substr(0, n));
        ASSERT_EQ(r.status, HelloStatus::kNeedMore) << what << ": prefix of " << n << " bytes";
        // A copy of exactly n bytes, so that AddressSanitizer would see a read past the end.
        const std::string copy = bytes.substr(0, n);
        ASSERT_EQ(parse_client_hello(copy).status, HelloStatus::kNeedMore) << what << " " << n;
    }
}

TEST(ParseClientHelloTest, ReadsTheServerNameOfRealClientHellos) {
    const std::pair<const char*, const char*> cases[] = {
        {"openssl_tls13_sni", "pypi.org"},  // sent as "PyPI.org"
        {"openssl_tls12_sni", "files.pythonhosted.org"},
        {"curl_sni", "registry.npmjs.org"},
    };
    for (const auto& [name, server] : cases) {
        const std::string bytes = vector_bytes(name);
        const HelloParse r = parse_client_hello(bytes);
        EXPECT_EQ(r.status, HelloStatus::kServerName) << name;
        EXPECT_EQ(r.server_name, server) << name;
    }
    const HelloParse none = parse_client_hello(vector_bytes("openssl_no_sni"));
    EXPECT_EQ(none.status, HelloStatus::kNoServerName);
    EXPECT_EQ(none.server_name, "");
}

TEST(ParseClientHelloTest, NeedsMoreForEveryPrefixOfARealHello) {
    for (const char* name :
         {"openssl_tls13_sni", "openssl_tls12_sni", "openssl_no_sni", "curl_sni"}) {
        expect_need_more_for_every_prefix(vector_bytes(name), name);
    }
}

TEST(ParseClientHelloTest, ReassemblesAHelloSplitOverRecords) {
    const std::string capture = vector_bytes("curl_sni");
    for (size_t fragment : {1U, 2U, 3U, 4U, 5U, 7U, 64U, 100U, 511U}) {
        const std::string bytes = refragment(capture, fragment);
        const HelloParse r = parse_client_hello(bytes);
        EXPECT_EQ(r.status, HelloStatus::kServerName) << fragment;
        EXPECT_EQ(r.server_name, "registry.npmjs.org") << fragment;
    }
    expect_need_more_for_every_prefix(refragment(capture, 7), "7-byte records");
    expect_need_more_for_every_prefix(refragment(capture, 1), "1-byte records");
}

TEST(ParseClientHelloTest, IgnoresWhatFollowsTheHello) {
    std::string bytes = vector_bytes("openssl_tls13_sni");
    bytes += "\x14\x03\x03\x00\x01\x01";   // ChangeCipherSpec
    bytes += "\x17\x03\x03\x00\x05hello";  // application data
    EXPECT_EQ(parse_client_hello(bytes).server_name, "pypi.org");
    // The rest of the last record after the hello (another handshake message) is ignored too.
    EXPECT_EQ(parse_client_hello(
                  records(hello_message(sni({"a.example"})) + std::string("\x0b\x00\x00\x00", 4)))
                  .server_name,
              "a.example");
}

TEST(ParseClientHelloTest, SaysNotTlsForOtherProtocols) {
    for (const std::string& bytes :
         {std::string("GET / HTTP/1.1\r\n"), std::string("SSH-2.0-x\r\n"),
          std::string("\x80\x2e\x01\x03\x01", 5),  // SSLv2 hello
          std::string("\x16\x02", 2), std::string("\x16\x04\x00", 3),
          std::string("\x16\x03\x05", 3), std::string("\x17", 1),
          std::string("\x15\x03\x03\x00\x02\x02\x28", 7)}) {
        EXPECT_EQ(parse_client_hello(bytes).status, HelloStatus::kNotTls)
            << ::testing::PrintToString(bytes);
    }
    EXPECT_EQ(parse_client_hello("").status, HelloStatus::kNeedMore);
    EXPECT_EQ(parse_client_hello("\x16").status, HelloStatus::kNeedMore);
    EXPECT_EQ(parse_client_hello(std::string("\x16\x03\x00", 3)).status, HelloStatus::kNeedMore);
    EXPECT_EQ(parse_client_hello(std::string("\x16\x03\x04", 3)).status, HelloStatus::kNeedMore);
}

TEST(ParseClientHelloTest, NormalisesTheServerName) {
    EXPECT_EQ(parse_client_hello(records(hello_message(sni({"Example.COM."})))).server_name,
              "example.com");
}

TEST(ParseClientHelloTest, FindsNoServerNameWithoutTheExtensionOrAHostName) {
    EXPECT_EQ(parse_client_hello(records(hello_message(std::nullopt))).status,
              HelloStatus::kNoServerName);
    EXPECT_EQ(parse_client_hello(records(hello_message(""))).status, HelloStatus::kNoServerName);
    EXPECT_EQ(parse_client_hello(records(hello_message(extension(43, "\x02\x03\x04")))).status,
              HelloStatus::kNoServerName);
    // A server_name list with an entry of another (future) name type only.
    const std::string other_type = extension(0, vec("\x01" + vec("x", 2), 2));
    EXPECT_EQ(parse_client_hello(records(hello_message(other_type))).status,
              HelloStatus::kNoServerName);
}

TEST(ParseClientHelloTest, FindsTheNameAmongOtherExtensions) {
    const std::string extensions = extension(0x0a0a, "") + extension(23, "") + sni({"pypi.org"}) +
                                   extension(21, std::string(100, '\0'));
    const HelloParse r = parse_client_hello(records(hello_message(extensions)));
    EXPECT_EQ(r.status, HelloStatus::kServerName);
    EXPECT_EQ(r.server_name, "pypi.org");
}

TEST(ParseClientHelloTest, RefusesAmbiguousOrMalformedServerNames) {
    const std::pair<std::string, const char*> cases[] = {
        {sni({"a.example"}) + sni({"b.example"}), "two server_name extensions"},
        {sni({"a.example", "b.example"}), "two host_names"},
        {sni({""}), "an empty host_name"},
        {sni({"a b.example"}), "a space in the name"},
        {sni({std::string("a\0b", 3)}), "a NUL in the name"},
        {sni({"a..example"}), "an empty label"},
        {extension(0, ""), "an empty extension"},
        {extension(0, vec("", 2)), "an empty server name list"},
        {extension(0, vec(std::string("\0\0\x05"
                                      "ab",
                                      5),
                          2)),
         "a name longer than its data"},
        {extension(0, vec(std::string("\0\0\x01"
                                      "a",
                                      4),
                          2) +
                          "x"),
         "bytes after the list"},
        {std::string("\x00\x00\x00\x10", 4), "an extension longer than the block"},
        {std::string("\x00", 1), "half an extension header"},
    };
    for (const auto& [extensions, what] : cases) {
        EXPECT_EQ(parse_client_hello(records(hello_message(extensions))).status,
                  HelloStatus::kMalformed)
            << what;
    }
}

TEST(ParseClientHelloTest, RefusesMalformedHellosAndRecords) {
    const std::string good = hello_message(sni({"a.example"}));
    std::string server_hello = good;
    server_hello[0] = '\x02';
    std::string bad_version = good;
    bad_version[4] = '\x05';
    std::string trailing = good + "xx";
    trailing[3] = static_cast<char>(trailing[3] + 2);  // body length covers the two bytes
    std::string no_compression = hello_message(std::nullopt);
    no_compression.pop_back();     // drop the null compression method...
    no_compression.back() = '\0';  // ...and say there are none
    no_compression[3] = static_cast<char>(no_compression[3] - 1);

    const std::pair<std::string, const char*> cases[] = {
        {records(server_hello), "a ServerHello"},
        {records(bad_version), "a hello of version 5.3"},
        {records(trailing), "bytes after the extensions"},
        {records(no_compression), "no compression method"},
        {records(std::string("\x01\x00\x00\x00", 4)), "an empty body"},
        {records(std::string("\x01\x00\x00\x05"
                             "abcde",
                             9)),
         "a body shorter than random"},
        {std::string("\x16\x03\x01\x00\x00", 5), "an empty record"},
        {std::string("\x16\x03\x01\x40\x01", 5), "a record over 2^14 bytes"},
        {records(good.substr(0, 10)) + std::string("\x15\x03\x03\x00\x02\x02\x28", 7),
         "an alert mid-hello"},
        {records(good.substr(0, 10)) + std::string("\x16\x02\x00\x00\x01x", 6),
         "a bad second record version"},
        {records(std::string("\x01\x01\x00\x00", 4)), "a hello over 64 KiB"},
    };
    for (const auto& [bytes, what] : cases) {
        EXPECT_EQ(parse_client_hello(bytes).status, HelloStatus::kMalformed) << what;
    }
}

TEST(ParseClientHelloTest, CapsTheRecordsAt64KiB) {
    // Records of 16384 bytes and a padding extension sized so that the records take exactly
    // kMaxClientHelloBytes: accepted; one byte more: refused.
    const auto build = [](size_t records_size) {
        const std::string name = sni({"big.example"});
        const size_t base = hello_message(name + extension(21, "")).size();
        const size_t message_size = records_size - 5 * 4;  // four records
        return records(hello_message(name + extension(21, std::string(message_size - base, '\0'))));
    };
    const std::string fits = build(kMaxClientHelloBytes);
    ASSERT_EQ(fits.size(), kMaxClientHelloBytes);
    EXPECT_EQ(parse_client_hello(fits).server_name, "big.example");
    EXPECT_EQ(parse_client_hello(build(kMaxClientHelloBytes + 1)).status, HelloStatus::kMalformed);

    // Tiny records reach the cap sooner: the proxy never has to buffer more than the cap.
    const std::string tiny =
        records(hello_message(sni({"a.example"}) + extension(21, std::string(20000, '\0'))), 1);
    ASSERT_GT(tiny.size(), kMaxClientHelloBytes);
    EXPECT_EQ(parse_client_hello(tiny).status, HelloStatus::kMalformed);
    EXPECT_EQ(parse_client_hello(std::string_view(tiny).substr(0, kMaxClientHelloBytes)).status,
              HelloStatus::kMalformed);
    EXPECT_EQ(parse_client_hello(std::string_view(tiny).substr(0, kMaxClientHelloBytes - 6)).status,
              HelloStatus::kNeedMore);
}

TEST(ParseClientHelloTest, NeedsMoreForEveryPrefixOfAHandBuiltHello) {
    const std::string message =
        hello_message(sni({"pypi.org"}) + extension(43, std::string("\x02\x03\x04", 3)));
    expect_need_more_for_every_prefix(records(message), "one record");
    expect_need_more_for_every_prefix(records(message, 13), "13-byte records");
    expect_need_more_for_every_prefix(records(hello_message(std::nullopt), 3), "no extensions");
}

}  // namespace
}  // namespace stockade::network
