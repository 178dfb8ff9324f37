#include "network/dns_message.h"

#include <fmt/format.h>

namespace stockade::network {
namespace {

constexpr size_t kHeaderBytes = 12;
constexpr size_t kMaxNameBytes = 255;  // on the wire, length octets included (RFC 1035 §2.3.4)
constexpr size_t kMaxLabelBytes = 63;
constexpr uint16_t kQr = 0x8000;
constexpr uint16_t kOpcodeMask = 0x7800;
constexpr uint16_t kRd = 0x0100;
constexpr uint16_t kFormErr = 1;
constexpr uint16_t kRefused = 5;

uint16_t read16(std::string_view bytes, size_t at) {
    return static_cast<uint16_t>((static_cast<unsigned char>(bytes[at]) << 8) |
                                 static_cast<unsigned char>(bytes[at + 1]));
}

void put16(std::string& out, uint16_t value) {
    out.push_back(static_cast<char>(value >> 8));
    out.push_back(static_cast<char>(value & 0xff));
}

void append_label_byte(std::string& name, unsigned char c) {
    if (c >= 'A' && c <= 'Z') {
        name.push_back(static_cast<char>(c - 'A' + 'a'));
    } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
               c == '*') {
        name.push_back(static_cast<char>(c));
    } else {
        name += fmt::format("\\{:03d}", c);
    }
}

}  // namespace

DnsQuestion parse_dns_query(std::string_view message) {
    DnsQuestion q;
    if (message.size() < kHeaderBytes) {
        return q;
    }
    q.id = read16(message, 0);
    const uint16_t flags = read16(message, 2);
    if ((flags & kQr) != 0) {
        q.status = DnsParse::kResponse;
        return q;
    }
    q.status = DnsParse::kMalformed;
    // Exactly one question (RFC 9619); answers and authorities have no place in a query.
    if (read16(message, 4) != 1 || read16(message, 6) != 0 || read16(message, 8) != 0) {
        return q;
    }
    size_t at = kHeaderBytes;
    std::string name;
    for (;;) {
        if (at >= message.size()) {
            return q;
        }
        const auto length = static_cast<unsigned char>(message[at]);
        // 0b11 is a compression pointer, 0b01 and 0b10 are not in use: none belongs here.
        if (length > kMaxLabelBytes || at + 1 + length > message.size() ||
            at + 1 + length - kHeaderBytes > kMaxNameBytes) {
            return q;
        }
        ++at;
        if (length == 0) {
            break;
        }
        if (!name.empty()) {
            name.push_back('.');
        }
        for (size_t i = 0; i < length; ++i) {
            append_label_byte(name, static_cast<unsigned char>(message[at + i]));
        }
        at += length;
    }
    if (at + 4 > message.size()) {
        return q;
    }
    q.name = name.empty() ? "." : std::move(name);
    q.type = read16(message, at);
    q.qclass = read16(message, at + 2);
    q.question_end = at + 4;
    q.status = DnsParse::kQuery;
    return q;
}

std::string dns_refusal(std::string_view message, const DnsQuestion& parsed) {
    if (parsed.status != DnsParse::kQuery && parsed.status != DnsParse::kMalformed) {
        return {};
    }
    const uint16_t asked = read16(message, 2);
    const bool query = parsed.status == DnsParse::kQuery;
    std::string out;
    out.reserve(query ? parsed.question_end : kHeaderBytes);
    put16(out, parsed.id);
    // A response to the same opcode, recursion as it was desired, nothing available.
    put16(out, static_cast<uint16_t>(kQr | (asked & (kOpcodeMask | kRd)) |
                                     (query ? kRefused : kFormErr)));
    put16(out, query ? 1 : 0);
    put16(out, 0);
    put16(out, 0);
    put16(out, 0);
    if (query) {
        out.append(message.substr(kHeaderBytes, parsed.question_end - kHeaderBytes));
    }
    return out;
}

std::string dns_type_name(uint16_t type) {
    switch (type) {
        case 1:
            return "A";
        case 2:
            return "NS";
        case 5:
            return "CNAME";
        case 6:
            return "SOA";
        case 12:
            return "PTR";
        case 15:
            return "MX";
        case 16:
            return "TXT";
        case 28:
            return "AAAA";
        case 33:
            return "SRV";
        case 64:
            return "SVCB";
        case 65:
            return "HTTPS";
        case 255:
            return "ANY";
        default:
            return fmt::format("TYPE{}", type);
    }
}

}  // namespace stockade::network
