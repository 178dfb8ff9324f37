// A registry's WWW-Authenticate header (RFC 7235 §4.1), which tells a client how to authenticate:
// `Bearer realm="https://auth.example/token",service="registry.example",scope="repository:x:pull"`
// (the distribution spec's token flow) or `Basic realm="Registry"`. The header comes from the
// network, so it is parsed by the grammar — several challenges, auth-params with quoted-strings
// and their backslash escapes, or a token68 — with bounds, and anything else is refused. Pure.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace stockade::images {

struct AuthChallenge {
    std::string scheme;                    // lower case: "bearer", "basic"
    std::optional<std::string> token68{};  // the other form of a challenge's data
    std::vector<std::pair<std::string, std::string>> params{};  // names lower case, in order

    // A parameter's value by name (any case), or nullopt.
    [[nodiscard]] std::optional<std::string_view> param(std::string_view name) const;
    friend bool operator==(const AuthChallenge&, const AuthChallenge&) = default;
};

// Every challenge of a WWW-Authenticate value, in order. Several header fields can be joined
// with ", " first (RFC 9110 §5.3). Schemes and parameter names are case-insensitive and come back
// lower case; values keep their case, with quoted-pair escapes undone. Refused
// (kInvalidArgument), saying what and where: an empty value, a missing or malformed scheme,
// a parameter without '=' or value, an unterminated quoted-string, a control character, a
// parameter given twice in one challenge, more than 16 challenges or 32 parameters in one, and a
// value longer than 16 KiB.
Result<std::vector<AuthChallenge>> parse_auth_challenges(std::string_view header);

enum class AuthScheme { kBearer, kBasic };

// What a registry client needs to answer a challenge.
struct RegistryChallenge {
    AuthScheme scheme = AuthScheme::kBearer;
    std::string realm;      // Bearer: the token endpoint, an http:// or https:// URL
    std::string service{};  // Bearer only; may be empty
    std::string scope{};    // Bearer only; may be empty
    friend bool operator==(const RegistryChallenge&, const RegistryChallenge&) = default;
};

// The challenge to answer: the first Bearer one, else the first Basic one. A Bearer challenge
// must have a realm that is an http:// or https:// URL (kInvalidArgument); whether that URL may
// be reached, and with which credentials, is the client's decision. When no challenge is Bearer
// or Basic: kUnavailable, naming the schemes offered.
Result<RegistryChallenge> registry_challenge(std::span<const AuthChallenge> challenges);
// parse_auth_challenges, then registry_challenge.
Result<RegistryChallenge> parse_registry_challenge(std::string_view header);

}  // namespace stockade::images
