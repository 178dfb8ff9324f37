// Fuzzes the proxy's reading of a request head (untrusted, from the sandbox): no crash; a
// parsed head lies within the input; the head rewritten for the origin is one well-formed head
// (CRLF line ends only, no credentials for the proxy); a refusal has a status and a reason.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "network/proxy_request.h"

namespace {

bool has_bare_line_feed(std::string_view s) {
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\n' && (i == 0 || s[i - 1] != '\r')) {
            return true;
        }
    }
    return false;
}

void check(std::string_view bytes, size_t max_head) {
    using stockade::network::HeadParse;
    using stockade::network::ProxyRequest;
    const HeadParse r = stockade::network::parse_proxy_head(bytes, max_head);
    switch (r.status) {
        case HeadParse::Status::kNeedMore:
            if (bytes.size() >= max_head) {
                std::abort();
            }
            break;
        case HeadParse::Status::kBad:
            if ((r.http_status != 400 && r.http_status != 431) || r.error.empty()) {
                std::abort();
            }
            break;
        case HeadParse::Status::kDone: {
            const ProxyRequest& q = r.request;
            if (q.head_size == 0 || q.head_size > bytes.size() || q.head_size > max_head ||
                q.target.host.empty() || q.target.port == 0) {
                std::abort();
            }
            if (q.kind == ProxyRequest::Kind::kForward) {
                const std::string_view head = q.origin_head;
                if (head.size() < 4 || head.substr(head.size() - 4) != "\r\n\r\n" ||
                    head.find("\r\n\r\n") != head.size() - 4 || has_bare_line_feed(head) ||
                    head.substr(0, q.method.size()) != q.method) {
                    std::abort();
                }
            } else if (!q.origin_head.empty()) {
                std::abort();
            }
            break;
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    check(bytes, 64 * 1024);
    check(bytes, 128);  // a small limit, to reach the 431 paths
    return 0;
}
