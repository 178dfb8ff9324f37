// The layer a build step's changes become: only what changed is in it, what is gone is a
// whiteout, the bytes are the same each time, and the image with it on top has exactly the tree
// the step left. Unprivileged, in a temporary directory, over an image the test imports.
#include "images/layer_diff.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "common/host_dir.h"
#include "images/import.h"
#include "images/store.h"
#include "tests/testing/matchers.h"
#include "tests/testing/sandbox_harness.h"
#include "tests/unit/images/tar_builder.h"

namespace stockade::images {
namespace {

namespace fs = std::filesystem;
using testing::IsOk;

std::string read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

void write(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// A layer's entries: name -> what it is ("file:DATA", "dir", "link:TARGET", "hardlink:TO").
struct LayerEntry {
    std::string kind;
    int64_t uid = -1;
    int64_t mtime = 0;
};
std::map<std::string, LayerEntry> entries_of(const std::string& path) {
    std::map<std::string, LayerEntry> out;
    archive* a = archive_read_new();
    archive_read_support_format_tar(a);
    EXPECT_EQ(archive_read_open_filename(a, path.c_str(), 10240), ARCHIVE_OK);
    archive_entry* e = nullptr;
    while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
        LayerEntry entry{.kind = "", .uid = archive_entry_uid(e), .mtime = archive_entry_mtime(e)};
        if (archive_entry_hardlink(e) != nullptr) {
            entry.kind = std::string("hardlink:") + archive_entry_hardlink(e);
        } else if (archive_entry_filetype(e) == AE_IFDIR) {
            entry.kind = "dir";
        } else if (archive_entry_filetype(e) == AE_IFLNK) {
            entry.kind = std::string("link:") + archive_entry_symlink(e);
        } else {
            std::string data(static_cast<size_t>(archive_entry_size(e)), '\0');
            archive_read_data(a, data.data(), data.size());
            entry.kind = "file:" + data;
        }
        out[archive_entry_pathname(e)] = entry;
    }
    archive_read_free(a);
    return out;
}

// A tree as "path kind" lines, for comparing two trees.
std::map<std::string, std::string> tree_of(const std::string& root) {
    std::map<std::string, std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(root)) {
        const std::string rel = fs::relative(e.path(), root).string();
        if (e.is_symlink()) {
            out[rel] = "link:" + fs::read_symlink(e.path()).string();
        } else if (e.is_directory()) {
            out[rel] = "dir";
        } else {
            out[rel] = "file:" + read(e.path().string());
        }
    }
    return out;
}

class LayerDiffTest : public ::testing::Test {
protected:
    LayerDiffTest() {
        auto store = ImageStore::open(tmp_.sub("store"), true);
        EXPECT_THAT(store, IsOk());
        store_.emplace(std::move(store).value());
        write(tmp_.sub("root.tar"),
              make_tar({dir("etc"), file("etc/os-release", "PRETTY_NAME=\"Base\"\n"), dir("usr"),
                        dir("usr/bin"), file("usr/bin/hello", "hello\n", 0755),
                        file("usr/bin/same", "same\n"), dir("opt"), dir("opt/tool"),
                        file("opt/tool/a", "a"), link("bin", "usr/bin")}));
        auto imported = import_image(*store_, tmp_.sub("root.tar"), ImportOptions{.name = "base"});
        EXPECT_THAT(imported, IsOk());
        base_ = imported->image;
        fs::create_directory(tmp_.sub("upper"));
        auto upper = HostDir::open(tmp_.sub("upper"));
        EXPECT_THAT(upper, IsOk());
        upper_ = std::move(upper).value();
        EXPECT_THAT(unpack_image(*store_, base_, upper_.fd(), ImportOptions{}), IsOk());
        auto lower = store_->hold_tree(base_.digest);
        EXPECT_THAT(lower, IsOk());
        lower_ = std::move(lower).value();
    }

    // What a build step does: a new file and a hard link to it, a changed file, a removed one,
    // a directory replaced by a file, a symlink pointed elsewhere.
    void change_upper() const {
        const std::string u = tmp_.sub("upper");
        write(u + "/usr/bin/new", "new\n");
        fs::create_hard_link(u + "/usr/bin/new", u + "/usr/bin/new2");
        write(u + "/etc/os-release", "PRETTY_NAME=\"Built\"\n");
        fs::remove(u + "/usr/bin/hello");
        fs::remove_all(u + "/opt/tool");
        write(u + "/opt/tool", "now a file");
        fs::remove(u + "/bin");
        fs::create_directory_symlink("usr/local/bin", u + "/bin");
    }

    Result<LayerDiffStats> diff(const std::string& out, const LayerDiffOptions& options = {}) {
        const UniqueFd fd(::open(out.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
        return write_layer_diff(lower_.dir.fd(), upper_.fd(), fd.get(), options);
    }

    testing::TempDir tmp_;
    std::optional<ImageStore> store_;
    StoredImage base_;
    HostDir upper_;
    HeldTree lower_;
};

TEST_F(LayerDiffTest, AnUnchangedTreeGivesAnEmptyLayer) {
    auto stats = diff(tmp_.sub("layer.tar"));
    ASSERT_THAT(stats, IsOk());
    EXPECT_EQ(stats->added + stats->changed + stats->removed, 0u);
    EXPECT_TRUE(entries_of(tmp_.sub("layer.tar")).empty());
}

TEST_F(LayerDiffTest, OnlyWhatChangedIsInTheLayerAndWhatIsGoneIsAWhiteout) {
    change_upper();
    auto stats = diff(tmp_.sub("layer.tar"));
    ASSERT_THAT(stats, IsOk());
    const auto entries = entries_of(tmp_.sub("layer.tar"));
    EXPECT_EQ(entries.at("usr/bin/new").kind, "file:new\n");
    EXPECT_EQ(entries.at("usr/bin/new2").kind, "hardlink:usr/bin/new");
    EXPECT_EQ(entries.at("etc/os-release").kind, "file:PRETTY_NAME=\"Built\"\n");
    EXPECT_TRUE(entries.contains("usr/bin/.wh.hello"));
    EXPECT_TRUE(entries.contains("opt/.wh.tool"));  // a directory became a file
    EXPECT_EQ(entries.at("opt/tool").kind, "file:now a file");
    EXPECT_EQ(entries.at("bin").kind, "link:usr/local/bin");
    EXPECT_FALSE(entries.contains("usr/bin/same"));  // unchanged: not in the layer
    EXPECT_FALSE(entries.contains("opt/tool/a"));
    EXPECT_EQ(stats->removed, 2u);
}

TEST_F(LayerDiffTest, TheImageWithTheLayerHasTheTreeTheStepLeft) {
    change_upper();
    auto stats = diff(tmp_.sub("layer.tar"));
    ASSERT_THAT(stats, IsOk());
    const UniqueFd layer(::open(tmp_.sub("layer.tar").c_str(), O_RDONLY | O_CLOEXEC));
    auto built = import_with_layer(*store_, base_, layer.get(), "RUN change", "build:test",
                                   ImportOptions{.name = "built"});
    ASSERT_THAT(built, IsOk());
    EXPECT_EQ(built->image.layers.size(), 2u);
    EXPECT_EQ(built->image.layers.front(), base_.layers.front());
    const std::string tree = tmp_.sub("store") + "/trees/" + std::string(built->image.digest.hex());
    EXPECT_EQ(tree_of(tree), tree_of(tmp_.sub("upper")));
    // The same layer over the same base is the same image.
    auto again =
        import_with_layer(*store_, base_, layer.get(), "RUN change", "build:test", ImportOptions{});
    ASSERT_THAT(again, IsOk());
    EXPECT_EQ(again->image.digest, built->image.digest);
    EXPECT_TRUE(again->already_present);
}

TEST_F(LayerDiffTest, TheSameChangesGiveTheSameBytesWithTimesClampedAndOwnersMapped) {
    change_upper();
    const LayerDiffOptions options{
        .own_uid = ::geteuid(), .own_gid = ::getegid(), .clamp_time = 1704067200};
    ASSERT_THAT(diff(tmp_.sub("one.tar"), options), IsOk());
    ASSERT_THAT(diff(tmp_.sub("two.tar"), options), IsOk());
    EXPECT_EQ(read(tmp_.sub("one.tar")), read(tmp_.sub("two.tar")));
    for (const auto& [name, entry] : entries_of(tmp_.sub("one.tar"))) {
        EXPECT_EQ(entry.uid, 0) << name;
        EXPECT_LE(entry.mtime, 1704067200) << name;
    }
}

}  // namespace
}  // namespace stockade::images
