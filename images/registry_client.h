// A pull over the OCI distribution API (v2): an image's manifest, config and layers fetched
// from a registry into an OCI image layout directory (`oci-layout`, `index.json`,
// `blobs/sha256/…`), which the store then imports as it imports any layout.
//
// Everything a registry sends is untrusted. The client speaks HTTPS (the system's CA store, and
// a PEM the operator adds) through Beast and OpenSSL, and plain HTTP only to a registry the
// operator named insecure that is also on a loopback address. Headers and documents are bounded,
// every connect and read has a timeout, and a 401 is answered once from the registry's challenge
// (a bearer token from its realm, or basic credentials). A manifest pinned by digest must have
// that digest; an index is narrowed to the wanted platform. Each blob streams into a temporary
// file beneath the layout's descriptor and is checked against its descriptor's digest and size
// as it arrives — a registry that sends more than the size is cut off there — and takes its name
// only once verified. `oci-layout` and `index.json` are written last, so a layout with an
// `index.json` is a complete one. Names under blobs/ come from parsed digests, never from the
// network's text. Credentials appear in no message and no log line.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "images/digest.h"
#include "images/oci_document.h"
#include "images/reference.h"
#include "images/registry_auth.h"

namespace stockade::images {

struct PullOptions {
    // Answers a registry's challenge; none means anonymous.
    std::optional<RegistryCredentials> credentials{};
    // A PEM file of CA certificates trusted besides the system's.
    std::optional<std::string> ca_file{};
    // Registries ("HOST:PORT", as a reference writes them) reached over plain HTTP. Each must
    // resolve to loopback addresses only; one that does not is refused, never reached.
    std::vector<std::string> insecure_registries{};
    // The image to pick from an index or manifest list.
    Platform platform = host_platform();
    // Whether the store already holds a blob: one it has is not fetched, and is then absent
    // from the layout (PullResult::blobs_skipped). Called for the config and each layer.
    std::function<bool(const Digest&)> have_blob{};
    std::chrono::milliseconds connect_timeout{std::chrono::seconds(30)};
    // Between two reads or writes of one request: a registry that stalls longer is given up on.
    std::chrono::milliseconds io_timeout{std::chrono::seconds(60)};
};

struct PullResult {
    Descriptor manifest;                   // as index.json holds it, with its ref.name annotation
    std::optional<Digest> index_digest{};  // when the reference named an index or manifest list
    Digest config_digest;
    std::vector<Descriptor> layers;
    uint64_t bytes_fetched = 0;  // body bytes of documents and blobs
    std::size_t blobs_skipped = 0;
};

// Pulls `reference` into `layout_dir_fd`, an empty directory, or one an earlier pull left (its
// index.json is removed first; its blobs are fetched again, not trusted). The entry's ref.name
// annotation is the tag, or the digest when only a digest was given. Errors name the URL (never
// credentials) and what to do next: kInvalidArgument for a bad document or a digest or size
// mismatch, kPermissionDenied for refused or missing credentials, kNotFound for an unknown
// repository, tag or blob, kPolicyDenied for plain HTTP that is not allowed, kDeadlineExceeded
// for a timeout, kUnavailable for a registry that cannot be reached or fails,
// kResourceExhausted for a header or document past its bound.
Result<PullResult> pull_to_layout(const Reference& reference, const PullOptions& options,
                                  int layout_dir_fd);

// The pure parts, for tests and messages.

// The base of a registry's API: "https://registry-1.docker.io", "http://127.0.0.1:5000".
std::string registry_base_url(const Reference& reference, bool plain_http);
// "/v2/<repository>/manifests/<tag or digest>" and "/v2/<repository>/blobs/<digest>".
std::string manifest_path(const Reference& reference);
std::string blob_path(const Reference& reference, const Digest& digest);
// The Accept header of a manifest request: OCI index and manifest, docker list and manifest.
std::string manifest_accept();
// A bearer token request: the realm with `service` and `scope` added to its query (either left
// out when empty). kInvalidArgument when the realm is not an absolute http(s) URL.
Result<std::string> token_request_url(std::string_view realm, std::string_view service,
                                      std::string_view scope);
// Whether plain HTTP to `registry` is allowed: it is listed in `insecure_registries`. The
// loopback check needs its addresses, so it is made when connecting.
bool insecure_listed(std::string_view registry,
                     const std::vector<std::string>& insecure_registries);
// The loopback check: OK when every address `authority` resolved to is a loopback one
// (127.0.0.0/8, ::1); otherwise kPolicyDenied, naming the address and what to do instead.
Status check_plain_http_addresses(std::string_view authority,
                                  const std::vector<std::string>& addresses);

}  // namespace stockade::images
