#include "images/auth_challenge.h"

#include <fmt/format.h>

#include "common/quote.h"
#include "images/ascii.h"

namespace stockade::images {
namespace {

constexpr std::size_t kMaxHeader = std::size_t{16} << 10;
constexpr std::size_t kMaxChallenges = 16;
constexpr std::size_t kMaxParams = 32;

// RFC 9110 §5.6.2 tchar.
bool is_tchar(char c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
        return true;
    }
    return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// RFC 7235 §2.1 token68, without its trailing '='s.
bool is_token68_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~' || c == '+' || c == '/';
}

class Parser {
public:
    explicit Parser(std::string_view text) : text_(text) {}

    Result<std::vector<AuthChallenge>> parse() {
        std::vector<AuthChallenge> out;
        while (true) {
            skip_list_separators();
            if (at_end()) {
                break;
            }
            if (out.size() == kMaxChallenges) {
                return fail(fmt::format("more than {} challenges", kMaxChallenges));
            }
            ASSIGN_OR_RETURN(AuthChallenge challenge, parse_challenge());
            out.push_back(std::move(challenge));
        }
        if (out.empty()) {
            return fail("no challenge");
        }
        return out;
    }

private:
    [[nodiscard]] bool at_end() const { return pos_ >= text_.size(); }
    [[nodiscard]] char peek() const { return text_[pos_]; }

    Error fail(std::string_view problem) const {
        const std::string where =
            at_end() ? std::string("at the end") : fmt::format("at character {}", pos_ + 1);
        return Error{Errc::kInvalidArgument,
                     fmt::format("WWW-Authenticate {}: {} {}", quote(text_), problem, where)};
    }

    void skip_ows() {
        while (!at_end() && (peek() == ' ' || peek() == '\t')) {
            ++pos_;
        }
    }

    // List syntax (RFC 9110 §5.6.1): elements may be empty, so ", ," is allowed.
    void skip_list_separators() {
        while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == ',')) {
            ++pos_;
        }
    }

    std::string_view read_token() {
        const std::size_t start = pos_;
        while (!at_end() && is_tchar(peek())) {
            ++pos_;
        }
        return text_.substr(start, pos_ - start);
    }

    // Whether a token68 starts here: its characters, then '='s, then the end or a ','.
    [[nodiscard]] std::optional<std::size_t> token68_end() const {
        std::size_t i = pos_;
        while (i < text_.size() && is_token68_char(text_[i])) {
            ++i;
        }
        if (i == pos_) {
            return std::nullopt;
        }
        while (i < text_.size() && text_[i] == '=') {
            ++i;
        }
        const std::size_t end = i;
        while (i < text_.size() && (text_[i] == ' ' || text_[i] == '\t')) {
            ++i;
        }
        if (i == text_.size() || text_[i] == ',') {
            return end;
        }
        return std::nullopt;
    }

    // Whether an auth-param (token BWS '=') starts here, rather than the next challenge.
    [[nodiscard]] bool param_follows() const {
        std::size_t i = pos_;
        while (i < text_.size() && is_tchar(text_[i])) {
            ++i;
        }
        if (i == pos_) {
            return false;
        }
        while (i < text_.size() && (text_[i] == ' ' || text_[i] == '\t')) {
            ++i;
        }
        return i < text_.size() && text_[i] == '=';
    }

    Result<std::string> read_quoted_string() {
        ++pos_;  // the opening quote
        std::string value;
        while (!at_end()) {
            const char c = peek();
            const auto byte = static_cast<unsigned char>(c);
            if (c == '"') {
                ++pos_;
                return value;
            }
            if (c == '\\') {
                ++pos_;
                if (at_end()) {
                    break;
                }
                const auto escaped = static_cast<unsigned char>(peek());
                if ((escaped < 0x20 && escaped != '\t') || escaped == 0x7f) {
                    return fail("a control character after '\\' in a quoted-string");
                }
                value += peek();
                ++pos_;
                continue;
            }
            if ((byte < 0x20 && c != '\t') || byte == 0x7f) {
                return fail("a control character in a quoted-string");
            }
            value += c;
            ++pos_;
        }
        return fail("a quoted-string without its closing '\"'");
    }

    Result<AuthChallenge> parse_challenge() {
        AuthChallenge challenge;
        const std::string_view scheme = read_token();
        if (scheme.empty()) {
            return fail("expected an auth scheme");
        }
        challenge.scheme = ascii_lower(scheme);
        if (at_end() || peek() == ',') {
            return challenge;
        }
        if (peek() != ' ' && peek() != '\t') {
            return fail(
                fmt::format("{} after the scheme {}", quote(text_.substr(pos_, 1)), quote(scheme)));
        }
        skip_ows();
        if (at_end() || peek() == ',') {
            return challenge;
        }
        // "abc", "abc==": a token68. "realm=x" is not one (after the '=' comes neither ',' nor
        // the end), and reads as parameters below.
        if (auto end = token68_end()) {
            challenge.token68 = std::string(text_.substr(pos_, *end - pos_));
            pos_ = *end;
            return challenge;
        }
        while (true) {
            if (challenge.params.size() == kMaxParams) {
                return fail(fmt::format("more than {} parameters in one challenge", kMaxParams));
            }
            const std::string_view name = read_token();
            if (name.empty()) {
                return fail("expected a parameter name");
            }
            skip_ows();
            if (at_end() || peek() != '=') {
                return fail(fmt::format("parameter {} without '='", quote(name)));
            }
            ++pos_;
            skip_ows();
            std::string value;
            if (!at_end() && peek() == '"') {
                ASSIGN_OR_RETURN(value, read_quoted_string());
            } else {
                value = std::string(read_token());
                if (value.empty()) {
                    return fail(fmt::format("parameter {} has no value", quote(name)));
                }
            }
            std::string key = ascii_lower(name);
            for (const auto& [seen, unused] : challenge.params) {
                if (seen == key) {
                    return fail(fmt::format("parameter {} given twice", quote(key)));
                }
            }
            challenge.params.emplace_back(std::move(key), std::move(value));
            skip_ows();
            if (at_end()) {
                return challenge;
            }
            if (peek() != ',') {
                return fail(fmt::format("{} where ',' or the end was expected",
                                        quote(text_.substr(pos_, 1))));
            }
            skip_list_separators();
            if (at_end() || !param_follows()) {
                return challenge;  // the next challenge, if any, starts here
            }
        }
    }

    std::string_view text_;
    std::size_t pos_ = 0;
};

bool starts_with_icase(std::string_view text, std::string_view prefix) {
    return text.size() >= prefix.size() && ascii_lower(text.substr(0, prefix.size())) == prefix;
}

}  // namespace

std::optional<std::string_view> AuthChallenge::param(std::string_view name) const {
    const std::string key = ascii_lower(name);
    for (const auto& [param_name, value] : params) {
        if (param_name == key) {
            return value;
        }
    }
    return std::nullopt;
}

Result<std::vector<AuthChallenge>> parse_auth_challenges(std::string_view header) {
    if (header.size() > kMaxHeader) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("WWW-Authenticate: {} bytes is past the limit of {}",
                                 header.size(), kMaxHeader)};
    }
    return Parser(header).parse();
}

Result<RegistryChallenge> registry_challenge(std::span<const AuthChallenge> challenges) {
    const AuthChallenge* basic = nullptr;
    for (const AuthChallenge& c : challenges) {
        if (c.scheme == "bearer") {
            const auto realm = c.param("realm");
            if (!realm || realm->empty()) {
                return Error{Errc::kInvalidArgument,
                             "WWW-Authenticate: a Bearer challenge without a realm"};
            }
            if (!starts_with_icase(*realm, "https://") && !starts_with_icase(*realm, "http://")) {
                return Error{Errc::kInvalidArgument,
                             fmt::format("WWW-Authenticate: Bearer realm {} is not an http:// "
                                         "or https:// URL",
                                         quote(*realm))};
            }
            return RegistryChallenge{.scheme = AuthScheme::kBearer,
                                     .realm = std::string(*realm),
                                     .service = std::string(c.param("service").value_or("")),
                                     .scope = std::string(c.param("scope").value_or(""))};
        }
        if (c.scheme == "basic" && basic == nullptr) {
            basic = &c;
        }
    }
    if (basic != nullptr) {
        return RegistryChallenge{.scheme = AuthScheme::kBasic,
                                 .realm = std::string(basic->param("realm").value_or(""))};
    }
    std::string offered;
    for (const AuthChallenge& c : challenges) {
        offered += offered.empty() ? "" : ", ";
        offered += quote(c.scheme);
    }
    return Error{Errc::kUnavailable,
                 fmt::format("WWW-Authenticate offers {}: only Bearer and Basic are supported",
                             offered.empty() ? std::string("no challenge") : offered)};
}

Result<RegistryChallenge> parse_registry_challenge(std::string_view header) {
    ASSIGN_OR_RETURN(std::vector<AuthChallenge> challenges, parse_auth_challenges(header));
    return registry_challenge(challenges);
}

}  // namespace stockade::images
