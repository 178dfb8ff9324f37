// Fuzzes the WWW-Authenticate parser (images/auth_challenge.h), whose input is a registry's
// response header: no crash; accepted challenges are within bounds, with lower-case schemes and
// parameter names, each name once per challenge; picking the registry challenge never crashes.
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "images/auth_challenge.h"

namespace images = stockade::images;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);

    auto challenges = images::parse_auth_challenges(text);
    if (!challenges) {
        return 0;
    }
    if (challenges->empty() || challenges->size() > 16) {
        std::abort();
    }
    for (const auto& c : *challenges) {
        if (c.scheme.empty() || c.params.size() > 32 || (c.token68 && !c.params.empty())) {
            std::abort();
        }
        std::set<std::string> names;
        for (const auto& [name, value] : c.params) {
            for (char ch : name) {
                if (ch >= 'A' && ch <= 'Z') {
                    std::abort();
                }
            }
            if (name.empty() || !names.insert(name).second) {
                std::abort();
            }
        }
    }
    if (auto chosen = images::registry_challenge(*challenges)) {
        if (chosen->scheme == images::AuthScheme::kBearer && chosen->realm.empty()) {
            std::abort();
        }
    }
    return 0;
}
