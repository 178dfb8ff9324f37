#include "images/oci_document.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade::images {
namespace {

using ::stockade::testing::HasErrc;
using ::stockade::testing::IsOk;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Shaped like the examples of the OCI image spec (image-index.md, manifest.md, config.md) and
// like what `docker buildx` and `docker save` write.
constexpr std::string_view kOciIndex = R"json({
  "schemaVersion": 2,
  "mediaType": "application/vnd.oci.image.index.v1+json",
  "manifests": [
    {
      "mediaType": "application/vnd.oci.image.manifest.v1+json",
      "size": 7143,
      "digest": "sha256:e692418e4cbaf90ca69d05a66403747baa33ee08806650b51fab815ad7fc331f",
      "platform": {"architecture": "ppc64le", "os": "linux"}
    },
    {
      "mediaType": "application/vnd.oci.image.manifest.v1+json",
      "size": 7682,
      "digest": "sha256:5b0bcabd1ed22e9fb1310cf6c2dec7cdef19f0ad69efa1f392e94a4333501270",
      "platform": {"architecture": "arm64", "os": "linux", "variant": "v8"}
    },
    {
      "mediaType": "application/vnd.oci.image.manifest.v1+json",
      "size": 7682,
      "digest": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
      "platform": {"architecture": "amd64", "os": "linux"}
    },
    {
      "mediaType": "application/vnd.oci.image.manifest.v1+json",
      "size": 566,
      "digest": "sha256:2222222222222222222222222222222222222222222222222222222222222222",
      "platform": {"architecture": "unknown", "os": "unknown"},
      "annotations": {
        "vnd.docker.reference.digest": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
        "vnd.docker.reference.type": "attestation-manifest"
      }
    }
  ],
  "annotations": {"com.example.key1": "value1"}
})json";

constexpr std::string_view kOciManifest = R"json({
  "schemaVersion": 2,
  "mediaType": "application/vnd.oci.image.manifest.v1+json",
  "config": {
    "mediaType": "application/vnd.oci.image.config.v1+json",
    "digest": "sha256:b5b2b2c507a0944348e0303114d8d93aaaa081732b86451d9bce1f432a537bc7",
    "size": 7023
  },
  "layers": [
    {
      "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
      "digest": "sha256:9834876dcfb05cb167a5c24953eba58c4ac89b1adf57f28f2f9d09af107ee8f0",
      "size": 32654
    },
    {
      "mediaType": "application/vnd.oci.image.layer.v1.tar+zstd",
      "digest": "sha256:3c3a4604a545cdc127456d94e421cd355bca5b528f4a9c1905b15da2eb4a4c6b",
      "size": 16724
    },
    {
      "mediaType": "application/vnd.oci.image.layer.v1.tar",
      "digest": "sha256:ec4b8955958665577945c89419d1af06b5f7636b4ac3da7f12184802ad867736",
      "size": 73109
    }
  ],
  "annotations": {"com.example.key1": "value1"}
})json";

constexpr std::string_view kOciConfig = R"json({
  "created": "2015-10-31T22:22:56.015925234Z",
  "author": "Alyssa P. Hacker <alyspdev@example.com>",
  "architecture": "amd64",
  "os": "linux",
  "config": {
    "User": "alice",
    "ExposedPorts": {"8080/tcp": {}},
    "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "FOO=oci=is=great", "EMPTY="],
    "Entrypoint": ["/bin/my-app-binary"],
    "Cmd": ["--foreground", "--config", "/etc/my-app.d/default.cfg"],
    "Volumes": {"/var/job-result-data": {}},
    "WorkingDir": "/home/alice",
    "Labels": {"com.example.project.git.url": "https://example.com/project.git"}
  },
  "rootfs": {
    "diff_ids": [
      "sha256:c6f988f4874bb0add23a778f753c65efe992244e148a1d2ec2a8b664fb66bbd1",
      "sha256:5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef",
      "sha256:5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef"
    ],
    "type": "layers"
  },
  "history": [{"created": "2015-10-31T22:22:54.690851953Z", "created_by": "/bin/sh -c #(nop) ADD file in /"}]
})json";

constexpr std::string_view kDockerManifest = R"json({
  "schemaVersion": 2,
  "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
  "config": {
    "mediaType": "application/vnd.docker.container.image.v1+json",
    "size": 1457,
    "digest": "sha256:b5b2b2c507a0944348e0303114d8d93aaaa081732b86451d9bce1f432a537bc7"
  },
  "layers": [
    {
      "mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip",
      "size": 2807,
      "digest": "sha256:9834876dcfb05cb167a5c24953eba58c4ac89b1adf57f28f2f9d09af107ee8f0"
    }
  ]
})json";

constexpr std::string_view kDockerList = R"json({
  "schemaVersion": 2,
  "mediaType": "application/vnd.docker.distribution.manifest.list.v2+json",
  "manifests": [
    {
      "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
      "size": 528,
      "digest": "sha256:3333333333333333333333333333333333333333333333333333333333333333",
      "platform": {"architecture": "arm", "os": "linux", "variant": "v7"}
    },
    {
      "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
      "size": 528,
      "digest": "sha256:4444444444444444444444444444444444444444444444444444444444444444",
      "platform": {"architecture": "amd64", "os": "linux", "os.features": ["sse4"]}
    }
  ]
})json";

// `docker save` before docker 25 (layer directories) — docker 25 writes blobs/sha256/ paths.
constexpr std::string_view kDockerArchiveManifest = R"json([
  {
    "Config": "b5b2b2c507a0944348e0303114d8d93aaaa081732b86451d9bce1f432a537bc7.json",
    "RepoTags": ["debian:12", "registry.example.com:5000/team/tool:v1"],
    "Layers": ["0123abcd/layer.tar", "blobs/sha256/9834876dcfb05cb167a5c24953eba58c4ac89b1adf57f28f2f9d09af107ee8f0"]
  },
  {"Config": "other.json", "RepoTags": null, "Layers": []}
])json";

Digest digest(std::string_view text) {
    return Digest::parse(text).value();
}

std::string error_of(const auto& result) {
    return result ? std::string("(succeeded)") : result.error().message;
}

// The document with the first `from` replaced by `to`; fails the test when `from` is not there,
// so that a refusal test cannot pass by testing the unchanged document.
std::string edit(std::string_view doc, std::string_view from, std::string_view to) {
    std::string out(doc);
    const std::size_t at = out.find(from);
    EXPECT_NE(at, std::string::npos) << "no " << from;
    if (at != std::string::npos) {
        out.replace(at, from.size(), to);
    }
    return out;
}

TEST(OciDocumentTest, ReadsAnOciIndex) {
    auto index = parse_image_index(kOciIndex);
    ASSERT_THAT(index, IsOk());
    EXPECT_EQ(index->media_type, media_type::kOciIndex);
    ASSERT_EQ(index->manifests.size(), 4U);
    const Descriptor& arm = index->manifests[1];
    EXPECT_EQ(arm.media_type, media_type::kOciManifest);
    EXPECT_EQ(arm.size, 7682U);
    EXPECT_EQ(arm.digest,
              digest("sha256:5b0bcabd1ed22e9fb1310cf6c2dec7cdef19f0ad69efa1f392e94a4333501270"));
    EXPECT_EQ(arm.platform, (Platform{.os = "linux", .architecture = "arm64", .variant = "v8"}));
    EXPECT_EQ(index->manifests[3].annotations.at("vnd.docker.reference.type"),
              "attestation-manifest");
    EXPECT_EQ(index->annotations.at("com.example.key1"), "value1");
}

TEST(OciDocumentTest, ReadsAnOciManifest) {
    auto manifest = parse_image_manifest(kOciManifest);
    ASSERT_THAT(manifest, IsOk());
    EXPECT_EQ(manifest->config.media_type, media_type::kOciConfig);
    EXPECT_EQ(manifest->config.size, 7023U);
    ASSERT_EQ(manifest->layers.size(), 3U);
    EXPECT_EQ(manifest->layers[2].digest,
              digest("sha256:ec4b8955958665577945c89419d1af06b5f7636b4ac3da7f12184802ad867736"));
    EXPECT_EQ(*layer_compression(manifest->layers[0].media_type), LayerCompression::kGzip);
    EXPECT_EQ(*layer_compression(manifest->layers[1].media_type), LayerCompression::kZstd);
    EXPECT_EQ(*layer_compression(manifest->layers[2].media_type), LayerCompression::kNone);
}

TEST(OciDocumentTest, ReadsAnImageConfig) {
    auto config = parse_image_config(kOciConfig);
    ASSERT_THAT(config, IsOk());
    EXPECT_EQ(config->platform, (Platform{.os = "linux", .architecture = "amd64"}));
    EXPECT_EQ(config->created, "2015-10-31T22:22:56.015925234Z");
    ASSERT_EQ(config->diff_ids.size(), 3U);
    EXPECT_EQ(config->diff_ids[0],
              digest("sha256:c6f988f4874bb0add23a778f753c65efe992244e148a1d2ec2a8b664fb66bbd1"));
    EXPECT_THAT(config->config.env,
                ElementsAre("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                            "FOO=oci=is=great", "EMPTY="));
    EXPECT_THAT(config->config.entrypoint, ElementsAre("/bin/my-app-binary"));
    EXPECT_THAT(config->config.cmd,
                ElementsAre("--foreground", "--config", "/etc/my-app.d/default.cfg"));
    EXPECT_EQ(config->config.working_dir, "/home/alice");
    EXPECT_EQ(config->config.user, "alice");

    auto manifest = parse_image_manifest(kOciManifest);
    ASSERT_THAT(manifest, IsOk());
    EXPECT_THAT(check_manifest_config(*manifest, *config), IsOk());
    manifest->layers.pop_back();
    EXPECT_EQ(error_of(check_manifest_config(*manifest, *config)),
              "the manifest has 2 layers but the config 3 diff_ids");
}

TEST(OciDocumentTest, ReadsADockerConfigWithNulls) {
    // docker writes null for what is unset; a minimal config has no "config" at all.
    auto config = parse_image_config(R"json({"architecture":"arm64","variant":"v8","os":"linux",
        "created":"2024-01-02T03:04:05+01:00",
        "config":{"Env":null,"Cmd":null,"Entrypoint":null,"WorkingDir":"","User":"","Labels":null},
        "rootfs":{"type":"layers","diff_ids":[]}})json");
    ASSERT_THAT(config, IsOk());
    EXPECT_EQ(config->platform.variant, "v8");
    EXPECT_TRUE(config->config.cmd.empty());
    EXPECT_THAT(parse_image_config(R"json({"architecture":"amd64","os":"linux",
        "rootfs":{"type":"layers","diff_ids":[]}})json"),
                IsOk());
}

TEST(OciDocumentTest, ReadsDockerManifestAndList) {
    auto manifest = parse_image_manifest(kDockerManifest);
    ASSERT_THAT(manifest, IsOk());
    EXPECT_EQ(
        *manifest,
        (ImageManifest{
            .media_type = std::string(media_type::kDockerManifest),
            .config = {.media_type = std::string(media_type::kDockerConfig),
                       .digest = digest("sha256:b5b2b2c507a0944348e0303114d8d93aaaa081732b86451d9b"
                                        "ce1f432a537bc7"),
                       .size = 1457},
            .layers = {{.media_type = std::string(media_type::kDockerLayerGzip),
                        .digest = digest("sha256:9834876dcfb05cb167a5c24953eba58c4ac89b1adf57f28f2"
                                         "f9d09af107ee8f0"),
                        .size = 2807}}}));
    EXPECT_EQ(*layer_compression(manifest->layers[0].media_type), LayerCompression::kGzip);

    auto list = parse_image_index(kDockerList);
    ASSERT_THAT(list, IsOk());
    EXPECT_EQ(list->media_type, media_type::kDockerManifestList);
    EXPECT_THAT(list->manifests[1].platform->os_features, ElementsAre("sse4"));
}

TEST(OciDocumentTest, ManifestDocumentIsToldApartByMediaTypeHeaderOrFields) {
    auto index = parse_manifest_document(kOciIndex);
    ASSERT_THAT(index, IsOk());
    EXPECT_TRUE(std::holds_alternative<ImageIndex>(*index));
    auto manifest = parse_manifest_document(kDockerManifest, "");
    ASSERT_THAT(manifest, IsOk());
    EXPECT_TRUE(std::holds_alternative<ImageManifest>(*manifest));

    // No mediaType: the Content-Type decides, else the fields.
    const std::string bare_manifest =
        edit(kOciManifest, R"("mediaType": "application/vnd.oci.image.manifest.v1+json",)", "");
    auto by_header = parse_manifest_document(
        bare_manifest, "application/vnd.oci.image.manifest.v1+json; charset=utf-8");
    ASSERT_THAT(by_header, IsOk());
    EXPECT_TRUE(std::holds_alternative<ImageManifest>(*by_header));
    auto by_fields = parse_manifest_document(bare_manifest, "application/json");
    ASSERT_THAT(by_fields, IsOk());
    EXPECT_TRUE(std::holds_alternative<ImageManifest>(*by_fields));
    const std::string bare_index =
        edit(kOciIndex, R"("mediaType": "application/vnd.oci.image.index.v1+json",)", "");
    auto index_by_fields = parse_manifest_document(bare_index);
    ASSERT_THAT(index_by_fields, IsOk());
    EXPECT_TRUE(std::holds_alternative<ImageIndex>(*index_by_fields));
}

TEST(OciDocumentTest, ManifestDocumentRefusesAmbiguity) {
    EXPECT_EQ(
        error_of(parse_manifest_document(kOciManifest, "application/vnd.oci.image.index.v1+json")),
        "manifest: mediaType \"application/vnd.oci.image.manifest.v1+json\" disagrees "
        "with the Content-Type \"application/vnd.oci.image.index.v1+json\"");
    // Both shapes at once (CVE-2021-41190): refused however the type is known.
    const std::string both =
        edit(kOciManifest, R"("layers": [)", R"("manifests": [], "layers": [)");
    EXPECT_THAT(error_of(parse_manifest_document(both)),
                HasSubstr("image manifest: manifests: a manifest has no such field"));
    const std::string bare_both =
        edit(both, R"("mediaType": "application/vnd.oci.image.manifest.v1+json",)", "");
    EXPECT_THAT(error_of(parse_manifest_document(bare_both)),
                HasSubstr("reads as both an index and a manifest"));
    const std::string index_with_layers =
        edit(kOciIndex, R"("manifests": [)", R"("layers": [], "manifests": [)");
    EXPECT_EQ(error_of(parse_image_index(index_with_layers)),
              "image index: layers: an index has no such field: a document that reads as both "
              "an index and a manifest is refused");
    EXPECT_THAT(error_of(parse_manifest_document(R"({"schemaVersion": 2})")),
                HasSubstr("neither \"manifests\" nor \"layers\""));
    EXPECT_THAT(error_of(parse_manifest_document(
                    R"({"schemaVersion": 2, "mediaType": "application/vnd.example+json"})")),
                HasSubstr("is neither an image index nor an image manifest"));
}

TEST(OciDocumentTest, RefusesDockerSchema1ByName) {
    constexpr std::string_view kSchema1 =
        R"json({"schemaVersion": 1, "name": "library/debian", "tag": "12", "fsLayers": []})json";
    EXPECT_THAT(error_of(parse_manifest_document(kSchema1)),
                HasSubstr("schemaVersion: 1 is docker's deprecated manifest schema 1"));
    EXPECT_THAT(error_of(parse_image_manifest(kSchema1)), HasSubstr("schema 1"));
    EXPECT_THAT(error_of(parse_manifest_document(
                    R"({"schemaVersion": 2,
                        "mediaType": "application/vnd.docker.distribution.manifest.v1+prettyjws"})")),
                HasSubstr("docker schema 1 is not supported"));
}

TEST(OciDocumentTest, SelectsTheManifestForAPlatform) {
    auto index = parse_image_index(kOciIndex);
    ASSERT_THAT(index, IsOk());
    auto amd64 = select_manifest(*index, Platform{.os = "linux", .architecture = "amd64"});
    ASSERT_THAT(amd64, IsOk());
    EXPECT_EQ(amd64->digest.str(),
              "sha256:1111111111111111111111111111111111111111111111111111111111111111");
    // arm64 without a variant is arm64/v8.
    auto arm64 = select_manifest(*index, Platform{.os = "linux", .architecture = "arm64"});
    ASSERT_THAT(arm64, IsOk());
    EXPECT_EQ(arm64->size, 7682U);
    EXPECT_EQ(select_manifest(*index, Platform{.os = "linux", .architecture = "aarch64"})->digest,
              arm64->digest);

    auto list = parse_image_index(kDockerList);
    ASSERT_THAT(list, IsOk());
    EXPECT_EQ(select_manifest(*list, host_platform())->digest.str().substr(7, 4), "4444");
    EXPECT_EQ(select_manifest(*list, Platform{.os = "linux", .architecture = "arm"})
                  ->digest.str()
                  .substr(7, 4),
              "3333");
}

TEST(OciDocumentTest, SelectionFailsListingWhatIsOffered) {
    auto index = parse_image_index(kOciIndex);
    ASSERT_THAT(index, IsOk());
    auto s390x = select_manifest(*index, Platform{.os = "linux", .architecture = "s390x"});
    EXPECT_THAT(s390x, HasErrc(Errc::kNotFound));
    EXPECT_EQ(error_of(s390x),
              "no manifest for linux/s390x among 4: \"linux/ppc64le\", \"linux/arm64/v8\", "
              "\"linux/amd64\", \"unknown/unknown\"");
    auto v3 =
        select_manifest(*index, Platform{.os = "linux", .architecture = "amd64", .variant = "v3"});
    EXPECT_THAT(v3, HasErrc(Errc::kNotFound)) << "amd64 (v1) is not amd64/v3";

    // A v3 build is not picked for a baseline amd64 host, nor is a nested index or an entry with
    // no platform.
    const ImageIndex only_v3{
        .media_type = "",
        .manifests = {
            Descriptor{
                .media_type = std::string(media_type::kOciManifest),
                .digest = Digest::of("a"),
                .size = 1,
                .platform = Platform{.os = "linux", .architecture = "amd64", .variant = "v3"}},
            Descriptor{.media_type = std::string(media_type::kOciIndex),
                       .digest = Digest::of("b"),
                       .size = 1,
                       .platform = Platform{.os = "linux", .architecture = "amd64"}},
            Descriptor{.media_type = std::string(media_type::kOciManifest),
                       .digest = Digest::of("c"),
                       .size = 1}}};
    EXPECT_EQ(error_of(select_manifest(only_v3, Platform{.os = "linux", .architecture = "amd64"})),
              "no manifest for linux/amd64 among 2: \"linux/amd64/v3\", (no platform)");
    EXPECT_EQ(error_of(select_manifest(ImageIndex{}, host_platform())),
              "no manifest for linux/amd64: the index lists no image manifest");
}

TEST(OciDocumentTest, PlatformMatchingIsVariantAware) {
    const auto p = [](std::string arch, std::string variant = "") {
        return Platform{
            .os = "linux", .architecture = std::move(arch), .variant = std::move(variant)};
    };
    EXPECT_TRUE(platform_matches(p("arm64"), p("arm64", "v8")));
    EXPECT_TRUE(platform_matches(p("arm64", "v8"), p("arm64")));
    EXPECT_FALSE(platform_matches(p("arm64", "v9"), p("arm64")));
    EXPECT_TRUE(platform_matches(p("amd64", "v1"), p("amd64")));
    EXPECT_FALSE(platform_matches(p("amd64", "v2"), p("amd64")));
    EXPECT_TRUE(platform_matches(p("arm"), p("arm", "v7")));
    EXPECT_FALSE(platform_matches(p("arm", "v6"), p("arm", "v7")));
    EXPECT_TRUE(platform_matches(p("x86_64"), p("amd64")));
    EXPECT_FALSE(platform_matches(Platform{.os = "windows", .architecture = "amd64"}, p("amd64")));
    EXPECT_TRUE(platform_matches(p("riscv64"), p("riscv64")));
}

struct Refusal {
    std::string_view document;
    std::string_view from;
    std::string_view to;
    std::string_view message;
};

// Each case edits a valid document in one place and expects the message for that field.
TEST(OciDocumentTest, IndexRefusalsNameTheField) {
    const Refusal cases[] = {
        {kOciIndex, R"("digest": "sha256:5b0b)", R"("digest": "sha512:5b0b)",
         "image index: manifests[1].digest: digest \"sha512:5b0bcabd1ed22e9fb1310cf6c2dec7cdef19f0"
         "ad69efa1f392e94a4333501270\": algorithm \"sha512\" is not supported: only sha256 is"},
        {kOciIndex, R"("size": 7143)", R"("size": -1)",
         "image index: manifests[0].size: -1 is negative"},
        {kOciIndex, R"("size": 7143)", R"("size": 1.5)",
         "image index: manifests[0].size: not a whole number of bytes"},
        {kOciIndex, R"("size": 7143)", R"("size": "7143")",
         "image index: manifests[0].size: expected an integer, not a string"},
        {kOciIndex, R"("size": 7143)", R"("size": 99999999999999999999)",
         "image index: manifests[0].size: not a whole number of bytes"},
        {kOciIndex, R"("size": 7143)", R"("size": 5000000)",
         "image index: manifests[0].size: 5000000 bytes is past the limit of 4 MiB for a "
         "document"},
        {kOciIndex, R"("size": 7143,)", "", "image index: manifests[0].size: missing"},
        {kOciIndex, R"("size": 566)", R"("size": 1099511627777)",
         "image index: manifests[3].size: 1099511627777 bytes is past the limit of 1T for a "
         "blob"},
        {kOciIndex, R"("architecture": "ppc64le", )", "",
         "image index: manifests[0].platform.architecture: missing"},
        {kOciIndex, R"("os": "linux", "variant")", R"("os": "", "variant")",
         "image index: manifests[1].platform.os: empty"},
        {kOciIndex, R"("mediaType": "application/vnd.oci.image.manifest.v1+json",
      "size": 7143)",
         R"("mediaType": "not a type", "size": 7143)",
         "image index: manifests[0].mediaType: \"not a type\" is not a media type"},
        {kOciIndex, R"("schemaVersion": 2)", R"("schemaVersion": 3)",
         "image index: schemaVersion: 3 is not 2"},
        {kOciIndex, R"("schemaVersion": 2,)", "", "image index: schemaVersion: missing"},
        {kOciIndex, R"("mediaType": "application/vnd.oci.image.index.v1+json")",
         R"("mediaType": "application/vnd.oci.image.manifest.v1+json")",
         "image index: mediaType: \"application/vnd.oci.image.manifest.v1+json\" is not an "
         "image index's"},
        {kOciIndex, R"("com.example.key1": "value1")", R"("com.example.key1": 1)",
         "image index: annotations.com.example.key1: expected a string, not an integer"},
        {kOciIndex, R"("schemaVersion": 2,)", R"("schemaVersion": 2, "schemaVersion": 2,)",
         "image index: schemaVersion: given twice"},
        {kOciIndex, R"("size": 7143,)", R"("size": 7143, "size": 1,)",
         "image index: manifests[0].size: given twice"},
        {kOciIndex, R"("manifests": [)", R"("manifests": 7, "x": [)",
         "image index: manifests: expected an array, not an integer"},
    };
    for (const Refusal& c : cases) {
        const std::string doc = edit(c.document, c.from, c.to);
        auto index = parse_image_index(doc);
        EXPECT_THAT(index, HasErrc(Errc::kInvalidArgument)) << c.message;
        EXPECT_EQ(error_of(index), c.message);
    }
}

TEST(OciDocumentTest, ManifestRefusalsNameTheField) {
    const Refusal cases[] = {
        {kOciManifest, R"("application/vnd.oci.image.config.v1+json")",
         R"("application/vnd.example.artifact.v1+json")",
         "image manifest: config.mediaType: \"application/vnd.example.artifact.v1+json\" is not "
         "an image config's: this is not a container image (an OCI artifact?)"},
        {kOciManifest, R"("size": 7023)", R"("size": 4194305)",
         "image manifest: config.size: 4194305 bytes is past the limit of 4 MiB for a document"},
        {kOciManifest, R"("application/vnd.oci.image.layer.v1.tar+zstd")", R"("application/x-tar")",
         "image manifest: layers[1].mediaType: \"application/x-tar\" is not a layer type we "
         "unpack (OCI tar, tar+gzip or tar+zstd, or docker's tar.gzip)"},
        {kOciManifest, R"("application/vnd.oci.image.layer.v1.tar+zstd")",
         R"("application/vnd.docker.image.rootfs.foreign.diff.tar.gzip")",
         "image manifest: layers[1].mediaType: \"application/vnd.docker.image.rootfs.foreign."
         "diff.tar.gzip\" is a layer fetched from elsewhere than the registry, which is not "
         "supported"},
        {kOciManifest, R"("size": 73109)", R"("size": 73109, "urls": ["https://example.com/l"])",
         "image manifest: layers[2].urls: a layer fetched from somewhere other than the registry "
         "is not supported"},
        {kOciManifest, R"("digest": "sha256:9834)", R"("digest": "sha256:X834)",
         "image manifest: layers[0].digest: digest \"sha256:X834876dcfb05cb167a5c24953eba58c4ac89"
         "b1adf57f28f2f9d09af107ee8f0\": not a hex digit after \"sha256:\""},
        {kOciManifest, R"("config": {)", R"("config": 1, "x": {)",
         "image manifest: config: expected an object, not an integer"},
        {kOciManifest, R"("layers": [)", R"("notlayers": [)", "image manifest: layers: missing"},
        {kOciManifest, R"("schemaVersion": 2)", R"("schemaVersion": "2")",
         "image manifest: schemaVersion: expected an integer, not a string"},
    };
    for (const Refusal& c : cases) {
        auto manifest = parse_image_manifest(edit(c.document, c.from, c.to));
        EXPECT_THAT(manifest, HasErrc(Errc::kInvalidArgument)) << c.message;
        EXPECT_EQ(error_of(manifest), c.message);
    }
}

TEST(OciDocumentTest, ConfigRefusalsNameTheField) {
    const Refusal cases[] = {
        {kOciConfig, R"("os": "linux",)", "", "image config: os: missing"},
        {kOciConfig, R"("architecture": "amd64")", R"("architecture": ["amd64"])",
         "image config: architecture: expected a string, not an array"},
        {kOciConfig, R"("created": "2015-10-31T22:22:56.015925234Z")", R"("created": "yesterday")",
         "image config: created: \"yesterday\" is not an RFC 3339 date-time"},
        {kOciConfig, R"("created": "2015-10-31T22:22:56.015925234Z")",
         R"("created": "2015-13-31T22:22:56Z")",
         "image config: created: \"2015-13-31T22:22:56Z\" is not an RFC 3339 date-time"},
        {kOciConfig, R"("type": "layers")", R"("type": "tarballs")",
         "image config: rootfs.type: \"tarballs\" is not \"layers\""},
        {kOciConfig, R"("sha256:5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef",
)",
         R"("5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef",
)",
         "image config: rootfs.diff_ids[1]: digest \"5f70bf18a086007016e948b04aed3b82103a36bea"
         "41755b6cddfaf10ace3c6ef\": no algorithm: expected \"sha256:\" and 64 hex digits"},
        {kOciConfig, R"("FOO=oci=is=great")", R"("FOO")",
         "image config: config.Env[1]: \"FOO\" is not NAME=value"},
        {kOciConfig, R"("FOO=oci=is=great")", R"("=x")",
         "image config: config.Env[1]: \"=x\" is not NAME=value"},
        {kOciConfig, R"("--config")", R"("--con\u0000fig")",
         "image config: config.Cmd[1]: holds a NUL byte"},
        {kOciConfig, R"("/bin/my-app-binary")", R"(7)",
         "image config: config.Entrypoint[0]: expected a string, not an integer"},
        {kOciConfig, R"("WorkingDir": "/home/alice")", R"("WorkingDir": "/home\u0000")",
         "image config: config.WorkingDir: holds a NUL byte"},
        {kOciConfig, R"("User": "alice")", R"("User": 0)",
         "image config: config.User: expected a string, not an integer"},
        {kOciConfig, R"("rootfs": {)", R"("rootfs": null, "x": {)",
         "image config: rootfs: expected an object, not null"},
    };
    for (const Refusal& c : cases) {
        auto config = parse_image_config(edit(c.document, c.from, c.to));
        EXPECT_THAT(config, HasErrc(Errc::kInvalidArgument)) << c.message;
        EXPECT_EQ(error_of(config), c.message);
    }
}

TEST(OciDocumentTest, RefusesDocumentsPastTheLimits) {
    const std::string big =
        edit(kOciIndex, R"("value1")", "\"" + std::string(kMaxDocumentBytes, 'x') + "\"");
    auto too_big = parse_image_index(big);
    EXPECT_THAT(too_big, HasErrc(Errc::kResourceExhausted));
    EXPECT_THAT(error_of(too_big), HasSubstr("past the limit of 4 MiB for a document"));

    const std::string deep =
        edit(kOciIndex, R"("value1")", std::string(40, '[') + std::string(40, ']'));
    auto too_deep = parse_image_index(deep);
    EXPECT_THAT(too_deep, HasErrc(Errc::kResourceExhausted));
    EXPECT_EQ(error_of(too_deep), "image index: nested deeper than 32 levels");

    std::string many_layers = R"({"schemaVersion":2,"config":{"mediaType":
        "application/vnd.oci.image.config.v1+json","size":1,"digest":"sha256:)" +
                              std::string(64, 'a') + R"("},"layers":[)";
    for (std::size_t i = 0; i <= kMaxLayers; ++i) {
        many_layers += std::string(i == 0 ? "" : ",") + "{}";
    }
    many_layers += "]}";
    auto too_many = parse_image_manifest(many_layers);
    EXPECT_THAT(too_many, HasErrc(Errc::kResourceExhausted));
    EXPECT_EQ(error_of(too_many), "image manifest: layers: 1025 items is past the limit of 1024");
}

TEST(OciDocumentTest, RefusesWhatIsNotJson) {
    EXPECT_THAT(error_of(parse_image_index("")), HasSubstr("image index: invalid JSON"));
    EXPECT_THAT(error_of(parse_image_index("{")), HasSubstr("invalid JSON"));
    EXPECT_THAT(error_of(parse_image_index("[]")),
                HasSubstr("image index: document: expected an object, not an array"));
    EXPECT_THAT(error_of(parse_image_config("{\"os\": \"\xff\"}")), HasSubstr("invalid JSON"));
    EXPECT_THAT(error_of(parse_image_config("{} {}")), HasSubstr("invalid JSON"));
}

TEST(OciDocumentTest, ReadsAnOciLayout) {
    EXPECT_THAT(parse_oci_layout(R"({"imageLayoutVersion": "1.0.0"})"), IsOk());
    EXPECT_EQ(error_of(parse_oci_layout(R"({"imageLayoutVersion": "2.0.0"})")),
              "oci-layout: imageLayoutVersion \"2.0.0\" is not supported: only \"1.0.0\" is");
    EXPECT_EQ(error_of(parse_oci_layout(R"({})")), "oci-layout: imageLayoutVersion: missing");

    // skopeo/umoci write an index without platforms, naming the image by annotation.
    auto index = parse_layout_index(R"json({
      "schemaVersion": 2,
      "manifests": [{
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "digest": "sha256:5b0bcabd1ed22e9fb1310cf6c2dec7cdef19f0ad69efa1f392e94a4333501270",
        "size": 7682,
        "annotations": {"org.opencontainers.image.ref.name": "v1.0"}
      }]
    })json");
    ASSERT_THAT(index, IsOk());
    EXPECT_EQ(index->manifests[0].annotations.at("org.opencontainers.image.ref.name"), "v1.0");
    EXPECT_EQ(index->media_type, "");
    EXPECT_THAT(error_of(parse_layout_index(kDockerList)),
                HasSubstr("index.json: mediaType \"application/vnd.docker.distribution.manifest."
                          "list.v2+json\" is a docker manifest list"));
    EXPECT_THAT(error_of(parse_layout_index(R"({"schemaVersion": 2})")),
                HasSubstr("index.json: manifests: missing"));
}

TEST(OciDocumentTest, ReadsADockerArchiveManifest) {
    auto images = parse_docker_archive_manifest(kDockerArchiveManifest);
    ASSERT_THAT(images, IsOk());
    ASSERT_EQ(images->size(), 2U);
    EXPECT_EQ(
        *images,
        (std::vector<DockerArchiveImage>{
            {.config = "b5b2b2c507a0944348e0303114d8d93aaaa081732b86451d9bce1f432a537bc7.json",
             .repo_tags = {"debian:12", "registry.example.com:5000/team/tool:v1"},
             .layers = {"0123abcd/layer.tar",
                        "blobs/sha256/"
                        "9834876dcfb05cb167a5c24953eba58c4ac89b1adf57f28f2f9d09af107ee8f0"}},
            {.config = "other.json", .repo_tags = {}, .layers = {}}}));
}

TEST(OciDocumentTest, DockerArchiveRefusalsNameTheField) {
    const Refusal cases[] = {
        {kDockerArchiveManifest, R"("0123abcd/layer.tar")", R"("../../etc/passwd")",
         "manifest.json: [0].Layers[0]: \"../../etc/passwd\" is not a clean relative path (an "
         "empty, \".\" or \"..\" component)"},
        {kDockerArchiveManifest, R"("0123abcd/layer.tar")", R"("/etc/passwd")",
         "manifest.json: [0].Layers[0]: \"/etc/passwd\" is not a relative path inside the "
         "archive"},
        {kDockerArchiveManifest, R"("0123abcd/layer.tar")", R"("a//layer.tar")",
         "manifest.json: [0].Layers[0]: \"a//layer.tar\" is not a clean relative path (an "
         "empty, \".\" or \"..\" component)"},
        {kDockerArchiveManifest, R"("0123abcd/layer.tar")", R"("a/./layer.tar")",
         "manifest.json: [0].Layers[0]: \"a/./layer.tar\" is not a clean relative path (an "
         "empty, \".\" or \"..\" component)"},
        {kDockerArchiveManifest, R"("0123abcd/layer.tar")", R"("a\u0000")",
         "manifest.json: [0].Layers[0]: \"a\\x00\" is not a relative path inside the archive"},
        {kDockerArchiveManifest, R"("other.json")", R"("")", "manifest.json: [1].Config: empty"},
        {kDockerArchiveManifest, R"("Config": "other.json", )", "",
         "manifest.json: [1].Config: missing"},
        {kDockerArchiveManifest, R"("debian:12")", R"("Debian:12")",
         "manifest.json: [0].RepoTags[0]: reference \"Debian:12\": repository names are lower "
         "case"},
        {kDockerArchiveManifest, R"("Layers": []})", R"("Layers": null})",
         "manifest.json: [1].Layers: expected an array, not null"},
    };
    for (const Refusal& c : cases) {
        auto images = parse_docker_archive_manifest(edit(c.document, c.from, c.to));
        EXPECT_THAT(images, HasErrc(Errc::kInvalidArgument)) << c.message;
        EXPECT_EQ(error_of(images), c.message);
    }
    EXPECT_EQ(error_of(parse_docker_archive_manifest("[]")),
              "manifest.json: document: no image listed");
    EXPECT_EQ(error_of(parse_docker_archive_manifest("{}")),
              "manifest.json: document: expected an array, not an object");
}

TEST(OciDocumentTest, PlatformText) {
    EXPECT_EQ((Platform{.os = "linux", .architecture = "amd64"}).str(), "linux/amd64");
    EXPECT_EQ((Platform{.os = "linux", .architecture = "arm64", .variant = "v8"}).str(),
              "linux/arm64/v8");
}

}  // namespace
}  // namespace stockade::images
