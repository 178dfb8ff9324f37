#include "images/recipe.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/toml_json.h"

namespace stockade::images {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxName = 128;
constexpr size_t kMaxStep = 64 * 1024;
constexpr size_t kMaxListed = 1024;

Error invalid(std::string message) {
    return Error{Errc::kInvalidArgument, std::move(message)};
}

std::string literal(std::string_view text) {
    return json(std::string(text)).dump(-1, ' ', false, json::error_handler_t::replace);
}

bool lower_alnum(char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

// A Debian suite or codename: "bookworm", "stable", "bookworm-backports".
bool suite_name(std::string_view s) {
    return !s.empty() && s.size() <= kMaxName && lower_alnum(s.front()) &&
           std::all_of(s.begin(), s.end(), [](char c) { return lower_alnum(c) || c == '-'; });
}

// A Debian package name (Policy §5.6.7), optionally with =VERSION or /RELEASE.
bool package_name(std::string_view s) {
    const size_t cut = s.find_first_of("=/");
    const std::string_view name = s.substr(0, cut);
    if (name.size() < 2 || name.size() > kMaxName || !lower_alnum(name.front()) ||
        !std::all_of(name.begin(), name.end(),
                     [](char c) { return lower_alnum(c) || c == '+' || c == '-' || c == '.'; })) {
        return false;
    }
    if (cut == std::string_view::npos) {
        return true;
    }
    const std::string_view rest = s.substr(cut + 1);
    return !rest.empty() && rest.size() <= kMaxName &&
           std::all_of(rest.begin(), rest.end(), [](char c) {
               return lower_alnum(c) || (c >= 'A' && c <= 'Z') || c == '+' || c == '-' ||
                      c == '.' || c == ':' || c == '~';
           });
}

Result<std::string> string_at(const json& doc, const std::string& key) {
    const json& value = doc.at(key);
    if (!value.is_string()) {
        return invalid(fmt::format("recipe: {} takes a string", key));
    }
    return value.get<std::string>();
}

Result<std::vector<std::string>> strings_at(const json& doc, const std::string& key) {
    const json& value = doc.at(key);
    if (!value.is_array() || value.size() > kMaxListed ||
        !std::all_of(value.begin(), value.end(), [](const json& v) { return v.is_string(); })) {
        return invalid(
            fmt::format("recipe: {} takes a list of at most {} strings, e.g. {} = "
                        "[\"…\"]",
                        key, kMaxListed, key));
    }
    return value.get<std::vector<std::string>>();
}

}  // namespace

Status check_recipe(const Recipe& recipe) {
    if (recipe.suite.empty() == recipe.image.empty()) {
        return invalid(
            "recipe: give a base, either suite (a Debian suite, e.g. \"bookworm\") or image (an "
            "image of the store), not both");
    }
    if (!recipe.suite.empty() && !suite_name(recipe.suite)) {
        return invalid(
            fmt::format("recipe: suite {} is not a Debian suite name (lower-case "
                        "letters, digits and '-', e.g. \"bookworm\")",
                        literal(recipe.suite)));
    }
    if (!recipe.image.empty() && (!recipe.mirror.empty() || !recipe.variant.empty())) {
        return invalid(
            "recipe: mirror and variant are for a suite (mmdebstrap's); an image "
            "brings its own apt sources");
    }
    if (!recipe.mirror.empty() &&
        (!(recipe.mirror.starts_with("http://") || recipe.mirror.starts_with("https://")) ||
         recipe.mirror.find_first_of(" \t\n\r") != std::string::npos)) {
        return invalid(fmt::format(
            "recipe: mirror {} is not an http:// or https:// URL, e.g. \"http://deb.debian.org/"
            "debian\"",
            literal(recipe.mirror)));
    }
    if (!recipe.variant.empty() &&
        std::none_of(std::begin(kDebianVariants), std::end(kDebianVariants),
                     [&](const char* v) { return recipe.variant == v; })) {
        std::string known;
        for (const char* v : kDebianVariants) {
            known += (known.empty() ? "" : ", ") + std::string(v);
        }
        return invalid(fmt::format("recipe: variant {} is not one of mmdebstrap's: {}",
                                   literal(recipe.variant), known));
    }
    for (const std::string& package : recipe.packages) {
        if (!package_name(package)) {
            return invalid(
                fmt::format("recipe: package {} is not a Debian package name "
                            "(e.g. \"python3\", \"git=1:2.39.5-0+deb12u1\")",
                            literal(package)));
        }
    }
    for (const std::string& step : recipe.run) {
        if (step.empty() || step.size() > kMaxStep) {
            return invalid(
                fmt::format("recipe: each run step is a shell command of 1 to {} bytes", kMaxStep));
        }
    }
    for (const std::string& rule : recipe.allow) {
        if (rule.empty() || rule.size() > kMaxName ||
            rule.find_first_of("() \t\n\r,") != std::string::npos) {
            return invalid(
                fmt::format("recipe: allow {} is not a host pattern: HOST[:PORT], "
                            "e.g. \"pypi.org\" or \"*.example.com:443\"",
                            literal(rule)));
        }
    }
    return {};
}

Result<Recipe> parse_recipe(std::string_view toml_text) {
    auto doc = toml_to_json(toml_text);
    if (!doc) {
        return std::move(doc).error().wrap("recipe");
    }
    static const std::set<std::string, std::less<>> kKeys = {
        "suite", "image", "mirror", "variant", "packages", "run", "allow"};
    for (const auto& [key, value] : doc->items()) {
        if (!kKeys.contains(key)) {
            return invalid(
                fmt::format("recipe: unknown key {}: the keys are suite, image, "
                            "mirror, variant, packages, run and allow",
                            literal(key)));
        }
    }
    Recipe recipe;
    for (auto [key, field] : {std::pair{"suite", &recipe.suite},
                              {"image", &recipe.image},
                              {"mirror", &recipe.mirror},
                              {"variant", &recipe.variant}}) {
        if (doc->contains(key)) {
            ASSIGN_OR_RETURN(*field, string_at(*doc, key));
        }
    }
    for (auto [key, field] : {std::pair{"packages", &recipe.packages},
                              {"run", &recipe.run},
                              {"allow", &recipe.allow}}) {
        if (doc->contains(key)) {
            ASSIGN_OR_RETURN(*field, strings_at(*doc, key));
        }
    }
    RETURN_IF_ERROR(check_recipe(recipe));
    return recipe;
}

}  // namespace stockade::images
