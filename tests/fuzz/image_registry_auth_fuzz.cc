// Fuzzes the auth.json / config.json reader (images/registry_auth.h), whose input is a file a
// user or a tool wrote: no crash; credentials found always hold a username or an identity token,
// and a username always comes with a password or a token.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "images/registry_auth.h"

namespace images = stockade::images;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    static const images::Reference kReference{
        .registry = "registry.example:5000", .repository = "team/app", .tag = "1"};

    auto found = images::credentials_from_auth_text(text, kReference);
    if (found && found->has_value()) {
        const auto& credentials = **found;
        if (credentials.username.empty() && credentials.identity_token.empty()) {
            std::abort();
        }
        if (!credentials.username.empty() && credentials.password.empty() &&
            credentials.identity_token.empty()) {
            std::abort();
        }
    }
    for (std::string_view key : {text.substr(0, 64), text}) {
        if (auto normalized = images::normalize_auth_key(key); normalized && normalized->empty()) {
            std::abort();
        }
    }
    return 0;
}
