#include "workspace/snapshot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/fd_leak_checker.h"
#include "tests/testing/matchers.h"
#include "tests/unit/workspace/test_util.h"
#include "workspace/channel.h"
#include "workspace/local_workspace.h"

namespace stockade::workspace {
namespace {

using stockade::testing::FdLeakChecker;
using stockade::testing::HasErrc;
using stockade::testing::IsOk;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::TempDir;

std::vector<std::string> paths_of(const Snapshot& s) {
    std::vector<std::string> out;
    for (const SnapshotEntry& e : s.changed) {
        out.push_back(e.path);
    }
    return out;
}

const SnapshotEntry* find(const Snapshot& s, const std::string& path) {
    for (const SnapshotEntry& e : s.changed) {
        if (e.path == path) {
            return &e;
        }
    }
    return nullptr;
}

// Ages a file's times so that the walk does not count it racy.
void age(const TempDir& dir, const std::string& rel) {
    struct timespec times[2] = {{.tv_sec = 1'000'000'000, .tv_nsec = 0},
                                {.tv_sec = 1'000'000'000, .tv_nsec = 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, dir.at(rel).c_str(), times, AT_SYMLINK_NOFOLLOW), 0) << rel;
}

class SnapshotTest : public ::testing::Test {
protected:
    void SetUp() override {
        root_ = ::open(dir_.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
        ASSERT_GE(root_, 0);
    }
    void TearDown() override { ::close(root_); }

    Snapshot walk(bool reset = false, SnapshotRequest request = {}) {
        request.reset = reset;
        auto s = index_.walk(root_, request);
        EXPECT_THAT(s, IsOk());
        return s ? *s : Snapshot{};
    }

    TempDir dir_;
    int root_ = -1;
    SnapshotIndex index_;
    FdLeakChecker leaks_;
};

TEST(IgnoreGlobTest, MatchesLikeGitignore) {
    EXPECT_TRUE(ignore_glob_match("*.o", "a.o"));
    EXPECT_FALSE(ignore_glob_match("*.o", "d/a.o"));
    EXPECT_TRUE(ignore_glob_match("**/x", "x"));
    EXPECT_TRUE(ignore_glob_match("**/x", "a/b/x"));
    EXPECT_TRUE(ignore_glob_match("a/**/b", "a/b"));
    EXPECT_TRUE(ignore_glob_match("a/**/b", "a/x/y/b"));
    EXPECT_FALSE(ignore_glob_match("a/**/b", "ab"));
    EXPECT_TRUE(ignore_glob_match("a/**", "a/x/y"));
    EXPECT_TRUE(ignore_glob_match("f?[0-9]", "fa7"));
    EXPECT_FALSE(ignore_glob_match("f?[!0-9]", "fa7"));
    EXPECT_TRUE(ignore_glob_match("\\*", "*"));
    EXPECT_FALSE(ignore_glob_match("\\*", "a"));
}

TEST(IgnoreRulesTest, LastMatchDecidesAndNegationReincludes) {
    IgnoreRules rules;
    rules.add("", "# comment\n*.log\n!keep.log\nbuild/\n/top\nsub/deep\n");
    EXPECT_EQ(rules.match("a.log", false), true);
    EXPECT_EQ(rules.match("d/keep.log", false), false);
    EXPECT_EQ(rules.match("build", true), true);
    EXPECT_EQ(rules.match("build", false), std::nullopt);  // a file named build stays
    EXPECT_EQ(rules.match("top", false), true);
    EXPECT_EQ(rules.match("d/top", false), std::nullopt);  // anchored to the root
    EXPECT_EQ(rules.match("sub/deep", false), true);
    EXPECT_EQ(rules.match("x/sub/deep", false), std::nullopt);
    rules.add("d", "*.txt\n");
    EXPECT_EQ(rules.match("d/a.txt", false), true);
    EXPECT_EQ(rules.match("a.txt", false), std::nullopt);  // beneath d only
}

TEST_F(SnapshotTest, WithoutResetTheWorkerAsksForOne) {
    SnapshotRequest request;
    EXPECT_THAT(index_.walk(root_, request), HasErrc(Errc::kFailedPrecondition));
}

TEST_F(SnapshotTest, ReportsEveryKindOnceThenOnlyChanges) {
    dir_.write("a.txt", "alpha");
    dir_.write("bin/run.sh", "#!/bin/sh\n", 0755);
    dir_.mkdir("empty");
    dir_.symlink("link", "/etc/passwd");
    dir_.write(".git/config", "[core]\n");
    for (const char* p : {"a.txt", "bin/run.sh", "link"}) {
        age(dir_, p);
    }
    Snapshot first = walk(true);
    EXPECT_THAT(paths_of(first), ElementsAre("a.txt", "bin", "bin/run.sh", "empty", "link"));
    EXPECT_EQ(find(first, "a.txt")->bytes, "alpha");
    EXPECT_EQ(find(first, "bin/run.sh")->mode, 0755U);
    EXPECT_EQ(find(first, "empty")->type, FileType::kDirectory);
    // A symlink is its target's text, never what it leads to.
    EXPECT_EQ(find(first, "link")->type, FileType::kSymlink);
    EXPECT_EQ(find(first, "link")->target, "/etc/passwd");
    EXPECT_TRUE(find(first, "link")->bytes.empty());

    Snapshot unchanged = walk();
    EXPECT_THAT(unchanged.changed, IsEmpty());
    EXPECT_THAT(unchanged.removed, IsEmpty());
    EXPECT_EQ(unchanged.scanned, 5U);

    dir_.write("a.txt", "alpha, again");
    ::unlink(dir_.at("bin/run.sh").c_str());
    ::chmod(dir_.at("empty").c_str(), 0700);
    Snapshot next = walk();
    EXPECT_THAT(paths_of(next), ElementsAre("a.txt", "empty"));
    EXPECT_EQ(find(next, "a.txt")->bytes, "alpha, again");
    EXPECT_EQ(find(next, "empty")->mode, 0700U);
    EXPECT_THAT(next.removed, ElementsAre("bin/run.sh"));
}

TEST_F(SnapshotTest, IgnoredPathsAndGitAreOutOfScope) {
    dir_.write(".gitignore", "build/\n*.o\n");
    dir_.write("sub/.stockadeignore", "secret\n");
    dir_.write("build/out", "x");
    dir_.write("a.o", "x");
    dir_.write("sub/secret", "x");
    dir_.write("sub/kept", "x");
    dir_.write(".git/HEAD", "ref");
    dir_.write("z/secret", "a sibling's rules do not reach here");
    Snapshot s = walk(true);
    EXPECT_THAT(paths_of(s), ElementsAre(".gitignore", "sub", "sub/.stockadeignore", "sub/kept",
                                         "z", "z/secret"));
}

TEST_F(SnapshotTest, AFileAboveTheCapComesWithoutItsBytes) {
    dir_.write("big", std::string(100, 'x'));
    dir_.write("small", "y");
    SnapshotRequest request;
    request.max_file_bytes = 10;
    Snapshot s = walk(true, request);
    ASSERT_NE(find(s, "big"), nullptr);
    EXPECT_TRUE(find(s, "big")->too_large);
    EXPECT_EQ(find(s, "big")->size, 100U);
    EXPECT_TRUE(find(s, "big")->bytes.empty());
    EXPECT_EQ(find(s, "small")->bytes, "y");
}

TEST_F(SnapshotTest, WhatDoesNotFitComesWithTheNextWalk) {
    for (int i = 0; i < 5; ++i) {
        dir_.write("f" + std::to_string(i), "0123456789");
        age(dir_, "f" + std::to_string(i));
    }
    SnapshotRequest request;
    request.max_reply_bytes = 25;
    request.max_file_bytes = 10;
    std::vector<std::string> seen;
    Snapshot s = walk(true, request);
    EXPECT_TRUE(s.more);
    int walks = 1;
    for (;;) {
        for (const auto& e : s.changed) {
            seen.push_back(e.path);
        }
        if (!s.more || walks > 10) {
            break;
        }
        s = walk(false, request);
        ++walks;
    }
    std::sort(seen.begin(), seen.end());
    EXPECT_THAT(seen, ElementsAre("f0", "f1", "f2", "f3", "f4"));
    EXPECT_EQ(walks, 3);
}

TEST_F(SnapshotTest, AFileMatchingItsSeedIsNotShipped) {
    dir_.write("tracked", "committed");
    dir_.write("touched", "committed");
    age(dir_, "tracked");
    age(dir_, "touched");
    struct stat st {};
    ASSERT_EQ(::lstat(dir_.at("tracked").c_str(), &st), 0);
    auto seed_of = [&](const std::string& path) {
        struct stat s {};
        EXPECT_EQ(::lstat(dir_.at(path).c_str(), &s), 0);
        return SnapshotSeed{.path = path,
                            .type = FileType::kFile,
                            .mode = 0644,
                            .size = static_cast<uint64_t>(s.st_size),
                            .mtime_ns = s.st_mtim.tv_sec * 1'000'000'000 + s.st_mtim.tv_nsec,
                            .ctime_ns = s.st_ctim.tv_sec * 1'000'000'000 + s.st_ctim.tv_nsec,
                            .ino = s.st_ino};
    };
    SnapshotRequest request;
    request.seed = {seed_of("tracked"), seed_of("touched"), seed_of("tracked")};
    request.seed[0].path = "gone";
    request.seed[1].mtime_ns += 1'000'000'000;  // git recorded another time
    Snapshot s = walk(true, request);
    EXPECT_THAT(paths_of(s), ElementsAre("touched"));
    EXPECT_THAT(s.removed, ElementsAre("gone"));
}

TEST_F(SnapshotTest, ADirectorySwappedForASymlinkIsNeverEntered) {
    TempDir outside;
    outside.write("secret", "outside");
    dir_.write("d/inner", "in");
    walk(true);
    // Between two walks (the same path the walk takes inside: openat O_NOFOLLOW).
    std::filesystem::remove_all(dir_.at("d"));
    dir_.symlink("d", outside.path());
    Snapshot s = walk();
    ASSERT_NE(find(s, "d"), nullptr);
    EXPECT_EQ(find(s, "d")->type, FileType::kSymlink);
    EXPECT_THAT(s.removed, ElementsAre("d/inner"));
    for (const auto& e : s.changed) {
        EXPECT_EQ(e.bytes.find("outside"), std::string::npos) << e.path;
    }
}

TEST_F(SnapshotTest, RestorePutsBackEveryKindAndNeverWritesThroughALink) {
    TempDir outside;
    dir_.write("dir/old", "old");
    dir_.symlink("escape", outside.path());
    RestoreRequest request{.actions = {
                               {.kind = RestoreKind::kRemove, .path = "dir/old"},
                               {.kind = RestoreKind::kDirectory, .path = "made", .mode = 0750},
                               {.kind = RestoreKind::kFile,
                                .path = "made/f",
                                .mode = 0640,
                                .data = std::string("bin\0ary", 7)},
                               {.kind = RestoreKind::kSymlink, .path = "made/l", .data = "f"},
                               {.kind = RestoreKind::kFile, .path = "escape/x", .data = "no"},
                               {.kind = RestoreKind::kRemove, .path = "dir"},
                           }};
    RestoreOutcome out = restore_beneath(root_, request);
    EXPECT_EQ(out.applied, 5U);
    ASSERT_EQ(out.failed.size(), 1U);
    EXPECT_EQ(out.failed[0].index, 4U);
    EXPECT_FALSE(std::filesystem::exists(outside.at("x")));
    EXPECT_FALSE(std::filesystem::exists(dir_.at("dir")));
    EXPECT_EQ(dir_.read("made/f"), std::string("bin\0ary", 7));
    struct stat st {};
    ASSERT_EQ(::stat(dir_.at("made/f").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0640U);
    ASSERT_EQ(::stat(dir_.at("made").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0750U);
    EXPECT_EQ(std::filesystem::read_symlink(dir_.at("made/l")).string(), "f");
}

TEST(SnapshotWireTest, RequestsAndRepliesRoundTrip) {
    SnapshotRequest request{.reset = true,
                            .seed = {{.path = "a/b",
                                      .type = FileType::kSymlink,
                                      .mode = 0644,
                                      .size = 3,
                                      .mtime_ns = -5,
                                      .ctime_ns = 7,
                                      .ino = 9}},
                            .max_file_bytes = 100,
                            .max_reply_bytes = 1000,
                            .max_entries = 10};
    auto encoded = channel::encode_request(channel::Request{.id = 4, .args = request});
    ASSERT_THAT(encoded, IsOk());
    auto frame = channel::decode_frame(std::as_bytes(std::span(*encoded)));
    ASSERT_THAT(frame, IsOk());
    auto decoded = channel::decode_request(*frame);
    ASSERT_THAT(decoded, IsOk());
    EXPECT_EQ(std::get<SnapshotRequest>(decoded->args), request);

    Snapshot snap{
        .changed = {{.path = "a", .type = FileType::kFile, .mode = 0600, .size = 2, .bytes = "hi"},
                    {.path = "l", .type = FileType::kSymlink, .target = "a"}},
        .removed = {"z"},
        .more = true,
        .scanned = 3,
        .skipped = 1};
    auto reply =
        channel::encode_reply(channel::Reply{.id = 4, .result = channel::ReplyValue{snap}});
    ASSERT_THAT(reply, IsOk());
    auto reply_frame = channel::decode_frame(std::as_bytes(std::span(*reply)));
    ASSERT_THAT(reply_frame, IsOk());
    auto back = channel::decode_reply(*reply_frame, channel::Op::kSnapshot);
    ASSERT_THAT(back, IsOk());
    ASSERT_THAT(back->result, IsOk());
    EXPECT_EQ(std::get<Snapshot>(*back->result), snap);

    RestoreRequest restore{
        .actions = {{.kind = RestoreKind::kFile, .path = "x", .mode = 0644, .data = "data"},
                    {.kind = RestoreKind::kRemove, .path = "y"}}};
    auto r = channel::encode_request(channel::Request{.id = 5, .args = restore});
    ASSERT_THAT(r, IsOk());
    auto rf = channel::decode_frame(std::as_bytes(std::span(*r)));
    ASSERT_THAT(rf, IsOk());
    auto rd = channel::decode_request(*rf);
    ASSERT_THAT(rd, IsOk());
    EXPECT_EQ(std::get<RestoreRequest>(rd->args), restore);
}

// A hostile worker's replies: each is refused, none crashes the decoder.
TEST(SnapshotWireTest, MalformedRepliesAreRefused) {
    auto decode = [](nlohmann::json header, std::string payload) {
        return decode_snapshot(header, std::move(payload));
    };
    auto base = [] {
        return nlohmann::json{{"changed", nlohmann::json::array()},
                              {"removed", nlohmann::json::array()},
                              {"more", false},
                              {"scanned", 0},
                              {"skipped", 0}};
    };
    EXPECT_THAT(decode(base(), ""), IsOk());
    auto with = [&](nlohmann::json entry, std::string payload = "") {
        auto h = base();
        h["changed"].push_back(std::move(entry));
        return decode(h, std::move(payload));
    };
    using J = nlohmann::json;
    EXPECT_THAT(with(J::array({"../x", "file", 420, 0, 0, 0, 0, "", false, 0})),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(with(J::array({".git/config", "file", 420, 0, 0, 0, 0, "", false, 0})),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(with(J::array({"/etc/passwd", "file", 420, 0, 0, 0, 0, "", false, 0})),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(with(J::array({"a", "file", 420, 5, 0, 0, 0, "", false, 5}), "abc"),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(with(J::array({"a", "file", 070000, 0, 0, 0, 0, "", false, 0})),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(with(J::array({"a", "directory", 493, 0, 0, 0, 0, "", false, 0}), "x"),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(with(J::array({"a", "symlink", 0, 0, 0, 0, 0, "", false, 0})),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(with(J::array({"a", "file"})), HasErrc(Errc::kInvalidArgument));
    auto unsorted = base();
    unsorted["removed"] = {"b", "a"};
    EXPECT_THAT(decode(unsorted, ""), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(decode_restore_outcome(J{{"applied", 1}, {"failed", J::array({J::array({3})})}}),
                HasErrc(Errc::kInvalidArgument));
}

TEST(LocalWorkspaceSnapshotTest, WalksAndRestoresThroughTheWorkspace) {
    TempDir dir;
    dir.write("f", "1");
    auto ws = LocalWorkspace::open(dir.path(), "");
    ASSERT_THAT(ws, IsOk());
    SnapshotRequest request{.reset = true};
    auto s = ws->snapshot(request);
    ASSERT_THAT(s, IsOk());
    EXPECT_THAT(paths_of(*s), ElementsAre("f"));
    auto r = ws->restore(RestoreRequest{.actions = {{.kind = RestoreKind::kRemove, .path = "f"}}});
    ASSERT_THAT(r, IsOk());
    EXPECT_EQ(r->applied, 1U);
    EXPECT_FALSE(std::filesystem::exists(dir.at("f")));
}

}  // namespace
}  // namespace stockade::workspace
