// Fuzzes the DNS query reader the resolver of every sandbox runs on what a command sends to
// 127.0.0.1:53 (untrusted): no crash or read out of bounds; a question only with kQuery, inside
// the message; a reply exactly when there is something to answer, with the query's id, marked
// as a response (so that it is never answered in turn), and no longer than the query.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "network/dns_message.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using stockade::network::DnsParse;
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    const stockade::network::DnsQuestion q = stockade::network::parse_dns_query(bytes);
    if (q.status == DnsParse::kQuery) {
        if (q.name.empty() || q.question_end < 17 || q.question_end > size) {
            std::abort();
        }
    } else if (!q.name.empty() || q.question_end != 0) {
        std::abort();
    }
    const std::string reply = stockade::network::dns_refusal(bytes, q);
    const bool answers = q.status == DnsParse::kQuery || q.status == DnsParse::kMalformed;
    if (reply.empty() == answers) {
        std::abort();
    }
    if (answers) {
        if (reply.size() > size || reply.compare(0, 2, bytes.substr(0, 2)) != 0 ||
            stockade::network::parse_dns_query(reply).status != DnsParse::kResponse) {
            std::abort();
        }
    }
    return 0;
}
