// Names of images: a registry reference as docker and the OCI distribution spec write it
// (`[REGISTRY[:PORT]/]REPOSITORY[:TAG][@sha256:DIGEST]`), and the shorter name an image has in our
// own store. Both are typed by users and read from archives (a docker-archive's RepoTags), so
// both are parsed strictly, and errors say what is wrong. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "images/digest.h"

namespace stockade::images {

// A reference with docker's defaults filled in: the registry `docker.io` when the first path
// component does not look like a host (it holds no '.' or ':' and is not `localhost`), the
// repository `library/NAME` for a one-component name on docker.io, and the tag `latest` when
// neither a tag nor a digest is given. With a digest the tag is kept only when it was written;
// a pull then fetches by digest, and the tag is a label.
struct Reference {
    // "docker.io", "ghcr.io", "localhost:5000", "[::1]:5000": lower case, except a one-label
    // host written with upper case ("Intranet"), which upper case alone marks as a registry.
    std::string registry;
    std::string repository;  // "library/debian", "org/team/tool"
    std::optional<std::string> tag{};
    std::optional<Digest> digest{};

    // The canonical form: "docker.io/library/debian:12",
    // "ghcr.io/o/r@sha256:…", "localhost:5000/x:1@sha256:…". parse_reference() reads it back
    // to the same value.
    [[nodiscard]] std::string str() const;
    // registry/repository: "docker.io/library/debian".
    [[nodiscard]] std::string name() const;
    // What a manifest request names: the digest when there is one, else the tag.
    [[nodiscard]] std::string tag_or_digest() const;

    friend bool operator==(const Reference&, const Reference&) = default;
};

// Follows the grammar of github.com/distribution/reference: path components are lower-case
// letters and digits joined by '.', '_', "__" or runs of '-'; a tag is [A-Za-z0-9_][A-Za-z0-9_.-]
// of at most 128 characters; a registry is a host name, an IPv4 address or a bracketed IPv6
// address, with an optional port; the registry and repository together are at most 255
// characters. "index.docker.io" is written "docker.io". A 64-hex-digit name without a registry
// is refused as an image ID, as docker does. Errors are kInvalidArgument:
// "reference \"Debian\": repository names are lower case".
Result<Reference> parse_reference(std::string_view text);

// The host a registry's API is served from: "registry-1.docker.io" for docker.io, else the
// registry itself (with its port).
std::string registry_api_host(std::string_view registry);

// The name of an image in our store: NAME[:TAG][@sha256:DIGEST], NAME being
// [a-z0-9][a-z0-9._-]* of at most 128 characters, TAG as in a reference. No '/' and no
// registry: a store name is local, and it is a file name in the store as it stands. Whether a
// missing tag means `latest` is the store's decision, so none is filled in here.
struct ImageName {
    std::string name;
    std::optional<std::string> tag{};
    std::optional<Digest> digest{};

    [[nodiscard]] std::string str() const;
    friend bool operator==(const ImageName&, const ImageName&) = default;
};

Result<ImageName> parse_image_name(std::string_view text);

// Whether `text` is a tag: [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}.
bool is_valid_tag(std::string_view text);

}  // namespace stockade::images
