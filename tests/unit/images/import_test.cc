// The image store and `image import` over archives and layouts the test builds: the three
// input formats, one digest for a layout and a tar of it, refusals that leave nothing behind,
// names, gc and the held trees of sessions. Unprivileged, in a temporary directory.
#include "images/import.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "images/image.h"
#include "images/oci_document.h"
#include "images/store.h"
#include "tests/testing/matchers.h"
#include "tests/testing/sandbox_harness.h"
#include "tests/unit/images/tar_builder.h"

namespace stockade::images {
namespace {

using json = nlohmann::json;
using testing::HasErrc;
using ::testing::HasSubstr;
using testing::IsOk;

void write(const std::string& path, const std::string& bytes) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << bytes;
}

std::string read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

const std::vector<Entry> kRoot = {
    dir("etc"),
    file("etc/os-release", "NAME=Test\nPRETTY_NAME=\"Test OS 1\"\n"),
    dir("usr"),
    dir("usr/bin"),
    file("usr/bin/hello", "#!/bin/sh\necho hello\n", 04755),
    link("bin", "usr/bin"),
};

// An OCI image: its blobs by digest and its manifest's digest.
struct OciImage {
    std::map<std::string, std::string> blobs;  // hex -> bytes
    Digest manifest;
    std::string manifest_text;
};

OciImage make_oci(const std::vector<std::vector<Entry>>& layers) {
    OciImage image;
    json diff_ids = json::array();
    json descriptors = json::array();
    for (const auto& entries : layers) {
        const std::string tar = make_tar(entries);
        const std::string gz = make_tar(entries, Compression::kGzip);
        diff_ids.push_back(Digest::of(tar).str());
        const Digest d = Digest::of(gz);
        image.blobs[std::string(d.hex())] = gz;
        descriptors.push_back(json{
            {"mediaType", media_type::kOciLayerGzip}, {"digest", d.str()}, {"size", gz.size()}});
    }
    const std::string config = json{{"architecture", host_platform().architecture},
                                    {"os", "linux"},
                                    {"rootfs", json{{"type", "layers"}, {"diff_ids", diff_ids}}}}
                                   .dump();
    const Digest config_digest = Digest::of(config);
    image.blobs[std::string(config_digest.hex())] = config;
    image.manifest_text = json{
        {"schemaVersion", 2},
        {"mediaType", media_type::kOciManifest},
        {"config", json{{"mediaType", media_type::kOciConfig},
                        {"digest", config_digest.str()},
                        {"size", config.size()}}},
        {"layers",
         descriptors}}.dump();
    image.manifest = Digest::of(image.manifest_text);
    image.blobs[std::string(image.manifest.hex())] = image.manifest_text;
    return image;
}

std::string index_json(const OciImage& image) {
    return json{
        {"schemaVersion", 2},
        {"manifests", json::array({json{{"mediaType", media_type::kOciManifest},
                                        {"digest", image.manifest.str()},
                                        {"size", image.manifest_text.size()},
                                        {"annotations",
                                         json{{"org.opencontainers.image.ref.name", "latest"}}}}})}}
        .dump();
}

void write_layout(const std::string& dir, const OciImage& image) {
    write(dir + "/oci-layout", R"({"imageLayoutVersion":"1.0.0"})");
    write(dir + "/index.json", index_json(image));
    for (const auto& [hex, bytes] : image.blobs) {
        write(dir + "/blobs/sha256/" + hex, bytes);
    }
}

std::string layout_tar(const OciImage& image) {
    std::vector<Entry> entries = {file("oci-layout", R"({"imageLayoutVersion":"1.0.0"})"),
                                  file("index.json", index_json(image)), dir("blobs"),
                                  dir("blobs/sha256")};
    for (const auto& [hex, bytes] : image.blobs) {
        entries.push_back(file("blobs/sha256/" + hex, bytes));
    }
    return make_tar(entries);
}

class ImportTest : public ::testing::Test {
protected:
    ImportTest() {
        auto store = ImageStore::open(tmp_.sub("store"), true);
        EXPECT_THAT(store, IsOk());
        store_.emplace(std::move(store).value());
    }

    Result<ImportResult> import(const std::string& path, std::string name,
                                ImportOptions options = {}) {
        options.name = std::move(name);
        return import_image(*store_, path, options);
    }

    [[nodiscard]] std::string tree(const Digest& digest) const {
        return tmp_.sub("store") + "/trees/" + std::string(digest.hex());
    }
    // Nothing of an import is left in the store's tmp/.
    [[nodiscard]] bool no_temporaries() const {
        return std::filesystem::is_empty(tmp_.sub("store") + "/tmp");
    }

    testing::TempDir tmp_;
    std::optional<ImageStore> store_;
};

TEST_F(ImportTest, StoreIsPrivateToItsOwner) {
    struct stat st {};
    ASSERT_EQ(::stat(tmp_.sub("store").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0700u);
    ::chmod(tmp_.sub("store").c_str(), 0755);
    ASSERT_THAT(ImageStore::open(tmp_.sub("store"), false), IsOk());
    ASSERT_EQ(::stat(tmp_.sub("store").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0700u);
    // The store is an OCI layout itself.
    EXPECT_THAT(parse_oci_layout(read(tmp_.sub("store") + "/oci-layout")), IsOk());
}

TEST_F(ImportTest, RootfsTarBecomesAOneLayerImage) {
    write(tmp_.sub("root.tar.gz"), make_tar(kRoot, Compression::kGzip));
    auto imported = import(tmp_.sub("root.tar.gz"), "test:1");
    ASSERT_THAT(imported, IsOk());
    EXPECT_EQ(imported->format, "rootfs");
    const StoredImage& image = imported->image;
    EXPECT_EQ(image.name, "test:1");
    EXPECT_EQ(image.os_release, "Test OS 1");
    EXPECT_EQ(image.layers.size(), 1u);
    EXPECT_EQ(image.stats.setid_stripped, 1u);
    EXPECT_EQ(read(tree(image.digest) + "/usr/bin/hello"), "#!/bin/sh\necho hello\n");
    struct stat st {};
    ASSERT_EQ(::stat((tree(image.digest) + "/usr/bin/hello").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0755u);
    EXPECT_EQ(std::filesystem::read_symlink(tree(image.digest) + "/bin"), "usr/bin");
    // Placeholders for what a sandbox generates.
    for (const char* name : kGeneratedEtcFiles) {
        EXPECT_TRUE(std::filesystem::is_regular_file(tree(image.digest) + "/etc/" + name)) << name;
    }
    EXPECT_TRUE(no_temporaries());
    // Listed, found by name, by name and digest, and by digest.
    auto listed = store_->list();
    ASSERT_THAT(listed, IsOk());
    ASSERT_EQ(listed->size(), 1u);
    EXPECT_EQ(listed->front().digest, image.digest);
    EXPECT_THAT(store_->find("test:1"), IsOk());
    EXPECT_THAT(store_->find("test:1@" + image.digest.str()), IsOk());
    EXPECT_THAT(store_->find(image.digest.str()), IsOk());
    EXPECT_THAT(store_->find("test:1@sha256:" + std::string(64, '0')),
                HasErrc(Errc::kFailedPrecondition));
    EXPECT_THAT(store_->find("other"), HasErrc(Errc::kNotFound));

    // The same file again: the same digest, nothing unpacked.
    auto again = import(tmp_.sub("root.tar.gz"), "test:2");
    ASSERT_THAT(again, IsOk());
    EXPECT_TRUE(again->already_present);
    EXPECT_EQ(again->image.digest, image.digest);
    EXPECT_EQ(store_->list()->size(), 2u);
}

TEST_F(ImportTest, LayoutDirectoryAndATarOfItGiveTheSameDigest) {
    const OciImage oci = make_oci({kRoot, {file("usr/bin/hello", "v2"), file(".wh.bin")}});
    write_layout(tmp_.sub("layout"), oci);
    auto from_dir = import(tmp_.sub("layout"), "a");
    ASSERT_THAT(from_dir, IsOk());
    EXPECT_EQ(from_dir->format, "oci-layout");
    EXPECT_EQ(from_dir->image.digest, oci.manifest);
    EXPECT_EQ(read(tree(oci.manifest) + "/usr/bin/hello"), "v2");
    EXPECT_FALSE(
        std::filesystem::exists(std::filesystem::symlink_status(tree(oci.manifest) + "/bin")));
    EXPECT_EQ(from_dir->image.stats.whiteouts, 1u);
    // Every blob is in the store under its digest.
    for (const auto& [hex, bytes] : oci.blobs) {
        EXPECT_EQ(read(tmp_.sub("store") + "/blobs/sha256/" + hex), bytes);
    }

    write(tmp_.sub("layout.tar"), layout_tar(oci));
    auto from_tar = import(tmp_.sub("layout.tar"), "b");
    ASSERT_THAT(from_tar, IsOk());
    EXPECT_EQ(from_tar->format, "oci-archive");
    EXPECT_EQ(from_tar->image.digest, oci.manifest);
    EXPECT_TRUE(from_tar->already_present);
    // A layout's image named by its ref.name.
    EXPECT_THAT(import(tmp_.sub("layout") + ":latest", "c"), IsOk());
    EXPECT_THAT(import(tmp_.sub("layout") + ":nope", "d"), HasErrc(Errc::kNotFound));
}

TEST_F(ImportTest, DockerArchiveImports) {
    const std::string layer = make_tar(kRoot);
    const std::string config =
        json{{"architecture", host_platform().architecture},
             {"os", "linux"},
             {"rootfs", json{{"type", "layers"}, {"diff_ids", {Digest::of(layer).str()}}}}}
            .dump();
    const std::string manifest = json::array({json{{"Config", "abc.json"},
                                                   {"RepoTags", {"test:latest"}},
                                                   {"Layers", {"0123/layer.tar"}}}})
                                     .dump();
    write(tmp_.sub("docker.tar"),
          make_tar({file("abc.json", config), dir("0123"), file("0123/layer.tar", layer),
                    file("manifest.json", manifest)}));
    auto imported = import(tmp_.sub("docker.tar"), "docker");
    ASSERT_THAT(imported, IsOk());
    EXPECT_EQ(imported->format, "docker-archive");
    EXPECT_EQ(read(tree(imported->image.digest) + "/usr/bin/hello"), "#!/bin/sh\necho hello\n");
    // Deterministic: the same archive, the same digest.
    auto again = import(tmp_.sub("docker.tar"), "docker2");
    ASSERT_THAT(again, IsOk());
    EXPECT_EQ(again->image.digest, imported->image.digest);
}

TEST_F(ImportTest, DigestMismatchIsRefusedAndLeavesNothing) {
    OciImage oci = make_oci({kRoot});
    // A layer whose bytes are not the ones its digest names.
    for (auto& [hex, bytes] : oci.blobs) {
        if (bytes.size() > 2 && static_cast<unsigned char>(bytes[0]) == 0x1f) {
            bytes = make_tar({file("evil", "x")}, Compression::kGzip);
        }
    }
    write_layout(tmp_.sub("layout"), oci);
    auto imported = import(tmp_.sub("layout"), "bad");
    ASSERT_THAT(imported, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(imported.error().message, HasSubstr("layer 1 of 1 sha256:"));
    EXPECT_TRUE(store_->list()->empty());
    EXPECT_TRUE(std::filesystem::is_empty(tmp_.sub("store") + "/trees"));
    EXPECT_TRUE(no_temporaries());
}

TEST_F(ImportTest, MissingBlobIsRefused) {
    const OciImage oci = make_oci({kRoot});
    write_layout(tmp_.sub("layout"), oci);
    std::filesystem::remove(
        tmp_.sub("layout") + "/blobs/sha256/" +
        std::string(
            Digest::parse(json::parse(oci.manifest_text)["layers"][0]["digest"].get<std::string>())
                ->hex()));
    auto imported = import(tmp_.sub("layout"), "bad");
    ASSERT_THAT(imported, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(imported.error().message, HasSubstr("missing"));
    EXPECT_TRUE(store_->list()->empty());
    EXPECT_TRUE(no_temporaries());
}

TEST_F(ImportTest, ALayoutTarBlobUnderAnotherNameIsRefused) {
    OciImage oci = make_oci({kRoot});
    std::vector<Entry> entries = {file("oci-layout", R"({"imageLayoutVersion":"1.0.0"})"),
                                  file("index.json", index_json(oci))};
    for (const auto& [hex, bytes] : oci.blobs) {
        entries.push_back(file("blobs/sha256/" + hex, bytes + (bytes.size() < 100 ? "" : "x")));
    }
    write(tmp_.sub("layout.tar"), make_tar(entries));
    auto imported = import(tmp_.sub("layout.tar"), "bad");
    ASSERT_THAT(imported, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(imported.error().message, HasSubstr("digest mismatch"));
    EXPECT_TRUE(no_temporaries());
}

TEST_F(ImportTest, HostileEntriesAndLimitsAreRefused) {
    write(tmp_.sub("escape.tar"), make_tar({dir("a"), file("a/../../escaped", "x")}));
    auto escaped = import(tmp_.sub("escape.tar"), "bad");
    ASSERT_THAT(escaped, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(escaped.error().message, HasSubstr("escaped"));
    EXPECT_FALSE(std::filesystem::exists(tmp_.sub("escaped")));

    write(tmp_.sub("link.tar"), make_tar({link("out", "/"), file("out/etc/x", "x")}));
    EXPECT_THAT(import(tmp_.sub("link.tar"), "bad"), HasErrc(Errc::kInvalidArgument));

    Entry big = file("big");
    big.zeros = size_t{3} << 20;
    write(tmp_.sub("big.tar.gz"), make_tar({big}, Compression::kGzip));
    ImportOptions small;
    small.max_bytes = size_t{1} << 20;
    auto bomb = import(tmp_.sub("big.tar.gz"), "bad", small);
    ASSERT_THAT(bomb, HasErrc(Errc::kResourceExhausted));
    EXPECT_TRUE(store_->list()->empty());
    EXPECT_TRUE(no_temporaries());
    EXPECT_TRUE(std::filesystem::is_empty(tmp_.sub("store") + "/trees"));

    EXPECT_THAT(import(tmp_.sub("nothing-here.tar"), "x"), HasErrc(Errc::kNotFound));
    EXPECT_THAT(import(tmp_.sub("big.tar.gz"), "../bad"), HasErrc(Errc::kInvalidArgument));
}

TEST_F(ImportTest, RemoveThenGcFreesWhatNoSessionHolds) {
    write(tmp_.sub("a.tar"), make_tar(kRoot));
    write(tmp_.sub("b.tar"), make_tar({dir("only-b"), file("only-b/f", "b")}));
    auto a = import(tmp_.sub("a.tar"), "a");
    auto b = import(tmp_.sub("b.tar"), "b");
    ASSERT_THAT(a, IsOk());
    ASSERT_THAT(b, IsOk());
    auto held = store_->hold_tree(b->image.digest);
    ASSERT_THAT(held, IsOk());
    ASSERT_THAT(store_->remove("a"), IsOk());
    ASSERT_THAT(store_->remove("b"), IsOk());
    EXPECT_THAT(store_->remove("a"), HasErrc(Errc::kNotFound));
    auto gc = store_->gc();
    ASSERT_THAT(gc, IsOk());
    EXPECT_EQ(gc->trees_removed, 1u);
    EXPECT_EQ(gc->trees_in_use, 1u);
    EXPECT_FALSE(std::filesystem::exists(tree(a->image.digest)));
    EXPECT_TRUE(std::filesystem::exists(tree(b->image.digest) + "/only-b/f"));
    EXPECT_FALSE(std::filesystem::exists(tmp_.sub("store") + "/blobs/sha256/" +
                                         std::string(a->image.layers[0].hex())));
    held = Error{Errc::kCancelled, "released"};  // the session ends
    gc = store_->gc();
    ASSERT_THAT(gc, IsOk());
    EXPECT_EQ(gc->trees_removed, 1u);
    EXPECT_TRUE(std::filesystem::is_empty(tmp_.sub("store") + "/trees"));
    EXPECT_TRUE(std::filesystem::is_empty(tmp_.sub("store") + "/blobs/sha256"));
}

TEST_F(ImportTest, TwoImportsOfOneImageUnpackItOnce) {
    write(tmp_.sub("a.tar"), make_tar(kRoot));
    std::vector<Result<ImportResult>> results;
    results.reserve(2);
    std::vector<std::thread> threads;
    std::mutex mutex;
    for (int i = 0; i < 2; ++i) {
        threads.emplace_back([&, i] {
            auto store = ImageStore::open(tmp_.sub("store"), false);
            ASSERT_THAT(store, IsOk());
            ImportOptions options;
            options.name = "n" + std::to_string(i);
            auto r = import_image(*store, tmp_.sub("a.tar"), options);
            const std::lock_guard lock(mutex);
            results.push_back(std::move(r));
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    ASSERT_EQ(results.size(), 2u);
    ASSERT_THAT(results[0], IsOk());
    ASSERT_THAT(results[1], IsOk());
    EXPECT_NE(results[0]->already_present, results[1]->already_present);
    EXPECT_EQ(store_->list()->size(), 2u);
}

TEST_F(ImportTest, RemoveTreeHandlesReadOnlyAndDeepDirectories) {
    std::string path = tmp_.sub("deep");
    std::filesystem::create_directories(path);
    std::string at = path;
    for (int i = 0; i < 300; ++i) {
        at += "/d";
    }
    std::filesystem::create_directories(at);
    write(at + "/f", "x");
    ::chmod((path + "/d/d").c_str(), 0555);
    const int parent = ::open(tmp_.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(parent, 0);
    EXPECT_THAT(remove_tree_at(parent, "deep"), IsOk());
    ::close(parent);
    EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(ImportTest, AStoredImageIsARootAroundTheSpecsBinds) {
    write(tmp_.sub("root.tar"),
          make_tar({dir("home"), dir("home/user"), file("home/user/.profile", "p"), dir("srv"),
                    dir("usr"), file("usr/x", "x"), link("lib", "usr/lib"), dir("tmp"),
                    dir("proc")}));
    auto imported = import(tmp_.sub("root.tar"), "img");
    ASSERT_THAT(imported, IsOk());
    auto image = load_stored_image(*store_, "img");
    ASSERT_THAT(image, IsOk());
    EXPECT_TRUE(image->stored());
    sandbox::SandboxSpec spec;
    spec.binds.push_back(
        sandbox::Bind{.source = "/ws", .target = "/home/user/ws", .writable = true});
    add_image(*image, spec);
    std::map<std::string, std::string> binds;
    for (const auto& bind : spec.binds) {
        binds[bind.target] = bind.source;
    }
    const std::string root = tree(imported->image.digest);
    EXPECT_EQ(binds["/usr"], image->tree->dir.path() + "/usr");
    EXPECT_EQ(binds["/etc"], image->tree->dir.path() + "/etc");
    EXPECT_EQ(binds["/srv"], image->tree->dir.path() + "/srv");
    // /home holds the workspace: made of its entries, down to the workspace's parent.
    EXPECT_FALSE(binds.contains("/home"));
    EXPECT_FALSE(binds.contains("/home/user"));
    EXPECT_EQ(binds["/home/user/.profile"], image->tree->dir.path() + "/home/user/.profile");
    EXPECT_EQ(binds["/home/user/ws"], "/ws");
    // The sandbox's own /tmp and /proc, never the image's.
    EXPECT_FALSE(binds.contains("/tmp"));
    EXPECT_FALSE(binds.contains("/proc"));
    ASSERT_EQ(spec.symlinks.size(), 1u);
    EXPECT_EQ(spec.symlinks[0].target, "/lib");
    EXPECT_EQ(spec.symlinks[0].link_text, "usr/lib");
    // The image's binds come first, the spec's own after.
    EXPECT_EQ(spec.binds.back().target, "/home/user/ws");
    std::vector<std::string> files;
    for (const auto& f : spec.files) {
        files.push_back(f.target);
    }
    EXPECT_THAT(files, ::testing::Contains("/etc/passwd"));
    (void)root;
}

}  // namespace
}  // namespace stockade::images
