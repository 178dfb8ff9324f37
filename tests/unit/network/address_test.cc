#include "network/address.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade::network {
namespace {

using boost::asio::ip::make_address;
using testing::HasErrc;
using ::testing::HasSubstr;
using testing::IsOk;
using ::testing::Optional;

std::optional<std::string_view> reason(const char* text) {
    return private_address_reason(make_address(text));
}

// Each class of refused address, with the address just inside each end of its range and the
// one just outside (which must be public, or belong to a neighbouring class).
struct ReasonCase {
    const char* address;
    std::optional<std::string_view> reason;
};

constexpr std::string_view kUnspecified = "the unspecified address";
constexpr std::string_view kThisNetwork = "a \"this network\" address (0.0.0.0/8)";
constexpr std::string_view kPrivate = "a private address (RFC 1918)";
constexpr std::string_view kCgnat = "a carrier-grade NAT address (100.64.0.0/10)";
constexpr std::string_view kLoopback = "a loopback address";
constexpr std::string_view kMetadata = "the cloud metadata address";
constexpr std::string_view kLinkLocal4 = "a link-local address (cloud metadata lives there)";
constexpr std::string_view kIetf4 = "a reserved address (IETF protocol assignments, 192.0.0.0/24)";
constexpr std::string_view kDocumentation4 = "a documentation address (TEST-NET)";
constexpr std::string_view kBenchmark4 = "a benchmarking address (198.18.0.0/15)";
constexpr std::string_view kMulticast = "a multicast address";
constexpr std::string_view kBroadcast = "the broadcast address";
constexpr std::string_view kReserved240 = "a reserved address (240.0.0.0/4)";
constexpr std::nullopt_t kPublic = std::nullopt;

TEST(PrivateAddressReasonTest, ClassifiesEveryIpv4RangeAtItsBoundaries) {
    const ReasonCase cases[] = {
        {"0.0.0.0", kUnspecified},
        {"0.0.0.1", kThisNetwork},
        {"0.255.255.255", kThisNetwork},
        {"1.0.0.0", kPublic},
        {"9.255.255.255", kPublic},
        {"10.0.0.0", kPrivate},
        {"10.255.255.255", kPrivate},
        {"11.0.0.0", kPublic},
        {"100.63.255.255", kPublic},
        {"100.64.0.0", kCgnat},
        {"100.127.255.255", kCgnat},
        {"100.128.0.0", kPublic},
        {"126.255.255.255", kPublic},
        {"127.0.0.0", kLoopback},
        {"127.0.0.1", kLoopback},
        {"127.255.255.255", kLoopback},
        {"128.0.0.0", kPublic},
        {"169.253.255.255", kPublic},
        {"169.254.0.0", kLinkLocal4},
        {"169.254.169.254", kMetadata},
        {"169.254.169.253", kLinkLocal4},
        {"169.254.255.255", kLinkLocal4},
        {"169.255.0.0", kPublic},
        {"172.15.255.255", kPublic},
        {"172.16.0.0", kPrivate},
        {"172.31.255.255", kPrivate},
        {"172.32.0.0", kPublic},
        {"191.255.255.255", kPublic},
        {"192.0.0.0", kIetf4},
        {"192.0.0.255", kIetf4},
        {"192.0.1.0", kPublic},
        {"192.0.2.0", kDocumentation4},
        {"192.0.2.255", kDocumentation4},
        {"192.0.3.0", kPublic},
        {"192.167.255.255", kPublic},
        {"192.168.0.0", kPrivate},
        {"192.168.255.255", kPrivate},
        {"192.169.0.0", kPublic},
        {"198.17.255.255", kPublic},
        {"198.18.0.0", kBenchmark4},
        {"198.19.255.255", kBenchmark4},
        {"198.20.0.0", kPublic},
        {"198.51.99.255", kPublic},
        {"198.51.100.0", kDocumentation4},
        {"198.51.100.255", kDocumentation4},
        {"198.51.101.0", kPublic},
        {"203.0.112.255", kPublic},
        {"203.0.113.0", kDocumentation4},
        {"203.0.113.255", kDocumentation4},
        {"203.0.114.0", kPublic},
        {"223.255.255.255", kPublic},
        {"224.0.0.0", kMulticast},
        {"239.255.255.255", kMulticast},
        {"240.0.0.0", kReserved240},
        {"255.255.255.254", kReserved240},
        {"255.255.255.255", kBroadcast},
        {"8.8.8.8", kPublic},
        {"151.101.0.223", kPublic},
    };
    for (const ReasonCase& c : cases) {
        EXPECT_EQ(reason(c.address), c.reason) << c.address;
    }
}

TEST(PrivateAddressReasonTest, ClassifiesEveryIpv6Range) {
    const ReasonCase cases[] = {
        {"::", kUnspecified},
        {"::1", kLoopback},
        {"fe80::", "a link-local address"},
        {"fe80::1", "a link-local address"},
        {"febf:ffff::1", "a link-local address"},
        {"fec0::1", "a site-local address (fec0::/10)"},
        {"fc00::", "a unique local address (fc00::/7)"},
        {"fdff:ffff::1", "a unique local address (fc00::/7)"},
        {"fd00:ec2::254", kMetadata},
        {"fd00:ec2::253", "a unique local address (fc00::/7)"},
        {"fd20:ce::254", kMetadata},
        {"ff00::", kMulticast},
        {"ff02::1", kMulticast},
        {"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", kMulticast},
        {"2001:db8::", "a documentation address"},
        {"2001:db8:ffff:ffff::1", "a documentation address"},
        {"2001:db9::1", kPublic},
        {"2001:db7:ffff::1", kPublic},
        {"3fff::1", "a documentation address"},
        {"2001:2::1", "a benchmarking address (2001:2::/48)"},
        {"2001::1", "a reserved address (IETF protocol assignments, 2001::/23)"},
        {"2001:1ff::1", "a reserved address (IETF protocol assignments, 2001::/23)"},
        {"2001:200::1", kPublic},
        {"100::1", "a discard-only address (100::/64)"},
        {"64:ff9b:1::1", "a local-use NAT64 address (64:ff9b:1::/48)"},
        {"1fff:ffff::1", "a reserved address"},
        {"4000::1", "a reserved address"},
        {"fe00::1", "a reserved address"},
        {"2000::", kPublic},
        {"3ffe:ffff::1", kPublic},
        {"2a00:1450:4001:830::200e", kPublic},
        {"2606:4700::6810:84e5", kPublic},
    };
    for (const ReasonCase& c : cases) {
        EXPECT_EQ(reason(c.address), c.reason) << c.address;
    }
}

TEST(PrivateAddressReasonTest, JudgesIpv6FormsByTheIpv4AddressTheyEmbed) {
    const ReasonCase cases[] = {
        {"::ffff:127.0.0.1", kLoopback},        // IPv4-mapped
        {"::ffff:169.254.169.254", kMetadata},  // ...the metadata address through a mapping
        {"::ffff:10.1.2.3", kPrivate},          //
        {"::ffff:0.0.0.0", kUnspecified},       //
        {"::ffff:8.8.8.8", kPublic},            //
        {"::ffff:0:192.168.1.1", kPrivate},     // IPv4-translated (SIIT)
        {"::127.0.0.1", kLoopback},             // IPv4-compatible
        {"::10.0.0.1", kPrivate},               //
        {"::0.0.0.2", kThisNetwork},            //
        {"::8.8.4.4", kPublic},                 //
        {"64:ff9b::127.0.0.1", kLoopback},      // NAT64
        {"64:ff9b::a9fe:a9fe", kMetadata},      // ...169.254.169.254 in hex
        {"64:ff9b::8.8.8.8", kPublic},          //
        {"2002:7f00:1::1", kLoopback},          // 6to4 of 127.0.0.1
        {"2002:a9fe:a9fe::", kMetadata},        // 6to4 of 169.254.169.254
        {"2002:c0a8:101::1", kPrivate},         // 6to4 of 192.168.1.1
        {"2002:0808:0808::1", kPublic},         // 6to4 of 8.8.8.8
        {"2002:e000:0001::1", kMulticast},      // 6to4 of 224.0.0.1
    };
    for (const ReasonCase& c : cases) {
        EXPECT_EQ(reason(c.address), c.reason) << c.address;
    }
}

TEST(ParseAuthorityTest, ReadsHostAndPortForms) {
    auto a = parse_authority("pypi.org:443", 0);
    ASSERT_THAT(a, IsOk());
    EXPECT_EQ(*a, (Authority{.host = "pypi.org", .port = 443, .ip_literal = false}));

    EXPECT_EQ(*parse_authority("pypi.org", 80), (Authority{"pypi.org", 80, false}));
    EXPECT_EQ(*parse_authority("1.2.3.4:443", 0), (Authority{"1.2.3.4", 443, true}));
    EXPECT_EQ(*parse_authority("1.2.3.4", 80), (Authority{"1.2.3.4", 80, true}));
    EXPECT_EQ(*parse_authority("1.2.3.4.:80", 0), (Authority{"1.2.3.4", 80, true}));
    EXPECT_EQ(*parse_authority("[::1]:8080", 0), (Authority{"::1", 8080, true}));
    EXPECT_EQ(*parse_authority("[::1]", 80), (Authority{"::1", 80, true}));
    EXPECT_EQ(*parse_authority("a:1", 0), (Authority{"a", 1, false}));
    EXPECT_EQ(*parse_authority("a:65535", 0), (Authority{"a", 65535, false}));
}

TEST(ParseAuthorityTest, NormalisesNamesAndLiterals) {
    EXPECT_EQ(parse_authority("PyPI.ORG.:443", 0)->host, "pypi.org");
    EXPECT_EQ(parse_authority("my_host-1.example", 80)->host, "my_host-1.example");
    EXPECT_EQ(parse_authority("[2001:DB8:0:0::1]:443", 0)->host, "2001:db8::1");
    EXPECT_EQ(parse_authority("[0:0:0:0:0:0:0:1]:443", 0)->host, "::1");
    EXPECT_EQ(parse_authority("[::FFFF:127.0.0.1]:443", 0)->host, "::ffff:127.0.0.1");
    EXPECT_EQ(parse_authority("localhost:80", 0)->host, "localhost");
}

TEST(ParseAuthorityTest, EnforcesLabelAndNameLengths) {
    const std::string label63(63, 'a');
    EXPECT_THAT(parse_authority(label63 + ".com", 80), IsOk());
    auto long_label = parse_authority(std::string(64, 'a') + ".com", 80);
    EXPECT_THAT(long_label, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(long_label.error().message, HasSubstr("longer than 63"));

    // Four labels of 63 and the dots: 255 characters; three and one of 61: 253.
    const std::string name253 =
        label63 + "." + label63 + "." + label63 + "." + std::string(61, 'b');
    ASSERT_EQ(name253.size(), 253U);
    EXPECT_THAT(parse_authority(name253, 80), IsOk());
    EXPECT_THAT(parse_authority(name253 + ".", 80), IsOk());  // the trailing dot does not count
    auto too_long = parse_authority(name253 + "b", 80);
    EXPECT_THAT(too_long, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(too_long.error().message, HasSubstr("longer than 253"));
}

TEST(ParseAuthorityTest, RejectsMalformedAuthoritiesSayingWhatIsWrong) {
    const std::pair<const char*, const char*> cases[] = {
        {"", "empty"},
        {":443", "empty"},
        {".", "empty"},
        {"pypi.org", "a port is required"},
        {"pypi.org:", "the port after ':' is empty"},
        {"pypi.org:0", "not a number from 1 to 65535"},
        {"pypi.org:65536", "not a number from 1 to 65535"},
        {"pypi.org:99999999999999999999", "not a number from 1 to 65535"},
        {"pypi.org:-1", "not a number from 1 to 65535"},
        {"pypi.org:+80", "not a number from 1 to 65535"},
        {"pypi.org:http", "not a number from 1 to 65535"},
        {"pypi.org: 80", "not a number from 1 to 65535"},
        {"user@pypi.org:443", "user information"},
        {"user:pw@pypi.org:443", "user information"},
        {"::1", "needs brackets"},
        {"::1:443", "needs brackets"},
        {"[::1", "'[' without ']'"},
        {"[::1]443", "text after ']'"},
        {"[::1]:", "the port after ':' is empty"},
        {"[pypi.org]:443", "is not an IPv6 address"},
        {"[1.2.3.4]:443", "is not an IPv6 address"},
        {"[fe80::1%eth0]:443", "zone id"},
        {"py pi.org:443", "the character \" \""},
        {"pypi.org/x:443", "the character \"/\""},
        {"pypi\x01.org:443", "the character \"\\x01\""},
        {"a..b:443", "empty label"},
        {".a:443", "empty label"},
        {"a.b..:443", "empty label"},
        {"127.1:80", "four decimal numbers"},
        {"2130706433:80", "four decimal numbers"},
        {"0x7f000001:80", "four decimal numbers"},
        {"0x7f.0.0.1:80", "four decimal numbers"},
        {"127.000.0.1:80", "four decimal numbers"},
        {"1.2.3.4.5:80", "four decimal numbers"},
        {"256.1.1.1:80", "four decimal numbers"},
    };
    for (const auto& [text, message] : cases) {
        auto r = parse_authority(text, 0);
        ASSERT_THAT(r, HasErrc(Errc::kInvalidArgument)) << text;
        EXPECT_THAT(r.error().message, HasSubstr(message)) << text;
    }
}

TEST(ParseAuthorityTest, AcceptsNamesThatOnlyLookNumeric) {
    EXPECT_THAT(parse_authority("1password.com:443", 0), IsOk());
    EXPECT_THAT(parse_authority("123.example:443", 0), IsOk());
    EXPECT_THAT(parse_authority("0xdead.beef.example:443", 0), IsOk());
}

TEST(ParseAuthorityTest, QuotesControlBytesInItsMessages) {
    auto r = parse_authority("a\r\nX-Injected: 1", 80);
    ASSERT_THAT(r, HasErrc(Errc::kInvalidArgument));
    EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
    EXPECT_THAT(r.error().message, HasSubstr("\\x0d\\x0a"));
}

TEST(FormatAuthorityTest, BracketsIpv6AndOmitsTheDefaultPort) {
    EXPECT_EQ(format_authority({"pypi.org", 443, false}), "pypi.org:443");
    EXPECT_EQ(format_authority({"pypi.org", 80, false}, 80), "pypi.org");
    EXPECT_EQ(format_authority({"::1", 8080, true}, 80), "[::1]:8080");
    EXPECT_EQ(format_authority({"::1", 80, true}, 80), "[::1]");
}

TEST(NormalizeHostNameTest, LowersAndDropsOneTrailingDot) {
    EXPECT_THAT(normalize_host_name("WWW.Example.COM."), Optional(std::string("www.example.com")));
    EXPECT_EQ(normalize_host_name("example.com.."), std::nullopt);
    EXPECT_EQ(normalize_host_name(""), std::nullopt);
    EXPECT_EQ(normalize_host_name("a b"), std::nullopt);
    EXPECT_THAT(normalize_host_name("10.0.0.1"), Optional(std::string("10.0.0.1")));
}

TEST(ParseResolvePinTest, ReadsEveryForm) {
    auto pin = parse_resolve_pin("pypi.org=127.0.0.1");
    ASSERT_THAT(pin, IsOk());
    EXPECT_EQ(*pin, (ResolvePin{.name = "pypi.org",
                                .port = std::nullopt,
                                .address = make_address("127.0.0.1"),
                                .target_port = std::nullopt}));

    pin = parse_resolve_pin("PyPI.org.:443=127.0.0.1:8443");
    ASSERT_THAT(pin, IsOk());
    EXPECT_EQ(*pin, (ResolvePin{"pypi.org", 443, make_address("127.0.0.1"), 8443}));

    pin = parse_resolve_pin("example.com=[::1]:8080");
    ASSERT_THAT(pin, IsOk());
    EXPECT_EQ(*pin, (ResolvePin{"example.com", std::nullopt, make_address("::1"), 8080}));

    pin = parse_resolve_pin("example.com:80=[2001:db8::5]");
    ASSERT_THAT(pin, IsOk());
    EXPECT_EQ(*pin, (ResolvePin{"example.com", 80, make_address("2001:db8::5"), std::nullopt}));

    pin = parse_resolve_pin("example.com=::1");  // bare IPv6: no port can follow
    ASSERT_THAT(pin, IsOk());
    EXPECT_EQ(*pin, (ResolvePin{"example.com", std::nullopt, make_address("::1"), std::nullopt}));

    pin = parse_resolve_pin("metadata.test=169.254.169.254");  // a pin may name any address
    ASSERT_THAT(pin, IsOk());
    EXPECT_EQ(pin->address, make_address("169.254.169.254"));
}

TEST(ParseResolvePinTest, RejectsMalformedPinsSayingWhatIsWrong) {
    const std::pair<const char*, const char*> cases[] = {
        {"pypi.org", "no '='"},
        {"", "no '='"},
        {"=127.0.0.1", "the host is empty"},
        {"pypi.org=", "the address is empty"},
        {"pypi.org=files.example", "is not an IP address"},
        {"pypi.org=127.0.0.1:0", "not a number from 1 to 65535"},
        {"pypi.org=127.0.0.1:", "the port after ':' is empty"},
        {"pypi.org:0=127.0.0.1", "not a number from 1 to 65535"},
        {"pypi.org:x=127.0.0.1", "not a number from 1 to 65535"},
        {"1.2.3.4=127.0.0.1", "is an address"},
        {"1.2.3.4.:443=127.0.0.1", "is an address"},
        {"[::1]=127.0.0.1", "is an address"},
        {"py pi.org=127.0.0.1", "the character"},
        {"pypi.org=[::1", "'[' without ']'"},
        {"pypi.org=[127.0.0.1]", "is not an IPv6 address"},
        {"pypi.org=fe80::1%eth0", "zone id"},
        {"pypi.org=1.2.3", "is not an IP address"},
        {"pypi.org=::1::2", "is not an IPv6 address"},
    };
    for (const auto& [text, message] : cases) {
        auto r = parse_resolve_pin(text);
        ASSERT_THAT(r, HasErrc(Errc::kInvalidArgument)) << text;
        EXPECT_THAT(r.error().message, HasSubstr(message)) << text;
    }
}

TEST(FindPinTest, PrefersAPinWithThePortAndDefaultsTheTargetPort) {
    const std::vector<ResolvePin> pins = {
        *parse_resolve_pin("pypi.org=10.0.0.1"),
        *parse_resolve_pin("pypi.org:443=127.0.0.1:8443"),
        *parse_resolve_pin("example.com=[::1]:8080"),
        *parse_resolve_pin("example.com=10.9.9.9"),
    };
    EXPECT_EQ(format_endpoint(*find_pin(pins, "pypi.org", 443)), "127.0.0.1:8443");
    EXPECT_EQ(format_endpoint(*find_pin(pins, "pypi.org", 80)), "10.0.0.1:80");
    EXPECT_EQ(format_endpoint(*find_pin(pins, "PYPI.org.", 443)), "127.0.0.1:8443");
    EXPECT_EQ(format_endpoint(*find_pin(pins, "example.com", 443)), "[::1]:8080");  // the first
    EXPECT_EQ(find_pin(pins, "files.pythonhosted.org", 443), std::nullopt);
    EXPECT_EQ(find_pin(pins, "sub.pypi.org", 443), std::nullopt);
    EXPECT_EQ(find_pin({}, "pypi.org", 443), std::nullopt);

    // The order of the pins does not matter to the port rule.
    const std::vector<ResolvePin> reversed = {pins[1], pins[0]};
    EXPECT_EQ(format_endpoint(*find_pin(reversed, "pypi.org", 443)), "127.0.0.1:8443");
}

TEST(FormatEndpointTest, BracketsIpv6) {
    using boost::asio::ip::tcp;
    EXPECT_EQ(format_endpoint(tcp::endpoint(make_address("1.2.3.4"), 80)), "1.2.3.4:80");
    EXPECT_EQ(format_endpoint(tcp::endpoint(make_address("::1"), 443)), "[::1]:443");
    EXPECT_EQ(format_endpoint(tcp::endpoint(make_address("::ffff:1.2.3.4"), 443)),
              "[::ffff:1.2.3.4]:443");
}

}  // namespace
}  // namespace stockade::network
