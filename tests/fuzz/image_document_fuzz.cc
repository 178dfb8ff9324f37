// Fuzzes every image document parser (images/oci_document.h) with the same bytes: no crash, and
// what is accepted keeps its promises — digests read back the same, sizes and counts stay in
// their bounds, a manifest document is what the parser for its kind also accepts, and a selected
// manifest is for the platform asked.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "images/oci_document.h"

namespace images = stockade::images;

namespace {

void check_descriptor(const images::Descriptor& d) {
    auto again = images::Digest::parse(d.digest.str());
    if (!again || *again != d.digest || d.size > images::kMaxBlobSize || d.media_type.empty()) {
        std::abort();
    }
}

void check_index(const images::ImageIndex& index) {
    if (index.manifests.size() > images::kMaxIndexEntries) {
        std::abort();
    }
    for (const auto& d : index.manifests) {
        check_descriptor(d);
    }
    for (const images::Platform& wanted :
         {images::host_platform(), images::Platform{.os = "linux", .architecture = "arm64"},
          images::Platform{.os = "linux", .architecture = "arm", .variant = "v6"}}) {
        if (auto chosen = images::select_manifest(index, wanted)) {
            if (!chosen->platform || !images::platform_matches(*chosen->platform, wanted)) {
                std::abort();
            }
        }
    }
}

void check_manifest(const images::ImageManifest& manifest) {
    if (manifest.layers.size() > images::kMaxLayers ||
        manifest.config.size > images::kMaxDocumentBytes) {
        std::abort();
    }
    check_descriptor(manifest.config);
    for (const auto& d : manifest.layers) {
        check_descriptor(d);
        if (!images::layer_compression(d.media_type) || !d.urls.empty()) {
            std::abort();
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);

    auto index = images::parse_image_index(text);
    if (index) {
        check_index(*index);
    }
    auto manifest = images::parse_image_manifest(text);
    if (manifest) {
        check_manifest(*manifest);
    }
    if (auto document = images::parse_manifest_document(text)) {
        if (std::holds_alternative<images::ImageIndex>(*document) ? !index : !manifest) {
            std::abort();
        }
    }
    // The Content-Type as a second opinion: it may refuse, never crash.
    (void)images::parse_manifest_document(text, images::media_type::kOciIndex);
    (void)images::parse_manifest_document(text, images::media_type::kDockerManifest);

    if (auto config = images::parse_image_config(text)) {
        for (const auto& d : config->diff_ids) {
            if (d.empty()) {
                std::abort();
            }
        }
        if (manifest) {
            (void)images::check_manifest_config(*manifest, *config);
        }
    }
    (void)images::parse_oci_layout(text);
    if (auto layout = images::parse_layout_index(text)) {
        check_index(*layout);
    }
    if (auto archive = images::parse_docker_archive_manifest(text)) {
        for (const auto& image : *archive) {
            if (image.config.empty() || image.config.front() == '/' ||
                image.layers.size() > images::kMaxLayers) {
                std::abort();
            }
        }
    }
    return 0;
}
