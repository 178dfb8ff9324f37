// Fuzzes what serve --http --oauth does with a bearer token (untrusted, from any client) and
// with a JWKS (the operator's file) — runner/mcp/jwt.h. The first byte picks the input's kind:
//   't' TOKEN   checked against RFC 7515's example keys (A.2's RSA, A.3's P-256, kids as in
//               A.6): no crash; never let in (no input carries a signature of those keys over
//               claims that pass); a refusal's detail fits a header's quoted-string
//   'k' JWKS    read as a key set: no crash; a set read has 1 to 100 keys, each kid once
//   'b' TEXT    base64url: what decodes encodes back to the same text (one spelling per value)
// Anything else is taken as a token whole.
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "runner/mcp/jwt.h"

namespace jwt = stockade::mcp::jwt;

namespace {

constexpr const char* kKeys = R"({"keys": [
 {"kty": "RSA", "kid": "2010-12-29", "e": "AQAB",
  "n": "ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-4qPCJrcS2mJPMEzP1Pt0Bm4d4QlL-yRT-SFd2lZS-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSHSXndS5z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBEMa2R2CapHg665xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRWyuXpoQ"},
 {"kty": "EC", "kid": "e9bc097a-ce51-4036-9562-d2ade882db0d", "crv": "P-256",
  "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
  "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]})";

const jwt::KeySet& keys() {
    static const jwt::KeySet set = [] {
        auto parsed = jwt::KeySet::parse(kKeys);
        if (!parsed) {
            std::abort();
        }
        return std::move(parsed).value();
    }();
    return set;
}

void check_token(std::string_view token) {
    // RFC 7515's example claims ({"iss": "joe", "exp": 1300819380}), a second before they expire.
    static const jwt::Expectations expect{.issuer = "joe",
                                          .audience = "https://mcp.example.com/mcp",
                                          .tenant_claim = "stockade_tenant",
                                          .required_scope = "mcp:tools"};
    const auto now = std::chrono::system_clock::time_point(std::chrono::seconds(1300819379));
    const jwt::Verdict verdict = jwt::verify(token, keys(), expect, now);
    const auto* refused = std::get_if<jwt::Refused>(&verdict);
    if (refused == nullptr || refused->detail.empty()) {
        std::abort();
    }
    for (const char c : refused->detail) {
        if (c < ' ' || c >= 0x7f || c == '"' || c == '\\') {
            std::abort();
        }
    }
}

void check_key_set(std::string_view text) {
    auto set = jwt::KeySet::parse(text);
    if (!set) {
        return;
    }
    if (set->size() == 0 || set->size() > 100) {
        std::abort();
    }
    std::set<std::string> kids;
    for (const std::string& kid : set->key_ids()) {
        if (kid.empty() || !kids.insert(kid).second) {
            std::abort();
        }
    }
}

void check_base64url(std::string_view text) {
    const auto decoded = jwt::base64url_decode(text);
    if (decoded && jwt::base64url_encode(*decoded) != text) {
        std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const std::string_view rest = input.empty() ? input : input.substr(1);
    switch (input.empty() ? '\0' : input.front()) {
        case 'k':
            check_key_set(rest);
            break;
        case 'b':
            check_base64url(rest);
            break;
        case 't':
            check_token(rest);
            break;
        default:
            check_token(input);
            break;
    }
    return 0;
}
