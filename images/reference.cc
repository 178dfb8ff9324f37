#include "images/reference.h"

#include <charconv>

#include <fmt/format.h>

#include "common/parse.h"
#include "common/quote.h"
#include "images/ascii.h"

namespace stockade::images {
namespace {

constexpr std::string_view kDockerHub = "docker.io";
constexpr std::size_t kMaxNameLength = 255;  // distribution/reference's NameTotalLengthMax
constexpr std::size_t kMaxTagLength = 128;
constexpr std::size_t kMaxImageNameLength = 128;
// Past this a text is no reference whatever it holds (name, tag and a digest together fit in
// well under it), and the parser need not look further.
constexpr std::size_t kMaxReferenceText = 1024;

Error invalid(std::string_view what, std::string_view text, std::string_view problem) {
    return Error{Errc::kInvalidArgument, fmt::format("{} {}: {}", what, quote(text), problem)};
}

bool is_lower_alnum(char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool is_alnum(char c) {
    return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

bool is_word(char c) {
    return is_alnum(c) || c == '_';
}

bool has_upper(std::string_view text) {
    for (char c : text) {
        if (c >= 'A' && c <= 'Z') {
            return true;
        }
    }
    return false;
}

// What is wrong with one path component, or nullopt: alpha-numeric (separator alpha-numeric)*,
// separator being '.', '_', "__" or one or more '-'.
std::optional<std::string> path_component_problem(std::string_view part) {
    if (part.empty()) {
        return "a path component is empty (\"//\", or '/' at an end)";
    }
    if (has_upper(part)) {
        return "repository names are lower case";
    }
    if (!is_lower_alnum(part.front()) || !is_lower_alnum(part.back())) {
        return fmt::format("path component {} must start and end with a letter or digit",
                           quote(part));
    }
    for (std::size_t i = 0; i < part.size();) {
        if (is_lower_alnum(part[i])) {
            ++i;
            continue;
        }
        std::size_t end = i;
        while (end < part.size() && !is_lower_alnum(part[end])) {
            ++end;
        }
        const std::string_view separator = part.substr(i, end - i);
        const bool dashes = separator.find_first_not_of('-') == std::string_view::npos;
        if (!(separator == "." || separator == "_" || separator == "__" || dashes)) {
            return fmt::format(
                "{} in path component {}: letters and digits may be joined only by '.', '_', "
                "\"__\" or dashes",
                quote(separator), quote(part));
        }
        i = end;
    }
    return std::nullopt;
}

std::optional<std::string> host_problem(std::string_view host) {
    if (host.empty()) {
        return "the registry host is empty";
    }
    if (host.front() == '[') {
        // RFC 3986's IP-literal, without zone ids: hex digits, ':' and the dots of an embedded
        // IPv4 address. The connection code parses the address itself; this keeps the text tame.
        if (host.size() < 4 || host.back() != ']') {
            return "'[' without ']' in the registry";
        }
        const std::string_view inside = host.substr(1, host.size() - 2);
        if (inside.find(':') == std::string_view::npos ||
            inside.find_first_not_of("0123456789abcdefABCDEF:.") != std::string_view::npos) {
            return fmt::format("{} is not an IPv6 address", quote(inside));
        }
        return std::nullopt;
    }
    std::size_t start = 0;
    while (start <= host.size()) {
        std::size_t dot = host.find('.', start);
        if (dot == std::string_view::npos) {
            dot = host.size();
        }
        const std::string_view label = host.substr(start, dot - start);
        if (label.empty()) {
            return fmt::format("registry {} has an empty label", quote(host));
        }
        for (char c : label) {
            if (!is_alnum(c) && c != '-') {
                return fmt::format(
                    "registry {} holds {}: a host name is letters, digits, '-' "
                    "and '.'",
                    quote(host), quote(std::string_view(&c, 1)));
            }
        }
        if (label.front() == '-' || label.back() == '-') {
            return fmt::format("registry {}: a label must not start or end with '-'", quote(host));
        }
        start = dot + 1;
    }
    return std::nullopt;
}

// host[:port], as lower-case text, or what is wrong with it.
Result<std::string> parse_registry(std::string_view whole, std::string_view domain) {
    std::string_view host = domain;
    std::optional<std::string_view> port;
    const std::size_t colon = domain.rfind(':');
    const std::size_t bracket = domain.rfind(']');
    if (colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket)) {
        host = domain.substr(0, colon);
        port = domain.substr(colon + 1);
    }
    if (auto problem = host_problem(host)) {
        return invalid("reference", whole, *problem);
    }
    if (port) {
        unsigned value = 0;
        const auto [end, ec] = std::from_chars(port->data(), port->data() + port->size(), value);
        if (port->empty() || ec != std::errc() || end != port->data() + port->size() ||
            value == 0 || value > 65535 || port->front() == '0') {
            return invalid(
                "reference", whole,
                fmt::format("registry port {} is not a number from 1 to 65535", quote(*port)));
        }
    }
    // Host names are case-insensitive, so the canonical form writes them in lower case — unless
    // upper case is all that made this a registry ("Intranet/x"): lower-cased, it would read back
    // as a Docker Hub repository.
    std::string registry = ascii_lower(domain);
    if (registry.find_first_of(".:") == std::string::npos && registry != "localhost") {
        registry = std::string(domain);
    }
    if (registry == "index.docker.io") {
        registry = kDockerHub;
    }
    return registry;
}

bool is_hex64(std::string_view text) {
    return text.size() == 64 &&
           text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

}  // namespace

bool is_valid_tag(std::string_view text) {
    if (text.empty() || text.size() > kMaxTagLength || !is_word(text.front())) {
        return false;
    }
    for (char c : text) {
        if (!is_word(c) && c != '.' && c != '-') {
            return false;
        }
    }
    return true;
}

namespace {

std::string tag_problem(std::string_view tag) {
    if (tag.empty()) {
        return "the tag after ':' is empty";
    }
    if (tag.size() > kMaxTagLength) {
        return fmt::format("the tag is longer than {} characters", kMaxTagLength);
    }
    return fmt::format(
        "tag {} is not letters, digits, '_', '.' and '-' (not starting with '.' "
        "or '-')",
        quote(tag));
}

}  // namespace

Result<Reference> parse_reference(std::string_view text) {
    constexpr std::string_view kWhat = "reference";
    if (text.empty()) {
        return Error{Errc::kInvalidArgument, "reference is empty"};
    }
    if (text.size() > kMaxReferenceText) {
        return invalid(kWhat, text, fmt::format("longer than {} characters", kMaxReferenceText));
    }
    if (const std::size_t scheme = text.find("://"); scheme != std::string_view::npos) {
        return invalid(
            kWhat, text,
            fmt::format("a reference has no scheme: drop {}", quote(text.substr(0, scheme + 3))));
    }
    Reference ref;
    std::string_view rest = text;
    if (const std::size_t at = rest.find('@'); at != std::string_view::npos) {
        auto digest = Digest::parse(rest.substr(at + 1));
        if (!digest) {
            return std::move(digest).error().wrap(fmt::format("reference {}", quote(text)));
        }
        ref.digest = std::move(*digest);
        rest = rest.substr(0, at);
    }
    // A ':' after the last '/' starts the tag; one before it is a registry's port.
    const std::size_t slash = rest.rfind('/');
    const std::size_t colon = rest.rfind(':');
    if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
        const std::string_view tag = rest.substr(colon + 1);
        if (!is_valid_tag(tag)) {
            return invalid(kWhat, text, tag_problem(tag));
        }
        ref.tag = std::string(tag);
        rest = rest.substr(0, colon);
    }
    if (rest.empty()) {
        return invalid(kWhat, text, "the repository name is empty");
    }

    std::string_view path = rest;
    bool explicit_registry = false;
    if (const std::size_t first = rest.find('/'); first != std::string_view::npos) {
        const std::string_view domain = rest.substr(0, first);
        // Docker's rule: the first component is a registry when it could not be a path
        // component of Docker Hub — it has a '.', a ':' or an upper-case letter, or is localhost.
        if (domain.find_first_of(".:") != std::string_view::npos || domain == "localhost" ||
            has_upper(domain)) {
            ASSIGN_OR_RETURN(ref.registry, parse_registry(text, domain));
            path = rest.substr(first + 1);
            explicit_registry = true;
        }
    }
    if (!explicit_registry) {
        ref.registry = kDockerHub;
    }
    if (path.empty()) {
        return invalid(kWhat, text, "the repository name is empty");
    }
    for (std::size_t start = 0; start <= path.size();) {
        std::size_t end = path.find('/', start);
        if (end == std::string_view::npos) {
            end = path.size();
        }
        if (auto problem = path_component_problem(path.substr(start, end - start))) {
            return invalid(kWhat, text, *problem);
        }
        start = end + 1;
    }
    if (!explicit_registry && is_hex64(path)) {
        return invalid(kWhat, text,
                       "a name of 64 hex digits is an image ID, not a repository; write "
                       "\"@sha256:…\" to pin a digest");
    }
    ref.repository = std::string(path);
    if (ref.registry == kDockerHub && ref.repository.find('/') == std::string::npos) {
        ref.repository = "library/" + ref.repository;
    }
    if (ref.registry.size() + 1 + ref.repository.size() > kMaxNameLength) {
        return invalid(kWhat, text,
                       fmt::format("the name {} is longer than {} characters",
                                   quote(ref.name(), kMaxNameLength), kMaxNameLength));
    }
    if (!ref.tag && !ref.digest) {
        ref.tag = "latest";
    }
    return ref;
}

std::string Reference::name() const {
    return registry + "/" + repository;
}

std::string Reference::str() const {
    std::string out = name();
    if (tag) {
        out += ':';
        out += *tag;
    }
    if (digest) {
        out += '@';
        out += digest->str();
    }
    return out;
}

std::string Reference::tag_or_digest() const {
    if (digest) {
        return digest->str();
    }
    return tag.value_or("latest");
}

std::string registry_api_host(std::string_view registry) {
    if (registry == kDockerHub) {
        return "registry-1.docker.io";
    }
    return std::string(registry);
}

Result<ImageName> parse_image_name(std::string_view text) {
    constexpr std::string_view kWhat = "image name";
    if (text.empty()) {
        return Error{Errc::kInvalidArgument, "image name is empty"};
    }
    if (text.size() > kMaxReferenceText) {
        return invalid(kWhat, text, fmt::format("longer than {} characters", kMaxReferenceText));
    }
    ImageName out;
    std::string_view rest = text;
    if (const std::size_t at = rest.find('@'); at != std::string_view::npos) {
        auto digest = Digest::parse(rest.substr(at + 1));
        if (!digest) {
            return std::move(digest).error().wrap(fmt::format("image name {}", quote(text)));
        }
        out.digest = std::move(*digest);
        rest = rest.substr(0, at);
    }
    if (const std::size_t colon = rest.find(':'); colon != std::string_view::npos) {
        const std::string_view tag = rest.substr(colon + 1);
        if (!is_valid_tag(tag)) {
            return invalid(kWhat, text, tag_problem(tag));
        }
        out.tag = std::string(tag);
        rest = rest.substr(0, colon);
    }
    if (rest.empty()) {
        return invalid(kWhat, text, "the name before ':' or '@' is empty");
    }
    if (rest.size() > kMaxImageNameLength) {
        return invalid(kWhat, text,
                       fmt::format("the name is longer than {} characters", kMaxImageNameLength));
    }
    if (rest.find('/') != std::string_view::npos) {
        return invalid(kWhat, text,
                       "a store name has no '/': to fetch from a registry, pull the reference "
                       "and give it a --name");
    }
    if (has_upper(rest)) {
        return invalid(kWhat, text, "image names are lower case");
    }
    if (!is_lower_alnum(rest.front())) {
        return invalid(kWhat, text, "an image name starts with a letter or digit");
    }
    for (char c : rest) {
        if (!is_lower_alnum(c) && c != '.' && c != '_' && c != '-') {
            return invalid(kWhat, text,
                           fmt::format("{} is not allowed: an image name is lower-case letters, "
                                       "digits, '.', '_' and '-'",
                                       quote(std::string_view(&c, 1))));
        }
    }
    out.name = std::string(rest);
    return out;
}

std::string ImageName::str() const {
    std::string out = name;
    if (tag) {
        out += ':';
        out += *tag;
    }
    if (digest) {
        out += '@';
        out += digest->str();
    }
    return out;
}

}  // namespace stockade::images
