#include "runner/mcp/oauth.h"

#include <algorithm>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "common/log.h"
#include "common/quote.h"
#include "common/strict_json.h"
#include "common/syscall.h"
#include "common/toml_json.h"

namespace stockade::mcp {

namespace {

using json = nlohmann::json;

constexpr std::string_view kKeys[] = {
    "issuer",           "resource",       "audience",     "jwks_file",     "authorization_servers",
    "scopes_supported", "required_scope", "tenant_claim", "leeway_seconds"};
constexpr std::string_view kWellKnown = "/.well-known/oauth-protected-resource";
constexpr std::size_t kMaxFileBytes = 64 << 10;
constexpr std::size_t kMaxJwksBytes = 1 << 20;
constexpr std::size_t kMaxNesting = 8;  // the file needs 2: {"scopes_supported": []}
constexpr std::size_t kMaxText = 1024;
constexpr std::int64_t kMaxLeeway = 300;

Error invalid(std::string message) {
    return Error{Errc::kInvalidArgument, std::move(message)};
}

// Text that may stand in a quoted-string of a WWW-Authenticate header and a log line as it is:
// visible ASCII, no '"' or '\'.
bool header_safe(std::string_view text) {
    return std::all_of(text.begin(), text.end(),
                       [](char c) { return c > ' ' && c < 0x7f && c != '"' && c != '\\'; });
}

// A scope-token (RFC 6749 §3.3): %x21 / %x23-5B / %x5D-7E.
bool scope_token(std::string_view text) {
    return !text.empty() && text.size() <= 128 && header_safe(text);
}

bool loopback_host(std::string_view host) {
    if (host == "localhost" || host == "[::1]") {
        return true;
    }
    return host.starts_with("127.") && std::all_of(host.begin(), host.end(), [](char c) {
               return c == '.' || (c >= '0' && c <= '9');
           });
}

// An URL as the file may give one: https (http for a loopback host only), a host, maybe a port
// and a path; no user, query or fragment. Its origin ("https://host:port") and path ("" or
// "/...").
struct Url {
    std::string origin;
    std::string path;
};

Result<Url> check_url(std::string_view text) {
    if (text.empty() || text.size() > kMaxText || !header_safe(text)) {
        return invalid(fmt::format("{} is not a URL: give one such as \"https://auth.example.com\"",
                                   quote(text)));
    }
    const bool https = text.starts_with("https://");
    if (!https && !text.starts_with("http://")) {
        return invalid(fmt::format("{}: give an https:// URL", quote(text)));
    }
    if (text.find_first_of("?#") != std::string_view::npos) {
        return invalid(fmt::format("{}: a URL here has no query (?) or fragment (#)", quote(text)));
    }
    const std::size_t start = https ? 8 : 7;
    const std::size_t slash = std::min(text.find('/', start), text.size());
    const std::string_view authority = text.substr(start, slash - start);
    std::string_view host = authority;
    std::string_view port;
    if (authority.starts_with('[')) {
        const std::size_t close = authority.find(']');
        host = authority.substr(0, close == std::string_view::npos ? 0 : close + 1);
        port = authority.substr(host.size());
    } else if (const std::size_t colon = authority.find(':'); colon != std::string_view::npos) {
        host = authority.substr(0, colon);
        port = authority.substr(colon);
    }
    const bool port_ok =
        port.empty() ||
        (port.size() >= 2 && port.size() <= 6 && port.front() == ':' &&
         std::all_of(port.begin() + 1, port.end(), [](char c) { return c >= '0' && c <= '9'; }));
    if (host.empty() || authority.find('@') != std::string_view::npos || !port_ok) {
        return invalid(fmt::format("{}: not a URL with a host (and, maybe, a port)", quote(text)));
    }
    if (!https && !loopback_host(host)) {
        return invalid(
            fmt::format("{}: give an https:// URL (http is for localhost, 127.0.0.1 "
                        "and [::1] only)",
                        quote(text)));
    }
    return Url{.origin = std::string(text.substr(0, slash)),
               .path = std::string(text.substr(slash))};
}

// One key of the file, read by kind; the place names it in errors: `tenant_claim: ...`.
class Fields {
public:
    explicit Fields(const json& object) : object_(object) {}

    [[nodiscard]] const json* find(std::string_view key) const {
        const auto it = object_.find(key);
        return it == object_.end() ? nullptr : &*it;
    }

    static Error error(std::string_view key, std::string_view problem) {
        return invalid(fmt::format("{}: {}", key, problem));
    }

    Status text(std::string_view key, std::string& out) const {
        const json* value = find(key);
        if (value == nullptr) {
            return ok_status();
        }
        if (!value->is_string() || value->get_ref<const std::string&>().empty()) {
            return error(key, "must be a non-empty string");
        }
        const auto& text = value->get_ref<const std::string&>();
        if (text.size() > kMaxText || text.find('\0') != std::string::npos) {
            return error(key,
                         fmt::format("{} is over {} bytes or holds a NUL", quote(text), kMaxText));
        }
        out = text;
        return ok_status();
    }

    Status texts(std::string_view key, std::vector<std::string>& out) const {
        const json* value = find(key);
        if (value == nullptr) {
            return ok_status();
        }
        if (!value->is_array() || value->empty() ||
            !std::all_of(value->begin(), value->end(),
                         [](const json& item) { return item.is_string(); })) {
            return error(key, "must be a list of at least one string");
        }
        out.clear();
        for (const json& item : *value) {
            out.push_back(item.get<std::string>());
        }
        return ok_status();
    }

private:
    const json& object_;
};

Result<OAuthConfig> parse_config(const json& doc) {
    if (!doc.is_object()) {
        return invalid(fmt::format("the file must hold a table of keys ({}), not {}",
                                   fmt::join(kKeys, ", "), doc.type_name()));
    }
    for (const auto& [key, value] : doc.items()) {
        if (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys)) {
            return invalid(
                fmt::format("unknown key {}: the keys are {}", quote(key), fmt::join(kKeys, ", ")));
        }
    }
    const Fields fields(doc);
    OAuthConfig config;
    RETURN_IF_ERROR(fields.text("issuer", config.issuer));
    RETURN_IF_ERROR(fields.text("resource", config.resource));
    RETURN_IF_ERROR(fields.text("audience", config.audience));
    RETURN_IF_ERROR(fields.text("jwks_file", config.jwks_file));
    RETURN_IF_ERROR(fields.texts("authorization_servers", config.authorization_servers));
    RETURN_IF_ERROR(fields.texts("scopes_supported", config.scopes_supported));
    RETURN_IF_ERROR(fields.text("required_scope", config.required_scope));
    RETURN_IF_ERROR(fields.text("tenant_claim", config.tenant_claim));

    if (config.issuer.empty()) {
        return Fields::error("issuer",
                             "missing: give the authorization server's issuer, exactly as its "
                             "tokens' iss says it, such as \"https://auth.example.com\"");
    }
    if (auto url = check_url(config.issuer); !url) {
        return Fields::error("issuer", url.error().message);
    }
    if (config.resource.empty() && config.audience.empty()) {
        return Fields::error("resource",
                             "missing: give this server's URL as clients reach it, such as "
                             "\"https://mcp.example.com/mcp\"; tokens must be issued for it "
                             "(aud), or for \"audience\" when that is given");
    }
    if (config.resource.empty()) {
        if (!check_url(config.audience)) {
            return Fields::error("resource",
                                 fmt::format("missing, and audience {} is not this server's URL: "
                                             "give the URL clients reach it at",
                                             quote(config.audience)));
        }
        config.resource = config.audience;
    }
    if (auto url = check_url(config.resource); !url) {
        return Fields::error("resource", url.error().message);
    }
    if (config.audience.empty()) {
        config.audience = config.resource;
    }
    if (!header_safe(config.audience)) {
        return Fields::error("audience", fmt::format("{}: use visible ASCII, without quotes or "
                                                     "backslashes",
                                                     quote(config.audience)));
    }
    if (config.jwks_file.empty() || !config.jwks_file.starts_with('/')) {
        return Fields::error("jwks_file",
                             "give the absolute path of the authorization server's JWK set (its "
                             "jwks_uri document), a file you keep current, such as "
                             "\"/etc/stockade/jwks.json\"");
    }
    if (config.authorization_servers.empty()) {
        config.authorization_servers = {config.issuer};
    }
    for (const std::string& server : config.authorization_servers) {
        if (auto url = check_url(server); !url) {
            return Fields::error("authorization_servers", url.error().message);
        }
    }
    if (!config.required_scope.empty() && !scope_token(config.required_scope)) {
        return Fields::error("required_scope",
                             fmt::format("{} is not one scope: use visible ASCII, without "
                                         "spaces, quotes or backslashes",
                                         quote(config.required_scope)));
    }
    const bool listed = fields.find("scopes_supported") != nullptr;
    for (const std::string& scope : config.scopes_supported) {
        if (!scope_token(scope)) {
            return Fields::error("scopes_supported",
                                 fmt::format("{} is not a scope: use visible ASCII, without "
                                             "spaces, quotes or backslashes",
                                             quote(scope)));
        }
    }
    if (listed && !config.required_scope.empty() &&
        std::find(config.scopes_supported.begin(), config.scopes_supported.end(),
                  config.required_scope) == config.scopes_supported.end()) {
        return Fields::error("required_scope",
                             fmt::format("{} is not in scopes_supported: add it there, so that "
                                         "clients ask for it",
                                         quote(config.required_scope)));
    }
    if (!listed && !config.required_scope.empty()) {
        config.scopes_supported = {config.required_scope};
    }
    if (!header_safe(config.tenant_claim) || config.tenant_claim.size() > 128) {
        return Fields::error("tenant_claim",
                             fmt::format("{} is not a claim name: use visible ASCII, without "
                                         "spaces, quotes or backslashes",
                                         quote(config.tenant_claim)));
    }
    if (const json* leeway = fields.find("leeway_seconds"); leeway != nullptr) {
        std::optional<std::int64_t> seconds;
        if (leeway->is_number_unsigned()) {
            if (leeway->get<std::uint64_t>() <= static_cast<std::uint64_t>(kMaxLeeway)) {
                seconds = static_cast<std::int64_t>(leeway->get<std::uint64_t>());
            }
        } else if (leeway->is_number_integer()) {
            const auto value = leeway->get<std::int64_t>();
            if (value >= 0 && value <= kMaxLeeway) {
                seconds = value;
            }
        }
        if (!seconds) {
            return Fields::error("leeway_seconds",
                                 fmt::format("must be a whole number of seconds from 0 to {}, "
                                             "not {}",
                                             kMaxLeeway, leeway->dump()));
        }
        config.leeway = std::chrono::seconds(*seconds);
    }
    return config;
}

Result<jwt::KeySet> parse_keys(const Result<std::string>& text) {
    if (!text) {
        return text.error();
    }
    return jwt::KeySet::parse(*text);
}

std::shared_ptr<spdlog::logger> logger() {
    static const auto runner_logger = log::get("runner");
    return runner_logger;
}

std::string joined(const std::vector<std::string>& items) {
    return fmt::format("{}", fmt::join(items, ","));
}

}  // namespace

Result<OAuthConfig> parse_oauth_config(std::string_view text, bool toml) {
    ASSIGN_OR_RETURN(const json doc,
                     toml ? toml_to_json(text) : parse_strict_json(text, kMaxNesting));
    return parse_config(doc);
}

Result<OAuthConfig> load_oauth_config(const std::string& path) {
    auto text = read_file(path, kMaxFileBytes);
    if (!text) {
        return std::move(text).error().wrap(fmt::format("--oauth {}", quote(path)));
    }
    auto config = parse_oauth_config(*text, path.ends_with(".toml"));
    if (!config) {
        return std::move(config).error().wrap(fmt::format("--oauth {}", quote(path)));
    }
    return config;
}

std::string metadata_url_of(std::string_view resource) {
    auto url = check_url(resource);
    if (!url) {
        return {};
    }
    std::string path = url->path;
    while (!path.empty() && path.back() == '/') {
        path.pop_back();
    }
    return url->origin + std::string(kWellKnown) + path;
}

ResourceServer::ResourceServer(OAuthConfig config, std::chrono::milliseconds recheck)
    : config_(std::move(config)),
      expect_{.issuer = config_.issuer,
              .audience = config_.audience,
              .tenant_claim = config_.tenant_claim,
              .required_scope = config_.required_scope,
              .leeway = config_.leeway},
      recheck_(recheck) {
    metadata_url_ = metadata_url_of(config_.resource);
    nlohmann::ordered_json doc{{"resource", config_.resource},
                               {"authorization_servers", config_.authorization_servers}};
    if (!config_.scopes_supported.empty()) {
        doc["scopes_supported"] = config_.scopes_supported;
    }
    doc["bearer_methods_supported"] = nlohmann::ordered_json::array({"header"});
    metadata_ = doc.dump();
    std::string path = metadata_url_.substr(metadata_url_.find(kWellKnown));
    metadata_paths_ = {std::string(kWellKnown), std::string(kWellKnown) + "/mcp", path};
}

Result<std::unique_ptr<ResourceServer>> ResourceServer::open(OAuthConfig config,
                                                             std::chrono::milliseconds recheck) {
    if (metadata_url_of(config.resource).empty()) {
        return invalid(fmt::format("resource {} is not a URL", quote(config.resource)));
    }
    std::unique_ptr<ResourceServer> server(new ResourceServer(std::move(config), recheck));
    const std::string& path = server->config_.jwks_file;
    const auto text = read_file(path, kMaxJwksBytes);
    auto keys = parse_keys(text);
    if (!keys) {
        return invalid(
            fmt::format("jwks_file {}: {}: put the authorization server's JWK set "
                        "there (its jwks_uri document), and keep it current",
                        quote(path), keys.error().message));
    }
    server->content_ = sha256(*text);
    server->looked_ = std::chrono::steady_clock::now();
    server->keys_ = std::make_shared<const jwt::KeySet>(std::move(keys).value());
    for (const std::string& skipped : server->keys_->skipped()) {
        SPDLOG_LOGGER_WARN(logger(), "oauth jwks key skipped file={} why={}", quote(path), skipped);
    }
    return server;
}

std::shared_ptr<const jwt::KeySet> ResourceServer::keys() {
    std::lock_guard lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (now - looked_ < recheck_) {
        return keys_;
    }
    looked_ = now;
    const std::string& path = config_.jwks_file;
    const auto text = read_file(path, kMaxJwksBytes);
    if (!text) {
        if (!missing_) {
            SPDLOG_LOGGER_WARN(logger(),
                               "oauth jwks unreadable file={} keys={}; keeping the keys read "
                               "before: {}",
                               quote(path), joined(keys_->key_ids()), text.error().message);
            missing_ = true;
        }
        return keys_;
    }
    missing_ = false;
    const Sha256Digest content = sha256(*text);
    if (content == content_) {
        return keys_;
    }
    content_ = content;
    auto loaded = parse_keys(text);
    if (!loaded) {
        SPDLOG_LOGGER_WARN(logger(),
                           "oauth jwks reload failed file={} keys={}; keeping the keys read "
                           "before: {}",
                           quote(path), joined(keys_->key_ids()), loaded.error().message);
        return keys_;
    }
    keys_ = std::make_shared<const jwt::KeySet>(std::move(loaded).value());
    SPDLOG_LOGGER_INFO(logger(), "oauth jwks reloaded file={} keys={}", quote(path),
                       joined(keys_->key_ids()));
    for (const std::string& skipped : keys_->skipped()) {
        SPDLOG_LOGGER_WARN(logger(), "oauth jwks key skipped file={} why={}", quote(path), skipped);
    }
    return keys_;
}

std::vector<std::string> ResourceServer::key_ids() {
    return keys()->key_ids();
}

jwt::Verdict ResourceServer::check(std::string_view token,
                                   std::chrono::system_clock::time_point now) {
    const std::shared_ptr<const jwt::KeySet> set = keys();
    return jwt::verify(token, *set, expect_, now);
}

bool ResourceServer::serves_metadata_at(std::string_view path) const {
    return std::find(metadata_paths_.begin(), metadata_paths_.end(), path) != metadata_paths_.end();
}

std::string ResourceServer::challenge(const jwt::Refused* refused) const {
    std::string out = fmt::format("Bearer resource_metadata=\"{}\"", metadata_url_);
    if (refused != nullptr) {
        std::string description = refused->detail;
        std::replace_if(
            description.begin(), description.end(),
            [](char c) { return c < ' ' || c >= 0x7f || c == '"' || c == '\\'; }, ' ');
        out +=
            fmt::format(R"(, error="{}", error_description="{}")",
                        refused->reason == jwt::Refusal::kInsufficientScope ? "insufficient_scope"
                                                                            : "invalid_token",
                        description);
    }
    if (!config_.required_scope.empty()) {
        out += fmt::format(", scope=\"{}\"", config_.required_scope);
    }
    return out;
}

std::string ResourceServer::refusal_text(const jwt::Refused* refused) const {
    if (refused == nullptr) {
        return fmt::format(
            "This server needs an OAuth access token from {}: send Authorization: Bearer TOKEN. "
            "The server's metadata is at {}.\n",
            config_.authorization_servers.front(), metadata_url_);
    }
    if (refused->reason == jwt::Refusal::kInsufficientScope) {
        return fmt::format(
            "The access token does not grant the scope {} this server needs: get a token with "
            "that scope from the authorization server.\n",
            config_.required_scope);
    }
    return fmt::format(
        "The access token was refused: {}. Get a new one from the authorization server ({}).\n",
        refused->detail, config_.authorization_servers.front());
}

}  // namespace stockade::mcp
