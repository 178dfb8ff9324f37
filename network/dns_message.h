// The DNS messages a sandbox without a network of its own sends to its resolver (RFC 1035 §4.1):
// the question read from a query, and the answer Stockade gives every query — REFUSED, with
// the question echoed so that the client's resolver accepts the answer as its own and fails
// at once instead of waiting out its timeouts. Nothing is ever resolved here.
//
// Pure and bounded: the bytes come from the sandbox, nothing is read outside them, and a name
// is never followed through a compression pointer (a query has no earlier name to point at).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace stockade::network {

// The largest DNS message a resolver socket reads (EDNS's usual ceiling); a longer datagram
// is truncated by the kernel and answered as malformed.
inline constexpr size_t kMaxDnsMessageBytes = 4096;

enum class DnsParse {
    kQuery,      // a query with one well-formed question: `name`, `type` set
    kResponse,   // the QR bit is set: not a question, and never answered (no reply loops)
    kTooShort,   // fewer than 12 bytes: no header, nothing to answer
    kMalformed,  // a header, but not exactly one well-formed question
};

struct DnsQuestion {
    DnsParse status = DnsParse::kTooShort;
    uint16_t id = 0;
    // The name asked for, lower case, without the trailing dot ("." for the root); bytes
    // outside letters, digits, '-', '_' and '*' are written as \DDD, as dig writes them.
    std::string name{};
    uint16_t type = 0;  // 1 A, 28 AAAA, ...
    uint16_t qclass = 0;
    size_t question_end = 0;  // kQuery: where the question ends in the message
};

DnsQuestion parse_dns_query(std::string_view message);

// The reply to `message`: REFUSED (rcode 5) with its question for a query, FORMERR (rcode 1)
// and no question for a malformed one; "" for a response or a message without a header.
std::string dns_refusal(std::string_view message, const DnsQuestion& parsed);

// "A", "AAAA", "MX", ... or "TYPE65" for the rest (RFC 3597's form).
std::string dns_type_name(uint16_t type);

}  // namespace stockade::network
