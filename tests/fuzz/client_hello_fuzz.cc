// Fuzzes the ClientHello reader the proxy runs on a tunnel's first bytes (untrusted, from the
// sandbox): no crash or read out of bounds, a server name only with kServerName and always in
// normal form, and never a request for more bytes past the cap.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "network/address.h"
#include "network/client_hello.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using stockade::network::HelloStatus;
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    const stockade::network::HelloParse r = stockade::network::parse_client_hello(bytes);
    if (r.status == HelloStatus::kServerName) {
        if (r.server_name.empty() ||
            stockade::network::normalize_host_name(r.server_name) != r.server_name) {
            std::abort();
        }
    } else if (!r.server_name.empty()) {
        std::abort();
    }
    if (r.status == HelloStatus::kNeedMore && size >= stockade::network::kMaxClientHelloBytes) {
        std::abort();
    }
    return 0;
}
