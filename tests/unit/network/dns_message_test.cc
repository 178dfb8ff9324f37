#include "network/dns_message.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "tests/testing/hex_vector.h"

namespace stockade::network {
namespace {

// tests/unit/network/testdata/glibc_dns_query_*.hex: the queries glibc 2.36's getaddrinfo sent
// for "Registry.NPMjs.org" to a listening socket.
std::string vector_bytes(const std::string& name) {
    return testing::hex_vector(std::filesystem::path(__FILE__).parent_path() / "testdata" /
                               (name + ".hex"));
}

void put16(std::string& out, unsigned value) {
    out.push_back(static_cast<char>((value >> 8) & 0xff));
    out.push_back(static_cast<char>(value & 0xff));
}

std::string header(unsigned id, unsigned flags, unsigned questions, unsigned answers = 0,
                   unsigned additional = 0) {
    std::string out;
    for (unsigned v : {id, flags, questions, answers, 0U, additional}) {
        put16(out, v);
    }
    return out;
}

std::string labels(std::initializer_list<std::string> parts) {
    std::string out;
    for (const std::string& part : parts) {
        out.push_back(static_cast<char>(part.size()));
        out += part;
    }
    out.push_back('\0');
    return out;
}

std::string query(unsigned id, std::initializer_list<std::string> name, unsigned type,
                  unsigned flags = 0x0100) {
    std::string out = header(id, flags, 1) + labels(name);
    put16(out, type);
    put16(out, 1);
    return out;
}

TEST(DnsMessageTest, ReadsTheQuestionsGlibcSends) {
    const std::string a = vector_bytes("glibc_dns_query_a");
    const DnsQuestion q = parse_dns_query(a);
    ASSERT_EQ(q.status, DnsParse::kQuery);
    EXPECT_EQ(q.name, "registry.npmjs.org");
    EXPECT_EQ(q.type, 1);
    EXPECT_EQ(q.qclass, 1);
    EXPECT_EQ(q.question_end, a.size());
    EXPECT_EQ(parse_dns_query(vector_bytes("glibc_dns_query_aaaa")).type, 28);
    EXPECT_EQ(dns_type_name(28), "AAAA");
    EXPECT_EQ(dns_type_name(65), "HTTPS");
    EXPECT_EQ(dns_type_name(99), "TYPE99");
}

TEST(DnsMessageTest, RefusesWithTheQuestionEchoedSoThatTheClientAcceptsTheAnswer) {
    const std::string a = vector_bytes("glibc_dns_query_a");
    const std::string reply = dns_refusal(a, parse_dns_query(a));
    ASSERT_EQ(reply.size(), a.size());
    EXPECT_EQ(reply.substr(0, 2), a.substr(0, 2)) << "the query's id";
    // QR, opcode QUERY, RD as asked, RA clear, rcode 5 (REFUSED); one question, nothing else.
    EXPECT_EQ(static_cast<unsigned char>(reply[2]), 0x81);
    EXPECT_EQ(static_cast<unsigned char>(reply[3]), 0x05);
    EXPECT_EQ(reply.substr(4, 8), std::string("\0\1\0\0\0\0\0\0", 8));
    EXPECT_EQ(reply.substr(12), a.substr(12)) << "the question as it was asked, case included";
    EXPECT_EQ(parse_dns_query(reply).status, DnsParse::kResponse);
}

TEST(DnsMessageTest, AnEdnsRecordIsIgnoredAndNotEchoed) {
    std::string q = header(0x1234, 0x0020, 1, 0, 1) + labels({"example", "com"});
    put16(q, 65);
    put16(q, 1);
    const size_t question_end = q.size();
    q += std::string("\0\0\x29\x04\xd0\0\0\0\0\0\0", 11);  // OPT, 1232 bytes, no options
    const DnsQuestion parsed = parse_dns_query(q);
    ASSERT_EQ(parsed.status, DnsParse::kQuery);
    EXPECT_EQ(parsed.question_end, question_end);
    const std::string reply = dns_refusal(q, parsed);
    EXPECT_EQ(reply.size(), question_end);
    EXPECT_EQ(static_cast<unsigned char>(reply[2]), 0x80) << "RD was not asked for";
    EXPECT_EQ(reply.substr(10, 2), std::string("\0\0", 2)) << "no additional records";
}

TEST(DnsMessageTest, NamesAreLowerCaseAndOddBytesEscaped) {
    EXPECT_EQ(parse_dns_query(query(1, {"WWW", "Example", "ORG"}, 1)).name, "www.example.org");
    EXPECT_EQ(parse_dns_query(query(1, {}, 2)).name, ".") << "the root";
    EXPECT_EQ(parse_dns_query(query(1, {std::string("a.\0\xff", 4), "com"}, 16)).name,
              "a\\046\\000\\255.com");
    EXPECT_EQ(parse_dns_query(query(1, {"_http", "_tcp", "*", "x-y"}, 33)).name,
              "_http._tcp.*.x-y");
}

TEST(DnsMessageTest, WhatIsNotOneWellFormedQuestionIsMalformed) {
    const std::string ok = query(7, {"a", "b"}, 1);
    EXPECT_EQ(parse_dns_query(ok).status, DnsParse::kQuery);
    // Cut anywhere inside the question.
    for (size_t n = 12; n < ok.size(); ++n) {
        EXPECT_EQ(parse_dns_query(ok.substr(0, n)).status, DnsParse::kMalformed) << n;
    }
    for (size_t n = 0; n < 12; ++n) {
        EXPECT_EQ(parse_dns_query(ok.substr(0, n)).status, DnsParse::kTooShort) << n;
    }
    // No question, two questions, an answer in a query.
    EXPECT_EQ(parse_dns_query(header(7, 0x0100, 0)).status, DnsParse::kMalformed);
    EXPECT_EQ(parse_dns_query(header(7, 0x0100, 2) + ok.substr(12) + ok.substr(12)).status,
              DnsParse::kMalformed);
    EXPECT_EQ(parse_dns_query(header(7, 0x0100, 1, 1) + ok.substr(12)).status,
              DnsParse::kMalformed);
    // A compression pointer (to the header: it would loop), and the reserved label types.
    for (const char kind : {'\xc0', '\x40', '\x80'}) {
        std::string bad = header(7, 0x0100, 1) + kind + std::string("\x0c\0\1\0\1", 5);
        EXPECT_EQ(parse_dns_query(bad).status, DnsParse::kMalformed) << int{kind};
    }
    // A name longer than 255 bytes on the wire.
    std::string label(63, 'x');
    EXPECT_EQ(parse_dns_query(query(7, {label, label, label, label}, 1)).status,
              DnsParse::kMalformed);
    EXPECT_EQ(parse_dns_query(query(7, {label, label, label, std::string(61, 'x')}, 1)).status,
              DnsParse::kQuery)
        << "255 bytes exactly";
}

TEST(DnsMessageTest, AMalformedQueryGetsFormErrAndAResponseNothing) {
    const std::string bad = header(0xbeef, 0x0100, 2);
    const std::string reply = dns_refusal(bad, parse_dns_query(bad));
    ASSERT_EQ(reply.size(), 12U);
    EXPECT_EQ(reply.substr(0, 2), "\xbe\xef");
    EXPECT_EQ(static_cast<unsigned char>(reply[2]), 0x81);
    EXPECT_EQ(static_cast<unsigned char>(reply[3]), 0x01);
    EXPECT_EQ(reply.substr(4), std::string(8, '\0'));

    const std::string response = query(3, {"a"}, 1, 0x8180);
    EXPECT_EQ(dns_refusal(response, parse_dns_query(response)), "") << "never answer an answer";
    EXPECT_EQ(dns_refusal("short", parse_dns_query("short")), "");
}

}  // namespace
}  // namespace stockade::network
