// The layer writer over archives built in memory with libarchive's writer: every whiteout,
// link and refusal rule of issue 23, in a temporary directory, unprivileged.
#include "images/layer_apply.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "common/host_dir.h"
#include "common/unique_fd.h"
#include "tests/testing/fd_leak_checker.h"
#include "tests/testing/matchers.h"
#include "tests/testing/sandbox_harness.h"
#include "tests/unit/images/tar_builder.h"

namespace stockade::images {
namespace {

using testing::HasErrc;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::IsOk;

LayerSource source(const std::string& bytes, std::string name = "test-layer") {
    return LayerSource::from_memory(std::move(name), std::as_bytes(std::span(bytes)));
}

// A temporary directory holding the image's root and, beside it, `outside`: a directory that
// must stay empty whatever the archive says. Every test also checks that no descriptor leaks.
class LayerApplyTest : public ::testing::Test {
protected:
    LayerApplyTest() {
        tmp_.make_dir("root");
        tmp_.make_dir("outside");
        root_fd_ = UniqueFd(::open(root().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        EXPECT_TRUE(root_fd_.valid());
        fd_check_.emplace();
    }

    [[nodiscard]] std::string root() const { return tmp_.sub("root"); }
    [[nodiscard]] std::string at(const std::string& relative) const {
        return root() + "/" + relative;
    }
    [[nodiscard]] std::string outside() const { return tmp_.sub("outside"); }

    // Applies the layers (each a list of entries) as one image, lowest first.
    Status apply(const std::vector<std::vector<Entry>>& layers, ApplyOptions options = {}) {
        LayerApplier applier(root_fd_.get(), options);
        int n = 0;
        for (const auto& entries : layers) {
            const std::string tar = make_tar(entries);
            RETURN_IF_ERROR(applier.apply(source(tar, "layer " + std::to_string(++n))));
        }
        stats_ = applier.stats();
        return applier.finish();
    }

    [[nodiscard]] bool exists(const std::string& relative) const {
        struct stat st {};
        return ::lstat(at(relative).c_str(), &st) == 0;
    }
    [[nodiscard]] std::optional<struct stat> stat_of(const std::string& relative) const {
        struct stat st {};
        if (::lstat(at(relative).c_str(), &st) != 0) {
            return std::nullopt;
        }
        return st;
    }
    [[nodiscard]] std::string content(const std::string& relative) const {
        return testing::read_file_text(at(relative)).value_or("<missing>");
    }
    [[nodiscard]] std::vector<std::string> outside_entries() const {
        UniqueFd fd(::open(outside().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        std::vector<std::string> names;
        for (const DirEntry& e : list_entries(fd.get())) {
            names.push_back(e.name);
        }
        return names;
    }

    testing::TempDir tmp_{"stockade-layer"};
    UniqueFd root_fd_;
    ApplyStats stats_{};
    // Last: made once the root is open, checked before it closes.
    std::optional<testing::FdLeakChecker> fd_check_;
};

// --- plain entries -------------------------------------------------------------------------

TEST_F(LayerApplyTest, WritesFilesDirectoriesAndSymlinksKeptAsTheirText) {
    ASSERT_THAT(
        apply({{dir("etc"), file("etc/hostname", "box\n", 0640), file("./bin/tool", "#!", 0755),
                link("etc/abs", "/etc/hostname"), link("etc/rel", "hostname")}}),
        IsOk());
    EXPECT_EQ(content("etc/hostname"), "box\n");
    EXPECT_EQ(stat_of("etc/hostname")->st_mode & 07777, 0640U);
    EXPECT_EQ(stat_of("bin/tool")->st_mode & 07777, 0755U);
    EXPECT_EQ(stat_of("bin")->st_mode & 07777, 0755U);  // made for bin/tool
    char buf[64] = {};
    ASSERT_EQ(::readlink(at("etc/abs").c_str(), buf, sizeof buf - 1), 13);
    EXPECT_STREQ(buf, "/etc/hostname");
    EXPECT_TRUE(S_ISLNK(stat_of("etc/rel")->st_mode));
    EXPECT_EQ(stat_of("etc/hostname")->st_mtim.tv_sec, kMtime);
    EXPECT_EQ(stat_of("etc")->st_mtim.tv_sec, kMtime);  // set last, after etc/ was filled
    EXPECT_EQ(stat_of("etc/abs")->st_mtim.tv_sec, kMtime);
    EXPECT_EQ(stats_.files, 2U);
    EXPECT_EQ(stats_.directories, 1U);
    EXPECT_EQ(stats_.symlinks, 2U);
    EXPECT_EQ(stats_.entries, 5U);
    EXPECT_EQ(stats_.bytes, 6U);
}

TEST_F(LayerApplyTest, ReadsGzipAndZstdLayersAndADescriptor) {
    const std::string gz = make_tar({file("a", "gzip")}, Compression::kGzip);
    const std::string zst = make_tar({file("b", "zstd")}, Compression::kZstd);
    ApplyStats stats;
    ASSERT_THAT(apply_layer(root_fd_.get(), source(gz), {}, stats), IsOk());
    ASSERT_THAT(apply_layer(root_fd_.get(), source(zst), {}, stats), IsOk());
    const std::string path = tmp_.write_file("layer.tar", make_tar({file("c", "fd")}));
    const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_THAT(apply_layer(root_fd_.get(), LayerSource::from_fd("layer.tar", fd.get()), {}, stats),
                IsOk());
    EXPECT_EQ(content("a"), "gzip");
    EXPECT_EQ(content("b"), "zstd");
    EXPECT_EQ(content("c"), "fd");
    EXPECT_EQ(stats.files, 3U);
}

TEST_F(LayerApplyTest, RefusesADamagedArchiveNamingTheLayer) {
    const std::string whole = make_tar({file("a", std::string(100'000, 'y'))}, Compression::kGzip);
    const std::string truncated = whole.substr(0, whole.size() / 2);
    const std::string garbage = "this is not a tar archive, not even a compressed one";
    for (const std::string* bytes : {&truncated, &garbage}) {
        LayerApplier applier(root_fd_.get(), {});
        const Status r = applier.apply(source(*bytes, "sha256:feed"));
        ASSERT_THAT(r, HasErrc(Errc::kInvalidArgument));
        EXPECT_THAT(r.error().message, HasSubstr("layer \"sha256:feed\""));
    }
}

TEST_F(LayerApplyTest, RootEntryIsAcceptedAndAnEmptyLayerIsNoEntries) {
    ASSERT_THAT(apply({{dir("./"), file("./a")}, {}}), IsOk());
    EXPECT_TRUE(exists("a"));
    EXPECT_THAT(apply({{file("/")}}), HasErrc(Errc::kInvalidArgument));
}

// --- replacement ---------------------------------------------------------------------------

TEST_F(LayerApplyTest, LaterEntriesReplaceFilesAndDirectories) {
    ASSERT_THAT(apply({{file("f", "old"), file("d/inner/x"), dir("m", 0700), file("m/keep")},
                       {file("f", "new"), dir("f2"), file("d", "now a file"), dir("m", 0751)},
                       {dir("f"), file("f/y")}}),
                IsOk());
    EXPECT_TRUE(S_ISDIR(stat_of("f")->st_mode));
    EXPECT_EQ(content("f/y"), "x");
    EXPECT_EQ(content("d"), "now a file");
    EXPECT_EQ(content("m/keep"), "x");  // a directory over a directory merges
    EXPECT_EQ(stat_of("m")->st_mode & 07777, 0751U);
}

TEST_F(LayerApplyTest, LaterFileReplacesASymlinkInsteadOfWritingThroughIt) {
    const std::string target = outside() + "/victim";
    ASSERT_THAT(apply({{link("x", target)}, {file("x", "inside")}}), IsOk());
    EXPECT_EQ(content("x"), "inside");
    EXPECT_THAT(outside_entries(), IsEmpty());
}

TEST_F(LayerApplyTest, ReadOnlyDirectoriesAreFilledThenGetTheirMode) {
    ASSERT_THAT(apply({{dir("ro", 0555), file("ro/a")}, {file("ro/b")}}), IsOk());
    EXPECT_TRUE(exists("ro/a"));
    EXPECT_TRUE(exists("ro/b"));
    EXPECT_EQ(stat_of("ro")->st_mode & 07777, 0555U);
}

// --- whiteouts -----------------------------------------------------------------------------

TEST_F(LayerApplyTest, WhiteoutRemovesAFileADirectoryTreeAndASymlinkOfLowerLayers) {
    ASSERT_THAT(apply({{file("etc/a"), file("etc/b"), file("opt/x/y/z"), link("etc/l", "/")},
                       {file("etc/.wh.a"), file(".wh.opt"), file("etc/.wh.l"), file("etc/.wh.nope"),
                        file("gone/.wh.x")}}),
                IsOk());
    EXPECT_FALSE(exists("etc/a"));
    EXPECT_TRUE(exists("etc/b"));
    EXPECT_FALSE(exists("opt"));
    EXPECT_FALSE(exists("etc/l"));
    EXPECT_FALSE(exists("etc/.wh.a"));  // whiteouts are never written
    EXPECT_FALSE(exists(".wh.opt"));
    EXPECT_FALSE(exists("gone"));
    EXPECT_EQ(stats_.whiteouts, 5U);
}

TEST_F(LayerApplyTest, WhiteoutKeepsWhatTheSameLayerWroteInEitherOrder) {
    ASSERT_THAT(apply({{file("a", "lower"), file("b", "lower"), file("d/lower")},
                       {file("a", "upper"), file(".wh.a"), file(".wh.b"), file("b", "upper"),
                        file("d/upper"), file(".wh.d")}}),
                IsOk());
    EXPECT_EQ(content("a"), "upper");
    EXPECT_EQ(content("b"), "upper");
    EXPECT_TRUE(exists("d/upper"));
    EXPECT_FALSE(exists("d/lower"));
}

TEST_F(LayerApplyTest, OpaqueMarkerFirstRemovesLowerContentsAndKeepsThisLayers) {
    ASSERT_THAT(apply({{file("d/lower1"), file("d/sub/lower2"), file("other")},
                       {dir("d"), file("d/.wh..wh..opq"), file("d/upper"), file("d/sub/upper2")}}),
                IsOk());
    EXPECT_FALSE(exists("d/lower1"));
    EXPECT_FALSE(exists("d/sub/lower2"));
    EXPECT_TRUE(exists("d/upper"));
    EXPECT_TRUE(exists("d/sub/upper2"));
    EXPECT_TRUE(exists("other"));
    EXPECT_FALSE(exists("d/.wh..wh..opq"));
}

TEST_F(LayerApplyTest, OpaqueMarkerLastKeepsWhatThisLayerAlreadyWrote) {
    ASSERT_THAT(apply({{file("d/lower1"), file("d/sub/lower2"), file("d/sub/deep/lower3")},
                       {file("d/upper"), file("d/sub/upper2"), file("d/.wh..wh..opq")}}),
                IsOk());
    EXPECT_FALSE(exists("d/lower1"));
    // d/sub is this layer's (implicitly, through d/sub/upper2): only lower content inside goes.
    EXPECT_FALSE(exists("d/sub/lower2"));
    EXPECT_FALSE(exists("d/sub/deep"));
    EXPECT_TRUE(exists("d/upper"));
    EXPECT_TRUE(exists("d/sub/upper2"));
}

TEST_F(LayerApplyTest, OpaqueRootDirectoryAndAufsMetadataAreNeverWritten) {
    ASSERT_THAT(
        apply({{file("a"), file("b")}, {file("b"), file(".wh..wh..opq"), file(".wh..wh.plnk")}}),
        IsOk());
    EXPECT_FALSE(exists("a"));
    EXPECT_TRUE(exists("b"));
    EXPECT_FALSE(exists(".wh..wh.plnk"));
}

TEST_F(LayerApplyTest, WhiteoutOfDotDotIsRefused) {
    EXPECT_THAT(apply({{file("a/.wh..")}}), HasErrc(Errc::kInvalidArgument));
}

// --- hardlinks -----------------------------------------------------------------------------

TEST_F(LayerApplyTest, HardlinkSharesTheInodeOfItsTarget) {
    ASSERT_THAT(
        apply({{file("bin/a", "same"), hardlink("bin/b", "bin/a")}, {hardlink("c", "./bin/a")}}),
        IsOk());
    EXPECT_EQ(stat_of("bin/a")->st_ino, stat_of("bin/b")->st_ino);
    EXPECT_EQ(stat_of("c")->st_ino, stat_of("bin/a")->st_ino);
    EXPECT_EQ(stat_of("c")->st_nlink, 3U);
    EXPECT_EQ(stats_.hardlinks, 2U);
}

TEST_F(LayerApplyTest, HardlinkToAMissingTargetIsRefusedNamingBoth) {
    const Status r = apply({{hardlink("b", "nowhere")}});
    ASSERT_THAT(r, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(r.error().message, HasSubstr("\"b\""));
    EXPECT_THAT(r.error().message, HasSubstr("\"nowhere\""));
    EXPECT_THAT(r.error().message, HasSubstr("does not exist"));
    EXPECT_FALSE(exists("b"));
}

TEST_F(LayerApplyTest, HardlinkOutsideTheRootIsRefused) {
    tmp_.write_file("outside/secret", "s");
    for (const std::string& target : {std::string("../outside/secret"), outside() + "/secret"}) {
        const Status r = apply({{hardlink("b", target)}});
        // An absolute target is taken beneath the root (where it is missing), like an entry name.
        ASSERT_THAT(r, HasErrc(Errc::kInvalidArgument)) << target;
        EXPECT_THAT(r.error().message, HasSubstr("\"b\""));
        EXPECT_FALSE(exists("b"));
    }
    // Through a symlink that leads out.
    const Status r = apply({{link("out", "../outside"), hardlink("b", "out/secret")}});
    ASSERT_THAT(r, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(r.error().message, HasSubstr("symbolic link"));
    EXPECT_FALSE(exists("b"));
    struct stat st {};
    ASSERT_EQ(::stat((outside() + "/secret").c_str(), &st), 0);
    EXPECT_EQ(st.st_nlink, 1U);
}

TEST_F(LayerApplyTest, HardlinkOverTheDirectoryHoldingItsTargetIsRefused) {
    const Status r = apply({{file("d/x"), hardlink("d", "d/x")}});
    ASSERT_THAT(r, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(r.error().message, HasSubstr("removed by this very entry"));
}

TEST_F(LayerApplyTest, HardlinkToADirectoryIsRefused) {
    const Status r = apply({{dir("d"), hardlink("b", "d")}});
    ASSERT_THAT(r, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(r.error().message, HasSubstr("is a directory"));
}

// --- escapes -------------------------------------------------------------------------------

TEST_F(LayerApplyTest, EntriesWithDotDotAreRefusedAndWriteNothingOutside) {
    for (const char* name : {"../outside/evil", "a/../../outside/evil", "./../outside/evil"}) {
        const Status r = apply({{file(name, "evil")}});
        ASSERT_THAT(r, HasErrc(Errc::kInvalidArgument)) << name;
        EXPECT_THAT(r.error().message, HasSubstr("layer \"layer 1\": entry \""));
    }
    EXPECT_THAT(outside_entries(), IsEmpty());
}

TEST_F(LayerApplyTest, EntryThroughAnAbsoluteSymlinkIsRefused) {
    for (const Entry& through : {file("esc/evil"), dir("esc/evildir"), link("esc/evillink", "x"),
                                 hardlink("esc/evilhard", "a")}) {
        const Status r = apply({{link("esc", outside()), file("a")}, {through}});
        ASSERT_THAT(r, HasErrc(Errc::kInvalidArgument)) << through.path;
        EXPECT_THAT(r.error().message, HasSubstr("symbolic link")) << r.error().message;
        EXPECT_THAT(r.error().message, HasSubstr(through.path));
    }
    EXPECT_THAT(outside_entries(), IsEmpty());
}

TEST_F(LayerApplyTest, EntryThroughASymlinkLeadingOutIsRefused) {
    for (const char* target : {"../outside", "a/../../outside", "..", "/"}) {
        const Status r = apply({{dir("a"), link("up", target), file("up/evil")}});
        ASSERT_THAT(r, HasErrc(Errc::kInvalidArgument)) << target;
    }
    // Nested: a symlink in a directory that climbs two levels.
    const Status r = apply({{dir("a/b"), link("a/b/up", "../../../outside"), file("a/b/up/evil")}});
    ASSERT_THAT(r, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(outside_entries(), IsEmpty());
}

TEST_F(LayerApplyTest, EntryThroughASymlinkLoopIsRefused) {
    const Status r = apply({{link("a", "b"), link("b", "a"), file("a/x")}});
    ASSERT_THAT(r, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(r.error().message, HasSubstr("loops"));
}

TEST_F(LayerApplyTest, OpaqueMarkerKeepsWhatThisLayerWroteThroughAnInsideSymlink) {
    ASSERT_THAT(apply({{dir("usr/lib"), link("lib", "usr/lib"), file("usr/lib/old")},
                       {file("lib/new"), file("usr/lib/.wh..wh..opq")}}),
                IsOk());
    EXPECT_FALSE(exists("usr/lib/old"));
    EXPECT_TRUE(exists("usr/lib/new"));  // written as lib/new: the same inode
}

TEST_F(LayerApplyTest, EmptyAndLargeFilesKeepTheirSize) {
    ASSERT_THAT(apply({{file("empty", ""), Entry{.path = "zeros", .zeros = 3 << 20}}}), IsOk());
    EXPECT_EQ(stat_of("empty")->st_size, 0);
    EXPECT_EQ(stat_of("zeros")->st_size, 3 << 20);
}

TEST_F(LayerApplyTest, RelativeSymlinkThatStaysInsideIsFollowed) {
    ASSERT_THAT(apply({{dir("usr/lib"), link("lib", "usr/lib"), link("usr/lib/up", "../..")},
                       {file("lib/libc.so", "elf"), file("usr/lib/up/top", "t")}}),
                IsOk());
    EXPECT_EQ(content("usr/lib/libc.so"), "elf");
    EXPECT_EQ(content("top"), "t");
    EXPECT_TRUE(S_ISLNK(stat_of("lib")->st_mode));
}

TEST_F(LayerApplyTest, EntryUnderAFileIsRefused) {
    const Status r = apply({{file("f"), file("f/g")}});
    ASSERT_THAT(r, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(r.error().message, HasSubstr("not a directory"));
}

// --- what is stripped or skipped -----------------------------------------------------------

TEST_F(LayerApplyTest, SetuidAndSetgidBitsAreStrippedAndCounted) {
    ASSERT_THAT(apply({{file("bin/su", "elf", 04755), file("bin/wall", "elf", 02755),
                        dir("var/mail", 02775), dir("tmp", 01777)}}),
                IsOk());
    EXPECT_EQ(stat_of("bin/su")->st_mode & 07777, 0755U);
    EXPECT_EQ(stat_of("bin/wall")->st_mode & 07777, 0755U);
    EXPECT_EQ(stat_of("var/mail")->st_mode & 07777, 0775U);
    EXPECT_EQ(stat_of("tmp")->st_mode & 07777, 01777U);  // the sticky bit stays
    EXPECT_EQ(stats_.setid_stripped, 3U);
}

TEST_F(LayerApplyTest, DevicesAndFifosAreSkippedAndCounted) {
    ASSERT_THAT(apply({{Entry{.path = "dev/null", .type = AE_IFCHR, .perm = 0666},
                        Entry{.path = "dev/sda", .type = AE_IFBLK, .perm = 0660},
                        Entry{.path = "run/fifo", .type = AE_IFIFO, .perm = 0600}, file("ok")}}),
                IsOk());
    EXPECT_FALSE(exists("dev/null"));
    EXPECT_FALSE(exists("dev/sda"));
    EXPECT_FALSE(exists("run/fifo"));
    EXPECT_TRUE(exists("ok"));
    EXPECT_EQ(stats_.devices_skipped, 2U);
    EXPECT_EQ(stats_.fifos_skipped, 1U);
}

TEST_F(LayerApplyTest, SecurityAndTrustedXattrsAreDropped) {
    Entry ping = file("bin/ping", "elf", 0755);
    ping.xattrs = {{"security.capability", std::string("\x01\x00\x00\x02", 4)},
                   {"trusted.overlay.opaque", "y"},
                   {"user.note", "kept"}};
    ASSERT_THAT(apply({{ping}}), IsOk());
    EXPECT_EQ(stats_.xattrs_dropped, 2U);
    char buf[64];
    EXPECT_LT(::getxattr(at("bin/ping").c_str(), "security.capability", buf, sizeof buf), 0);
    // user.* is best effort (tmpfs before Linux 6.6 refuses it): stored or counted.
    const ssize_t n = ::getxattr(at("bin/ping").c_str(), "user.note", buf, sizeof buf);
    EXPECT_TRUE(n == 4 || stats_.xattrs_not_stored == 1U);
}

TEST_F(LayerApplyTest, OwnersArePreservedOnlyWhenAsked) {
    ASSERT_THAT(apply({{file("mine")}}), IsOk());
    EXPECT_EQ(stat_of("mine")->st_uid, ::geteuid());
    if (::geteuid() != 0) {
        GTEST_SKIP() << "preserve_owner needs CAP_CHOWN (run as root to test it)";
    }
    ASSERT_THAT(apply({{file("theirs"), link("l", "theirs"), dir("d")}},
                      ApplyOptions{.preserve_owner = true}),
                IsOk());
    for (const char* name : {"theirs", "l", "d"}) {
        EXPECT_EQ(stat_of(name)->st_uid, 1234U) << name;
        EXPECT_EQ(stat_of(name)->st_gid, 5678U) << name;
    }
}

// --- limits --------------------------------------------------------------------------------

TEST_F(LayerApplyTest, ByteLimitRefusesAGzipBombBeforeWritingIt) {
    constexpr uint64_t kLimit = 1 << 20;
    const std::string bomb = make_tar(
        {file("small", "ok"), Entry{.path = "bomb", .zeros = 64 << 20}}, Compression::kGzip);
    ASSERT_LT(bomb.size(), 256U * 1024);  // highly compressible: 64 MiB in a few hundred KiB
    ApplyStats stats;
    const Status r = apply_layer(root_fd_.get(), source(bomb, "bomb.tar.gz"),
                                 ApplyOptions{.max_bytes = kLimit}, stats);
    ASSERT_THAT(r, HasErrc(Errc::kResourceExhausted));
    EXPECT_THAT(r.error().message, HasSubstr("--max-size"));
    EXPECT_THAT(r.error().message, HasSubstr("\"bomb\""));
    EXPECT_THAT(r.error().message, HasSubstr("layer \"bomb.tar.gz\""));
    EXPECT_TRUE(exists("small"));
    EXPECT_FALSE(exists("bomb"));
    EXPECT_LE(tree_bytes(root_fd_.get()), kLimit);
}

TEST_F(LayerApplyTest, ByteLimitCountsEveryLayerAndStopsEarly) {
    constexpr uint64_t kLimit = 1 << 20;
    std::vector<Entry> many;
    many.reserve(64);
    for (int i = 0; i < 64; ++i) {
        many.push_back(Entry{.path = "f" + std::to_string(i), .zeros = 256 << 10});
    }
    const std::string layer = make_tar(many, Compression::kGzip);
    LayerApplier applier(root_fd_.get(), ApplyOptions{.max_bytes = kLimit});
    const Status r = applier.apply(source(layer));
    ASSERT_THAT(r, HasErrc(Errc::kResourceExhausted));
    EXPECT_LE(tree_bytes(root_fd_.get()), kLimit);
    EXPECT_LE(applier.stats().entries, 5U);  // stopped at the fifth file, not the 64th
    // The limit is the image's: a second layer starts where the first stopped.
    const std::string second = make_tar({Entry{.path = "g", .zeros = 1}});
    EXPECT_THAT(applier.apply(source(second)), HasErrc(Errc::kResourceExhausted));
}

TEST_F(LayerApplyTest, EntryLimitStopsReading) {
    std::vector<Entry> many;
    many.reserve(10);
    for (int i = 0; i < 10; ++i) {
        many.push_back(file("f" + std::to_string(i)));
    }
    const Status r = apply({many}, ApplyOptions{.max_entries = 3});
    ASSERT_THAT(r, HasErrc(Errc::kResourceExhausted));
    EXPECT_THAT(r.error().message, HasSubstr("more than 3 entries"));
    EXPECT_TRUE(exists("f2"));
    EXPECT_FALSE(exists("f3"));
}

TEST_F(LayerApplyTest, ALayerWithoutItsFinalPaddingAppliesButOneCutInsideDataDoesNot) {
    // What umoci writes: the last entry's data, then nothing (no padding, no end blocks).
    const std::string tar = make_tar({dir("etc"), file("etc/os-release", "ID=x\n")});
    const size_t data = tar.find("ID=x\n");
    ASSERT_NE(data, std::string::npos);
    const std::string unpadded = tar.substr(0, data + 5);
    {
        LayerApplier applier(root_fd_.get(), {});
        ASSERT_THAT(applier.apply(source(unpadded)), IsOk());
        ASSERT_THAT(applier.finish(), IsOk());
    }
    EXPECT_EQ(content("etc/os-release"), "ID=x\n");
    const std::string cut = tar.substr(0, data + 3);
    LayerApplier applier(root_fd_.get(), {});
    const Status status = applier.apply(source(cut, "cut"));
    ASSERT_THAT(status, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(status.error().message, HasSubstr("etc/os-release"));
}

}  // namespace
}  // namespace stockade::images
