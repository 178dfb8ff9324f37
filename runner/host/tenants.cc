#include "runner/host/tenants.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/parse.h"
#include "common/strict_json.h"
#include "common/syscall.h"
#include "common/toml_json.h"
#include "images/store.h"
#include "runner/session/host_ids.h"
#include "runner/session/sandbox_config.h"

namespace stockade::runner {
namespace {

using json = nlohmann::json;
using Keys = std::span<const std::string_view>;

constexpr std::string_view kTopKeys[] = {"tenants"};
constexpr std::string_view kBindingKeys[] = {"tenant", "expires"};
constexpr std::string_view kTenantKeys[] = {
    "name",  "token_sha256", "workspace_root", "host_uid_range", "policy", "network",
    "allow", "ask",          "deny",           "limits",         "image"};
constexpr std::string_view kLimitKeys[] = {"sessions", "calls",    "calls_per_second", "memory",
                                           "pids",     "cpu",      "cpu_weight",       "tmp_size",
                                           "disk",     "idle_ttl", "max_lifetime"};

constexpr std::size_t kMaxFileBytes = 1 << 20;
constexpr std::size_t kMaxNesting = 16;  // the file needs 4: {tenants: [{limits: {}}]}
// Far beyond any session, and far enough below the ~292 years a steady_clock time point holds
// that deadline arithmetic cannot overflow.
constexpr std::chrono::seconds kMaxDuration = std::chrono::days(3650);

Error invalid(std::string message) {
    return Error{Errc::kInvalidArgument, std::move(message)};
}

// A string as a JSON literal: quoted, control characters escaped, so that a message stays on
// one line whatever the file holds.
std::string as_literal(std::string_view text) {
    return json(std::string(text)).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string listed(Keys keys) {
    return fmt::format("{}", fmt::join(keys, ", "));
}

std::optional<Sha256Digest> parse_sha256_hex(std::string_view text) {
    Sha256Digest digest{};
    if (text.size() != digest.size() * 2) {
        return std::nullopt;
    }
    for (std::size_t i = 0; i < digest.size(); ++i) {
        const int high = hex_digit_value(text[2 * i]);
        const int low = hex_digit_value(text[2 * i + 1]);
        if (high < 0 || low < 0) {
            return std::nullopt;
        }
        digest[i] = static_cast<unsigned char>(high * 16 + low);
    }
    return digest;
}

}  // namespace

// "90", "90s", "30m", "24h", "7d": a whole number of seconds, minutes, hours or days, > 0.
Result<std::chrono::seconds> parse_duration_text(std::string_view text) {
    const std::size_t digits = text.find_first_not_of("0123456789");
    const std::string_view unit = digits == std::string_view::npos ? "" : text.substr(digits);
    std::int64_t scale = 0;
    if (unit.empty() || unit == "s") {
        scale = 1;
    } else if (unit == "m") {
        scale = 60;
    } else if (unit == "h") {
        scale = 3600;
    } else if (unit == "d") {
        scale = 86400;
    }
    auto number = parse_uint(text.substr(0, digits), 1, std::numeric_limits<uint64_t>::max());
    if (scale == 0 || !number) {
        return invalid(
            fmt::format("{} is not a duration: give a whole number above 0 of "
                        "seconds, or with s, m, h or d, such as \"90s\", \"30m\", "
                        "\"24h\", \"7d\"",
                        as_literal(text)));
    }
    const auto max = static_cast<uint64_t>(kMaxDuration.count() / scale);
    if (*number > max) {
        return invalid(
            fmt::format("{} is too long: at most {}d", as_literal(text),
                        std::chrono::duration_cast<std::chrono::days>(kMaxDuration).count()));
    }
    return std::chrono::seconds(static_cast<std::int64_t>(*number) * scale);
}

namespace {

// One object of the file: its keys checked against those it may have, its values read by kind,
// each reader leaving the default when the key is absent. Messages name the place:
//   tenant "acme": limits.memory: "1X" is not a size (...)
// "YYYY-MM-DD" (that day's start) or "YYYY-MM-DDTHH:MM:SSZ", in UTC; nullopt for anything else.
std::optional<std::chrono::sys_seconds> parse_utc_time(std::string_view text) {
    const bool date_only = text.size() == 10;
    if (!date_only && !(text.size() == 20 && text[10] == 'T' && text[19] == 'Z')) {
        return std::nullopt;
    }
    auto number = [&](std::size_t at, std::size_t digits, int low, int high) -> std::optional<int> {
        int value = 0;
        for (std::size_t i = at; i < at + digits; ++i) {
            if (text[i] < '0' || text[i] > '9') {
                return std::nullopt;
            }
            value = value * 10 + (text[i] - '0');
        }
        return value >= low && value <= high ? std::optional<int>(value) : std::nullopt;
    };
    if (text[4] != '-' || text[7] != '-' || (!date_only && (text[13] != ':' || text[16] != ':'))) {
        return std::nullopt;
    }
    const auto year = number(0, 4, 1970, 9999);
    const auto month = number(5, 2, 1, 12);
    const auto day = number(8, 2, 1, 31);
    const auto hour = date_only ? std::optional<int>(0) : number(11, 2, 0, 23);
    const auto minute = date_only ? std::optional<int>(0) : number(14, 2, 0, 59);
    const auto second = date_only ? std::optional<int>(0) : number(17, 2, 0, 59);
    if (!year || !month || !day || !hour || !minute || !second) {
        return std::nullopt;
    }
    const std::chrono::year_month_day ymd{std::chrono::year(*year),
                                          std::chrono::month(static_cast<unsigned>(*month)),
                                          std::chrono::day(static_cast<unsigned>(*day))};
    if (!ymd.ok()) {
        return std::nullopt;  // 2027-02-30
    }
    return std::chrono::sys_days(ymd) + std::chrono::hours(*hour) + std::chrono::minutes(*minute) +
           std::chrono::seconds(*second);
}

class Fields {
public:
    // `owner`: "tenant \"acme\"", "tenants[2]", or empty at the top; `prefix`: "limits." or "".
    Fields(const json& object, std::string owner, std::string prefix)
        : object_(object), owner_(std::move(owner)), prefix_(std::move(prefix)) {}

    [[nodiscard]] Error error(std::string_view key, std::string_view problem) const {
        return invalid(fmt::format("{}{}{}: {}", owner_part(), prefix_, key, problem));
    }

    [[nodiscard]] Status check_keys(Keys known) const {
        for (const auto& [key, value] : object_.items()) {
            if (std::ranges::find(known, key) == known.end()) {
                return invalid(fmt::format(
                    "{}unknown key {}: the keys {}are {}", owner_part(), as_literal(prefix_ + key),
                    prefix_.empty() ? "" : "of " + prefix_.substr(0, prefix_.size() - 1) + " ",
                    listed(known)));
            }
        }
        return ok_status();
    }

    [[nodiscard]] const json* find(std::string_view key) const {
        const auto it = object_.find(key);
        return it == object_.end() ? nullptr : &*it;
    }

    [[nodiscard]] Error wrong_type(std::string_view key, std::string_view expected) const {
        return error(key, fmt::format("must be {}, not {}", expected, find(key)->type_name()));
    }

    Status text(std::string_view key, std::string& out) const {
        const json* value = find(key);
        if (value == nullptr) {
            return ok_status();
        }
        if (!value->is_string()) {
            return wrong_type(key, "a string");
        }
        return checked_text(key, value->get_ref<const std::string&>(), out);
    }

    Status texts(std::string_view key, std::vector<std::string>& out) const {
        const json* value = find(key);
        if (value == nullptr) {
            return ok_status();
        }
        if (!value->is_array() ||
            !std::ranges::all_of(*value, [](const json& item) { return item.is_string(); })) {
            return error(key, "must be a list of strings, such as [\"Bash(git *)\"]");
        }
        out.clear();
        for (const json& item : *value) {
            RETURN_IF_ERROR(
                checked_text(key, item.get_ref<const std::string&>(), out.emplace_back()));
        }
        return ok_status();
    }

    Status count(std::string_view key, std::size_t& out) const {
        const json* value = find(key);
        if (value == nullptr) {
            return ok_status();
        }
        if (value->is_number_unsigned() && value->get<uint64_t>() > 0) {
            out = value->get<uint64_t>();
        } else if (value->is_number_integer() && value->get<int64_t>() > 0) {
            out = static_cast<std::size_t>(value->get<int64_t>());  // from TOML, signed
        } else {
            return error(key, fmt::format("must be a whole number above 0, not {}", value->dump()));
        }
        return ok_status();
    }

    Status rate(std::string_view key, double& out) const {
        const json* value = find(key);
        if (value == nullptr) {
            return ok_status();
        }
        if (!value->is_number()) {
            return wrong_type(key, "a number (0: unlimited)");
        }
        const double rate = value->get<double>();
        if (!std::isfinite(rate) || rate < 0) {
            return error(key, fmt::format("must be 0 (unlimited) or more, not {}", rate));
        }
        out = rate;
        return ok_status();
    }

    Status duration(std::string_view key, std::chrono::seconds& out) const {
        const json* value = find(key);
        if (value == nullptr) {
            return ok_status();
        }
        std::string text;
        if (value->is_number_integer()) {
            text = value->dump();
        } else if (value->is_string()) {
            text = value->get<std::string>();
        } else {
            return wrong_type(key, "whole seconds or a string such as \"30m\"");
        }
        auto seconds = parse_duration_text(text);
        if (!seconds) {
            return error(key, seconds.error().message);
        }
        out = *seconds;
        return ok_status();
    }

    // A limit in the CLI's syntax, kept as text; a number is taken as the text it reads as.
    // A limit in the CLI's syntax ("1G", 256, 0.5), read by that flag's own parser (`parse`),
    // so that a file the server accepts starts sessions.
    template <class T>
    Status limit(std::string_view key, std::string_view example,
                 Result<T> (*parse)(std::string_view), std::optional<T>& out) const {
        const json* value = find(key);
        if (value == nullptr) {
            return ok_status();
        }
        std::string text;
        if (value->is_string()) {
            text = value->get<std::string>();
        } else if (value->is_number_integer()) {
            text = value->dump();
        } else if (value->is_number_float()) {
            text = fmt::format("{}", value->get<double>());
        } else {
            return wrong_type(key, fmt::format("a string such as {}", example));
        }
        auto parsed = parse(text);
        if (!parsed) {
            return error(key, parsed.error().message);
        }
        out = *parsed;
        return ok_status();
    }

    // A list of SHA-256s as hex. A bad entry is not echoed: it may be a token pasted by mistake.
    // A list of SHA-256 hashes, each "<64 hex>" or {"sha256": "<64 hex>", "expires": "..."}.
    Status digests(std::string_view key, std::vector<Sha256Digest>& out,
                   std::vector<std::chrono::sys_seconds>& expires) const {
        const json* value = find(key);
        if (value == nullptr || !value->is_array() || value->empty()) {
            return error(key,
                         "give a list of at least one SHA-256 of a bearer token, as 64 hex "
                         "digits (`stockade token hash`)");
        }
        out.clear();
        expires.clear();
        for (std::size_t i = 0; i < value->size(); ++i) {
            const std::string where = fmt::format("{}[{}]", key, i);
            const json* item = &(*value)[i];
            auto until = std::chrono::sys_seconds::max();
            if (item->is_object()) {
                for (const auto& [name, unused] : item->items()) {
                    if (name != "sha256" && name != "expires") {
                        return error(where + "." + name,
                                     "is not a key of a token: give sha256 and, optionally, "
                                     "expires");
                    }
                }
                if (const auto it = item->find("expires"); it != item->end()) {
                    const auto parsed = it->is_string()
                                            ? parse_utc_time(it->get_ref<const std::string&>())
                                            : std::nullopt;
                    if (!parsed) {
                        return error(where + ".expires",
                                     "give a UTC date or time: \"2027-01-31\" or "
                                     "\"2027-01-31T18:00:00Z\"");
                    }
                    until = *parsed;
                }
                const auto it = item->find("sha256");
                item = it == item->end() ? nullptr : &*it;
            }
            const auto digest = item != nullptr && item->is_string()
                                    ? parse_sha256_hex(item->get_ref<const std::string&>())
                                    : std::nullopt;
            if (!digest) {
                return error(where,
                             "not a SHA-256 as 64 hex digits (the value is not shown: it may be "
                             "a token); make one with `stockade token hash`");
            }
            out.push_back(*digest);
            expires.push_back(until);
        }
        return ok_status();
    }

private:
    [[nodiscard]] std::string owner_part() const { return owner_.empty() ? "" : owner_ + ": "; }

    Status checked_text(std::string_view key, const std::string& text, std::string& out) const {
        if (text.find('\0') != std::string::npos) {
            return error(key, "holds a NUL character");
        }
        out = text;
        return ok_status();
    }

    const json& object_;
    std::string owner_;
    std::string prefix_;
};

bool valid_name(std::string_view name) {
    auto allowed = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    };
    return !name.empty() && name.size() <= 63 && name.front() != '_' && name.front() != '-' &&
           std::ranges::all_of(name, allowed);
}

Status parse_limits(const Fields& tenant, TenantLimits& out, const std::string& owner) {
    const json* value = tenant.find("limits");
    if (value == nullptr) {
        return ok_status();
    }
    if (!value->is_object()) {
        return tenant.wrong_type("limits", "a table of limits");
    }
    const Fields limits(*value, owner, "limits.");
    RETURN_IF_ERROR(limits.check_keys(kLimitKeys));
    RETURN_IF_ERROR(limits.count("sessions", out.sessions));
    RETURN_IF_ERROR(limits.count("calls", out.calls));
    RETURN_IF_ERROR(limits.rate("calls_per_second", out.calls_per_second));
    if (limits.find("cpu_weight") != nullptr) {
        std::size_t weight = 0;
        RETURN_IF_ERROR(limits.count("cpu_weight", weight));
        if (weight > 10'000) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("{}: limits.cpu_weight: must be 1 to 10000 (100 is every "
                                     "tenant's equal share), not {}",
                                     owner, weight)};
        }
        out.cpu_weight = weight;
    }
    RETURN_IF_ERROR(limits.limit("memory", "\"1G\"", parse_memory_limit, out.memory_bytes));
    RETURN_IF_ERROR(limits.limit("pids", "\"256\"", parse_pids_limit, out.pids));
    RETURN_IF_ERROR(limits.limit("cpu", "\"0.5\"", parse_cpu_limit, out.cpu));
    RETURN_IF_ERROR(limits.limit("tmp_size", "\"256M\"", parse_tmp_limit, out.tmp_bytes));
    RETURN_IF_ERROR(limits.limit("disk", "\"512M\"", parse_size, out.disk_bytes));
    RETURN_IF_ERROR(limits.duration("idle_ttl", out.idle_ttl));
    RETURN_IF_ERROR(limits.duration("max_lifetime", out.max_lifetime));
    return ok_status();
}

// One tenant, on its own; what tenants must not share is checked by parse_config. `position`
// names it in messages until its name is known: "tenants[2]", or "tenant" in a pod's binding.
Result<Tenant> parse_tenant(const json& value, const std::string& position, TenantAuth auth) {
    if (!value.is_object()) {
        return invalid(fmt::format("{}: must be a table of a tenant's keys ({}), not {}", position,
                                   listed(kTenantKeys), value.type_name()));
    }
    Tenant tenant;
    if (!value.contains("name")) {
        return invalid(
            fmt::format("{}: name is missing: give the tenant a name such as \"acme\"", position));
    }
    RETURN_IF_ERROR(Fields(value, position, "").text("name", tenant.name));
    if (!valid_name(tenant.name)) {
        return invalid(
            fmt::format("{}: name {} is not a tenant name: use 1 to 63 of a-z, 0-9, "
                        "'_' and '-', starting with a letter or digit",
                        position, as_literal(tenant.name)));
    }
    const std::string owner = fmt::format("tenant \"{}\"", tenant.name);
    const Fields fields(value, owner, "");
    RETURN_IF_ERROR(fields.check_keys(kTenantKeys));
    const bool hashes_given = fields.find("token_sha256") != nullptr;
    switch (auth) {
        case TenantAuth::kTokenHashes:
            RETURN_IF_ERROR(
                fields.digests("token_sha256", tenant.token_hashes, tenant.token_expires));
            break;
        case TenantAuth::kAccessTokens:
            if (hashes_given) {
                return fields.error("token_sha256",
                                    "this server takes OAuth access tokens (serve --oauth), whose "
                                    "tenant claim names the tenant, and no other token: drop "
                                    "token_sha256, or serve without --oauth");
            }
            break;
        case TenantAuth::kEither:
            if (hashes_given) {
                RETURN_IF_ERROR(
                    fields.digests("token_sha256", tenant.token_hashes, tenant.token_expires));
            }
            break;
    }
    RETURN_IF_ERROR(fields.text("workspace_root", tenant.workspace_root));
    if (!tenant.workspace_root.starts_with('/')) {
        return fields.error("workspace_root",
                            "give the absolute path of the directory the tenant's session "
                            "workspaces are made under, such as \"/srv/stockade/acme\"");
    }
    std::string range;
    RETURN_IF_ERROR(fields.text("host_uid_range", range));
    if (!range.empty()) {
        auto parsed = parse_host_id_range(range);
        if (!parsed) {
            return fields.error("host_uid_range",
                                fmt::format("{} is not FIRST-LAST, such as \"300000-365535\" "
                                            "(unprivileged host ids, not 0); leave it out for "
                                            "the default range",
                                            as_literal(range)));
        }
        tenant.host_uid_range = *parsed;
    }
    RETURN_IF_ERROR(fields.text("policy", tenant.policy));
    std::string network = "none";
    RETURN_IF_ERROR(fields.text("network", network));
    if (network == "allowlist") {
        tenant.network = sandbox::NetworkMode::kAllowlist;
    } else if (network != "none") {
        return fields.error("network", fmt::format("{} is not a mode: use \"none\" or "
                                                   "\"allowlist\"",
                                                   as_literal(network)));
    }
    // "image": one image, or the list of those its sessions may choose (Stockade-Image), the
    // first the default.
    if (const json* image = value.find("image") != value.end() ? &value.at("image") : nullptr;
        image != nullptr && image->is_string()) {
        RETURN_IF_ERROR(fields.text("image", tenant.images.emplace_back()));
    } else {
        RETURN_IF_ERROR(fields.texts("image", tenant.images));
    }
    for (const std::string& ref : tenant.images) {
        if (auto checked = images::check_image_ref(ref); !checked) {
            return fields.error("image", checked.error().message);
        }
    }
    RETURN_IF_ERROR(fields.texts("allow", tenant.allow));
    RETURN_IF_ERROR(fields.texts("ask", tenant.ask));
    RETURN_IF_ERROR(fields.texts("deny", tenant.deny));
    RETURN_IF_ERROR(parse_limits(fields, tenant.limits, owner));
    return tenant;
}

// What two tenants must not share: a name, a token, host ids. Tenants that leave host_uid_range
// out share the default range, as sessions of one tenant do; a range given is the operator's
// wish to keep that tenant's ids apart, so it may overlap no other tenant's, nor the default
// range when a tenant uses it.
Status check_apart(const std::vector<Tenant>& tenants) {
    std::map<Sha256Digest, const Tenant*> token_owner;
    for (std::size_t i = 0; i < tenants.size(); ++i) {
        const Tenant& tenant = tenants[i];
        for (std::size_t j = 0; j < i; ++j) {
            if (tenants[j].name == tenant.name) {
                return invalid(
                    fmt::format("tenants[{}] and tenants[{}] are both named \"{}\": "
                                "give each tenant its own name",
                                j, i, tenant.name));
            }
        }
        for (std::size_t k = 0; k < tenant.token_hashes.size(); ++k) {
            const auto [it, inserted] = token_owner.emplace(tenant.token_hashes[k], &tenant);
            if (!inserted) {
                return invalid(fmt::format(
                    "tenant \"{}\": token_sha256[{}] is also a token of tenant \"{}\": a token "
                    "must name one tenant; give each its own (`stockade token hash`)",
                    tenant.name, k, it->second->name));
            }
        }
    }
    for (std::size_t i = 0; i < tenants.size(); ++i) {
        const HostIdRange a = tenants[i].host_uid_range.value_or(HostIdRange{});
        for (std::size_t j = 0; j < i; ++j) {
            if (!tenants[i].host_uid_range && !tenants[j].host_uid_range) {
                continue;
            }
            const HostIdRange b = tenants[j].host_uid_range.value_or(HostIdRange{});
            if (a.first <= b.last() && b.first <= a.last()) {
                auto shown = [](const Tenant& t) {
                    return t.host_uid_range
                               ? fmt::format("\"{}\"", host_id_range_text(*t.host_uid_range))
                               : fmt::format("the default {}", host_id_range_text({}));
                };
                return invalid(fmt::format(
                    "tenant \"{}\": host_uid_range {} overlaps {} of tenant \"{}\": give each "
                    "tenant host ids of its own",
                    tenants[i].name, shown(tenants[i]), shown(tenants[j]), tenants[j].name));
            }
        }
    }
    return ok_status();
}

Result<TenantsConfig> parse_config(const json& doc, TenantAuth auth) {
    if (!doc.is_object()) {
        return invalid(fmt::format("the file must hold a table with the key \"tenants\", not {}",
                                   doc.type_name()));
    }
    const Fields top(doc, "", "");
    RETURN_IF_ERROR(top.check_keys(kTopKeys));
    const json* list = top.find("tenants");
    if (list == nullptr || !list->is_array() || list->empty()) {
        return top.error("tenants", "give a list of at least one tenant ([[tenants]] in TOML)");
    }
    TenantsConfig config;
    for (std::size_t i = 0; i < list->size(); ++i) {
        ASSIGN_OR_RETURN(Tenant tenant,
                         parse_tenant((*list)[i], fmt::format("tenants[{}]", i), auth));
        config.tenants.push_back(std::move(tenant));
    }
    RETURN_IF_ERROR(check_apart(config.tenants));
    return config;
}

}  // namespace

Result<TenantsConfig> parse_tenants(std::string_view text, bool toml, TenantAuth auth) {
    ASSIGN_OR_RETURN(const json doc,
                     toml ? toml_to_json(text) : parse_strict_json(text, kMaxNesting));
    return parse_config(doc, auth);
}

Result<PodBinding> parse_pod_binding(std::string_view text) {
    if (text.size() > kMaxFileBytes) {
        return invalid(
            fmt::format("the binding is {} bytes, over the limit of {}: give one "
                        "tenant, as in a tenants file",
                        text.size(), kMaxFileBytes));
    }
    ASSIGN_OR_RETURN(const json doc, parse_strict_json(text, kMaxNesting));
    if (!doc.is_object()) {
        return invalid(
            fmt::format("the binding must be an object with the key \"tenant\" (and, optionally, "
                        "\"expires\"), not {}",
                        doc.type_name()));
    }
    const Fields top(doc, "", "");
    RETURN_IF_ERROR(top.check_keys(kBindingKeys));
    const json* tenant = top.find("tenant");
    if (tenant == nullptr || !tenant->is_object()) {
        return top.error("tenant",
                         "give the one tenant this pod serves, as a tenants file has it: "
                         "{\"name\": \"acme\", \"token_sha256\": [\"<64 hex>\"], "
                         "\"workspace_root\": \"/workspace\", ...}");
    }
    PodBinding binding;
    ASSIGN_OR_RETURN(binding.tenant, parse_tenant(*tenant, "tenant", TenantAuth::kTokenHashes));
    RETURN_IF_ERROR(check_apart({binding.tenant}));  // its own tokens, each once
    if (const json* expires = top.find("expires"); expires != nullptr) {
        binding.expires = expires->is_string()
                              ? parse_utc_time(expires->get_ref<const std::string&>())
                              : std::nullopt;
        if (!binding.expires) {
            return top.error("expires",
                             "give when the claim ends as a UTC date or time: \"2026-12-31\" or "
                             "\"2026-12-31T18:00:00Z\", or leave it out");
        }
    }
    return binding;
}

std::string utc_time_text(std::chrono::sys_seconds time) {
    const auto day = std::chrono::floor<std::chrono::days>(time);
    const std::chrono::year_month_day ymd(day);
    const std::chrono::hh_mm_ss clock(time - day);
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", static_cast<int>(ymd.year()),
                       static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                       clock.hours().count(), clock.minutes().count(), clock.seconds().count());
}

Result<TenantsConfig> load_tenants(const std::string& path, TenantAuth auth) {
    auto text = read_file(path, kMaxFileBytes);
    if (!text) {
        return std::move(text).error().wrap("tenants file");
    }
    auto config = parse_tenants(*text, path.ends_with(".toml"), auth);
    if (!config) {
        return std::move(config).error().wrap(fmt::format("tenants file {}", as_literal(path)));
    }
    return config;
}

Result<std::vector<Sha256Digest>> parse_token_hashes(std::string_view text) {
    std::vector<Sha256Digest> hashes;
    std::size_t number = 0;
    while (!text.empty()) {
        ++number;
        const std::size_t end = std::min(text.find('\n'), text.size());
        std::string_view line = text.substr(0, end);
        text.remove_prefix(std::min(end + 1, text.size()));
        const std::size_t first = line.find_first_not_of(" \t\r");
        if (first == std::string_view::npos || line[first] == '#') {
            continue;
        }
        line = line.substr(first, line.find_last_not_of(" \t\r") + 1 - first);
        const auto digest = parse_sha256_hex(line);
        if (!digest) {
            // The line is not shown: it may be a token pasted by mistake.
            return invalid(
                fmt::format("line {}: not a SHA-256 as 64 hex digits; each line is "
                            "one, made with `stockade token hash`, or a # comment",
                            number));
        }
        hashes.push_back(*digest);
    }
    if (hashes.empty()) {
        return invalid("no token hash: add a line of 64 hex digits (`stockade token hash`)");
    }
    return hashes;
}

bool digest_in(const std::vector<Sha256Digest>& hashes, const Sha256Digest& digest) {
    const std::string_view wanted(reinterpret_cast<const char*>(digest.data()),  // NOLINT
                                  digest.size());
    bool found = false;
    for (const Sha256Digest& hash : hashes) {
        const std::string_view known(reinterpret_cast<const char*>(hash.data()),  // NOLINT
                                     hash.size());
        found |= constant_time_equal(wanted, known);  // every hash, whatever matched
    }
    return found;
}

bool TenantsConfig::cpu_weighted() const {
    return std::any_of(tenants.begin(), tenants.end(),
                       [](const Tenant& tenant) { return tenant.limits.cpu_weight.has_value(); });
}

const Tenant* find_tenant(const TenantsConfig& config, std::string_view token,
                          std::chrono::system_clock::time_point now) {
    if (token.empty()) {
        return nullptr;
    }
    const Sha256Digest digest = sha256(token);
    const std::string_view wanted(reinterpret_cast<const char*>(digest.data()),  // NOLINT
                                  digest.size());
    const auto second = std::chrono::floor<std::chrono::seconds>(now);
    const Tenant* found = nullptr;
    for (const Tenant& tenant : config.tenants) {
        for (std::size_t k = 0; k < tenant.token_hashes.size(); ++k) {
            const Sha256Digest& hash = tenant.token_hashes[k];
            const std::string_view known(reinterpret_cast<const char*>(hash.data()),  // NOLINT
                                         hash.size());
            // Every hash, whatever matched; a token without an expiry never expires.
            const bool match = constant_time_equal(wanted, known);
            const bool live = k >= tenant.token_expires.size() || second < tenant.token_expires[k];
            if (match && live) {
                found = &tenant;
            }
        }
    }
    return found;
}

std::string token_hash_hex(std::string_view token) {
    return sha256_hex(token);
}

}  // namespace stockade::runner
