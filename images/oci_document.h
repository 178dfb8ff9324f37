// The JSON documents an image is made of, as the OCI image spec and docker's manifest v2 schema 2
// write them: an image index (or docker manifest list), an image manifest, an image config, an
// OCI image layout's `oci-layout` and `index.json`, and a docker-archive's `manifest.json`. They
// come from registries and archives we do not trust, so each parser bounds the document (4 MiB,
// 32 levels of nesting, a key given twice is an error), checks every field it reads, and names
// the field that is wrong: "image index: manifests[2].digest: …". Fields the spec lets a writer
// add are ignored. Pure: the caller fetches the bytes and checks their digest (digest.h) first.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/result.h"
#include "images/digest.h"

namespace stockade::images {

namespace media_type {
inline constexpr std::string_view kOciIndex = "application/vnd.oci.image.index.v1+json";
inline constexpr std::string_view kOciManifest = "application/vnd.oci.image.manifest.v1+json";
inline constexpr std::string_view kOciConfig = "application/vnd.oci.image.config.v1+json";
inline constexpr std::string_view kOciLayer = "application/vnd.oci.image.layer.v1.tar";
inline constexpr std::string_view kOciLayerGzip = "application/vnd.oci.image.layer.v1.tar+gzip";
inline constexpr std::string_view kOciLayerZstd = "application/vnd.oci.image.layer.v1.tar+zstd";
inline constexpr std::string_view kDockerManifestList =
    "application/vnd.docker.distribution.manifest.list.v2+json";
inline constexpr std::string_view kDockerManifest =
    "application/vnd.docker.distribution.manifest.v2+json";
inline constexpr std::string_view kDockerConfig = "application/vnd.docker.container.image.v1+json";
inline constexpr std::string_view kDockerLayerGzip =
    "application/vnd.docker.image.rootfs.diff.tar.gzip";
}  // namespace media_type

// Bounds on what we read. A document is fetched into memory whole, so it has a size limit; a
// descriptor's size is what a blob is allowed to grow to while it streams.
inline constexpr std::size_t kMaxDocumentBytes = std::size_t{4} << 20;
inline constexpr std::size_t kMaxDocumentNesting = 32;
inline constexpr uint64_t kMaxBlobSize = uint64_t{1} << 40;  // 1 TiB: no layer is larger
inline constexpr std::size_t kMaxLayers = 1024;
inline constexpr std::size_t kMaxIndexEntries = 4096;

struct Platform {
    std::string os;            // "linux"
    std::string architecture;  // "amd64", "arm64", as GOARCH spells them
    std::string variant{};     // "v8", "v7"; may be empty
    std::string os_version{};
    std::vector<std::string> os_features{};

    // "linux/amd64", "linux/arm64/v8".
    [[nodiscard]] std::string str() const;
    friend bool operator==(const Platform&, const Platform&) = default;
};

// The platform this binary runs on: linux/amd64 on x86-64, linux/arm64/v8 on AArch64.
Platform host_platform();

// Whether an image for `offered` runs where `wanted` is asked for. The OS and architecture must be
// equal; a variant that is not given stands for the architecture's baseline (amd64 v1, arm64
// v8, arm v7), so linux/arm64 and linux/arm64/v8 match each other, and linux/amd64 does not
// match linux/amd64/v3, which needs a newer CPU than amd64 promises.
bool platform_matches(const Platform& offered, const Platform& wanted);

// A reference to a blob. `media_type` is checked for the syntax of RFC 6838, the digest parsed,
// the size an integer in [0, kMaxBlobSize].
struct Descriptor {
    std::string media_type;
    Digest digest;
    uint64_t size = 0;
    std::optional<Platform> platform{};
    std::vector<std::string> urls{};  // for layers fetched from elsewhere; we never follow them
    std::map<std::string, std::string> annotations{};
    friend bool operator==(const Descriptor&, const Descriptor&) = default;
};

// An OCI image index, or a docker manifest list (the same shape).
struct ImageIndex {
    std::string media_type;  // as the document says; empty when an OCI index omits it
    std::vector<Descriptor> manifests;
    std::map<std::string, std::string> annotations{};
    friend bool operator==(const ImageIndex&, const ImageIndex&) = default;
};

// An OCI image manifest, or a docker manifest v2 schema 2 (the same shape). The config's media
// type is an image config's (OCI or docker), each layer's is a layer type we can unpack
// (layer_compression), and a layer with `urls` is refused: we fetch only from the registry.
struct ImageManifest {
    std::string media_type;  // as the document says; empty when an OCI manifest omits it
    Descriptor config;
    std::vector<Descriptor> layers;
    std::map<std::string, std::string> annotations{};
    friend bool operator==(const ImageManifest&, const ImageManifest&) = default;
};

enum class LayerCompression { kNone, kGzip, kZstd };

// How a layer of this media type is compressed; kInvalidArgument for a type that is not a
// layer we unpack (a docker foreign layer, an OCI non-distributable one, anything else).
Result<LayerCompression> layer_compression(std::string_view media_type);

// What the image config says about running the image. A JSON null counts as absent, since
// docker writes "Cmd": null.
struct ContainerConfig {
    std::vector<std::string> env{};  // "NAME=value", each with a non-empty NAME
    std::vector<std::string> entrypoint{};
    std::vector<std::string> cmd{};
    std::string working_dir{};
    std::string user{};
    friend bool operator==(const ContainerConfig&, const ContainerConfig&) = default;
};

struct ImageConfig {
    Platform platform;                     // os, architecture, variant, os.version, os.features
    std::optional<std::string> created{};  // RFC 3339, as written
    std::vector<Digest> diff_ids;          // rootfs.diff_ids: the uncompressed layers, in order
    ContainerConfig config{};
    friend bool operator==(const ImageConfig&, const ImageConfig&) = default;
};

// Each parser takes the document's bytes. Errors are kInvalidArgument, or kResourceExhausted
// for a document past kMaxDocumentBytes or nested past kMaxDocumentNesting.
Result<ImageIndex> parse_image_index(std::string_view text);
Result<ImageManifest> parse_image_manifest(std::string_view text);
Result<ImageConfig> parse_image_config(std::string_view text);

// A registry's answer to a manifest request: an index or a manifest, told apart by the
// document's mediaType, else by `content_type` (the response's Content-Type, may be empty),
// else by its fields. A document whose mediaType and Content-Type disagree, or that has both
// "manifests" and "layers", is refused: it could be read as two different images. Docker
// schema 1 is refused by name.
using ManifestDocument = std::variant<ImageIndex, ImageManifest>;
Result<ManifestDocument> parse_manifest_document(std::string_view text,
                                                 std::string_view content_type = {});

// The manifest for `wanted` in an index: the first entry whose media type is a manifest's (an
// OCI manifest or a docker v2 schema 2) and whose platform matches (platform_matches). Entries
// without a platform are passed over. kNotFound when none matches, listing what the index offers:
// "no manifest for linux/amd64 among 3: linux/arm64/v8, linux/s390x, unknown/unknown".
Result<Descriptor> select_manifest(const ImageIndex& index, const Platform& wanted);

// A manifest's layers against its config's diff_ids: one diff_id for each layer.
Status check_manifest_config(const ImageManifest& manifest, const ImageConfig& config);

// An OCI image layout's `oci-layout` file: {"imageLayoutVersion": "1.0.0"}.
Status parse_oci_layout(std::string_view text);
// Its `index.json`: an OCI image index (a docker manifest list media type is refused). The
// annotation "org.opencontainers.image.ref.name" of an entry is its name in the layout.
Result<ImageIndex> parse_layout_index(std::string_view text);

// One image of a docker-archive's `manifest.json` (`docker save`, `skopeo copy …
// docker-archive:`). The paths are relative paths inside the archive, checked to be clean: not
// absolute, no "." or ".." component, no empty component, no NUL.
struct DockerArchiveImage {
    std::string config;                    // "<hex>.json", or "blobs/sha256/<hex>"
    std::vector<std::string> repo_tags{};  // "debian:12"; each a valid reference
    std::vector<std::string> layers;       // "<id>/layer.tar", or "blobs/sha256/<hex>"
    friend bool operator==(const DockerArchiveImage&, const DockerArchiveImage&) = default;
};
Result<std::vector<DockerArchiveImage>> parse_docker_archive_manifest(std::string_view text);

}  // namespace stockade::images
