#include "workspace/local_workspace.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <span>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/fd_leak_checker.h"
#include "tests/testing/matchers.h"
#include "tests/unit/workspace/test_util.h"

namespace stockade::workspace {
namespace {

using stockade::testing::FdLeakChecker;
using stockade::testing::HasErrc;
using stockade::testing::IsOk;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using testing::TempDir;

bool kernel_has_openat2() {
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC;
    long fd = ::syscall(SYS_openat2, AT_FDCWD, ".", &how, sizeof how);
    if (fd >= 0) {
        ::close(static_cast<int>(fd));
        return true;
    }
    return errno != ENOSYS;
}

// The state letter of /proc/<pid>/stat ("" once the process is gone).
std::string read_proc_state(int pid) {
    std::string text;
    const int fd = ::open(fmt::format("/proc/{}/stat", pid).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return text;
    }
    char buf[1024];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    (void)::close(fd);
    if (n > 0) {
        text.assign(buf, static_cast<size_t>(n));
    }
    const size_t paren = text.rfind(')');
    return paren == std::string::npos || paren + 2 >= text.size() ? "" : text.substr(paren + 2, 1);
}

std::vector<std::string> names_of(const std::vector<DirEntry>& entries) {
    std::vector<std::string> names;
    for (const auto& e : entries) {
        names.push_back(e.name);
    }
    return names;
}

// Every test runs twice: with openat2, and with the O_NOFOLLOW walk that replaces it on old
// kernels.
class LocalWorkspaceTest : public ::testing::TestWithParam<ResolveMode> {
protected:
    void SetUp() override {
        if (GetParam() == ResolveMode::kOpenat2 && !kernel_has_openat2()) {
            GTEST_SKIP() << "openat2 unavailable (kernel older than 5.6, or filtered)";
        }
        tmp_.mkdir("ws");
        tmp_.mkdir("spill");
        tmp_.write("outside/secret", "host secret\n");
        tmp_.write("ws/hello.txt", "hello world\n");
        tmp_.write("ws/src/a.cc", "int main() {}\n");
        tmp_.write("spill/out-1.txt", "spilled\n");
        auto ws = LocalWorkspace::open(tmp_.at("ws"), tmp_.at("spill"), options());
        ASSERT_THAT(ws, IsOk());
        ws_.emplace(std::move(*ws));
    }

    [[nodiscard]] LocalWorkspace::Options options() const {
        return LocalWorkspace::Options{.resolve = GetParam()};
    }

    FdLeakChecker leaks_;  // first: checks after everything below is destroyed
    TempDir tmp_;
    std::optional<LocalWorkspace> ws_;
};

INSTANTIATE_TEST_SUITE_P(Resolve, LocalWorkspaceTest,
                         ::testing::Values(ResolveMode::kOpenat2, ResolveMode::kWalk),
                         [](const auto& p) {
                             return std::string(p.param == ResolveMode::kWalk ? "Walk" : "Openat2");
                         });

TEST_P(LocalWorkspaceTest, OpenFailsForAMissingRoot) {
    EXPECT_THAT(LocalWorkspace::open(tmp_.at("nope"), ""), HasErrc(Errc::kNotFound));
    auto no_spill = LocalWorkspace::open(tmp_.at("ws"), "");
    ASSERT_THAT(no_spill, IsOk());
    EXPECT_THAT(no_spill->stat(Root::kSpill, ""), HasErrc(Errc::kUnavailable));
    EXPECT_EQ(ws_->root_path(Root::kWorkspace), tmp_.at("ws"));
    EXPECT_EQ(ws_->root_path(Root::kSpill), tmp_.at("spill"));
}

TEST_P(LocalWorkspaceTest, StatReportsTypeSizeModeAndMtime) {
    auto file = ws_->stat(Root::kWorkspace, "hello.txt");
    ASSERT_THAT(file, IsOk());
    EXPECT_EQ(file->type, FileType::kFile);
    EXPECT_EQ(file->size, 12U);
    EXPECT_EQ(file->mode, 0644U);
    struct stat st {};
    ASSERT_EQ(::stat(tmp_.at("ws/hello.txt").c_str(), &st), 0);
    EXPECT_EQ(file->mtime_ns, st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec);

    auto dir = ws_->stat(Root::kWorkspace, "src");
    ASSERT_THAT(dir, IsOk());
    EXPECT_EQ(dir->type, FileType::kDirectory);
    auto root = ws_->stat(Root::kWorkspace, "");
    ASSERT_THAT(root, IsOk());
    EXPECT_EQ(root->type, FileType::kDirectory);
    EXPECT_THAT(ws_->stat(Root::kSpill, "out-1.txt"), IsOk());
}

TEST_P(LocalWorkspaceTest, StatOfAMissingPathIsNotFound) {
    auto r = ws_->stat(Root::kWorkspace, "src/missing.cc");
    ASSERT_THAT(r, HasErrc(Errc::kNotFound));
    EXPECT_EQ(r.error().message, "stat \"src/missing.cc\": ENOENT (No such file or directory)");
    EXPECT_THAT(ws_->stat(Root::kWorkspace, "hello.txt/x"), HasErrc(Errc::kNotFound));
}

TEST_P(LocalWorkspaceTest, ReadReturnsContentAndInfo) {
    auto r = ws_->read(Root::kWorkspace, "hello.txt", 1 << 20);
    ASSERT_THAT(r, IsOk());
    EXPECT_EQ(r->bytes, "hello world\n");
    EXPECT_FALSE(r->truncated);
    EXPECT_EQ(r->info.size, 12U);
    auto spilled = ws_->read(Root::kSpill, "out-1.txt", 100);
    ASSERT_THAT(spilled, IsOk());
    EXPECT_EQ(spilled->bytes, "spilled\n");
}

TEST_P(LocalWorkspaceTest, ReadStopsAtMaxBytesAndSaysSo) {
    auto cut = ws_->read(Root::kWorkspace, "hello.txt", 5);
    ASSERT_THAT(cut, IsOk());
    EXPECT_EQ(cut->bytes, "hello");
    EXPECT_TRUE(cut->truncated);
    auto exact = ws_->read(Root::kWorkspace, "hello.txt", 12);
    ASSERT_THAT(exact, IsOk());
    EXPECT_EQ(exact->bytes, "hello world\n");
    EXPECT_FALSE(exact->truncated);
    auto none = ws_->read(Root::kWorkspace, "hello.txt", 0);
    ASSERT_THAT(none, IsOk());
    EXPECT_EQ(none->bytes, "");
    EXPECT_TRUE(none->truncated);
}

TEST_P(LocalWorkspaceTest, ReadRefusesDirectoriesAndFifosWithoutBlocking) {
    EXPECT_THAT(ws_->read(Root::kWorkspace, "src", 100), HasErrc(Errc::kFailedPrecondition));
    ASSERT_EQ(::mkfifo(tmp_.at("ws/pipe").c_str(), 0644), 0);
    auto r = ws_->read(Root::kWorkspace, "pipe", 100);
    ASSERT_THAT(r, HasErrc(Errc::kFailedPrecondition));
    EXPECT_THAT(r.error().message, HasSubstr("not a regular file"));
}

TEST_P(LocalWorkspaceTest, WriteCreatesANewFileWith0644) {
    auto r = ws_->write(WriteRequest{.path = "new.txt", .bytes = "fresh"});
    ASSERT_THAT(r, IsOk());
    EXPECT_TRUE(r->created);
    EXPECT_EQ(r->info.size, 5U);
    EXPECT_EQ(r->info.mode, 0644U);
    EXPECT_EQ(tmp_.read("ws/new.txt"), "fresh");
    EXPECT_EQ(tmp_.mode("ws/new.txt"), 0644U);
}

TEST_P(LocalWorkspaceTest, WriteGivesANewFileTheRequestedMode) {
    auto r = ws_->write(WriteRequest{.path = "run.sh", .bytes = "#!/bin/sh\n", .mode = 0755});
    ASSERT_THAT(r, IsOk());
    EXPECT_EQ(tmp_.mode("ws/run.sh"), 0755U);
    // setuid/setgid/sticky are never given to a new file.
    ASSERT_THAT(ws_->write(WriteRequest{.path = "suid", .bytes = "x", .mode = 04755}), IsOk());
    EXPECT_EQ(tmp_.mode("ws/suid"), 0755U);
}

TEST_P(LocalWorkspaceTest, WriteReplacesAtomicallyAndKeepsTheExistingMode) {
    tmp_.write("ws/tool.sh", "old", 0750);
    auto r = ws_->write(WriteRequest{.path = "tool.sh", .bytes = "new content", .mode = 0600});
    ASSERT_THAT(r, IsOk());
    EXPECT_FALSE(r->created);
    EXPECT_EQ(r->info.mode, 0750U);
    EXPECT_EQ(tmp_.mode("ws/tool.sh"), 0750U);
    EXPECT_EQ(tmp_.read("ws/tool.sh"), "new content");
    // Nothing is left behind: the temporary file was renamed over the target.
    auto entries = ws_->list(Root::kWorkspace, "", 100);
    ASSERT_THAT(entries, IsOk());
    EXPECT_THAT(names_of(*entries), ElementsAre("hello.txt", "src", "tool.sh"));
}

TEST_P(LocalWorkspaceTest, WriteReplacesTheInodeSoOpenReadersKeepTheOldContent) {
    tmp_.write("ws/f", "before");
    UniqueFd reader(::open(tmp_.at("ws/f").c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(reader);
    ASSERT_THAT(ws_->write(WriteRequest{.path = "f", .bytes = "after"}), IsOk());
    char buf[16] = {};
    ASSERT_EQ(::read(reader.get(), buf, sizeof buf), 6);
    EXPECT_EQ(std::string(buf), "before");
    EXPECT_EQ(tmp_.read("ws/f"), "after");
}

TEST_P(LocalWorkspaceTest, WriteMakesParentsOnlyWhenAsked) {
    auto missing =
        ws_->write(WriteRequest{.path = "a/b/c.txt", .bytes = "x", .make_parents = false});
    ASSERT_THAT(missing, HasErrc(Errc::kNotFound));
    EXPECT_THAT(missing.error().message, HasSubstr("parent directory \"a/b\" does not exist"));
    EXPECT_FALSE(tmp_.exists("ws/a"));
    ASSERT_THAT(ws_->write(WriteRequest{.path = "a/b/c.txt", .bytes = "x"}), IsOk());
    EXPECT_EQ(tmp_.read("ws/a/b/c.txt"), "x");
}

TEST_P(LocalWorkspaceTest, WriteRefusesDirectoriesAndTheRoot) {
    EXPECT_THAT(ws_->write(WriteRequest{.path = "src", .bytes = "x"}),
                HasErrc(Errc::kFailedPrecondition));
    EXPECT_THAT(ws_->write(WriteRequest{.path = "", .bytes = "x"}),
                HasErrc(Errc::kInvalidArgument));
}

TEST_P(LocalWorkspaceTest, WriteToALinkIsRefusedNamingItsTarget) {
    tmp_.symlink("ws/link.txt", "hello.txt");
    auto r = ws_->write(WriteRequest{.path = "link.txt", .bytes = "x"});
    ASSERT_THAT(r, HasErrc(Errc::kFailedPrecondition));
    EXPECT_THAT(r.error().message, HasSubstr("symbolic link to \"hello.txt\""));
    EXPECT_EQ(tmp_.read("ws/hello.txt"), "hello world\n");
}

TEST_P(LocalWorkspaceTest, TheSpillRootIsReadOnly) {
    auto w = ws_->write(WriteRequest{.root = Root::kSpill, .path = "out-1.txt", .bytes = "x"});
    ASSERT_THAT(w, HasErrc(Errc::kPermissionDenied));
    EXPECT_THAT(w.error().message, HasSubstr("read-only"));
    EXPECT_THAT(ws_->make_dirs(Root::kSpill, "d"), HasErrc(Errc::kPermissionDenied));
    EXPECT_EQ(tmp_.read("spill/out-1.txt"), "spilled\n");
    EXPECT_FALSE(tmp_.exists("spill/d"));
}

TEST_P(LocalWorkspaceTest, MakeDirsCreatesEveryComponent) {
    ASSERT_THAT(ws_->make_dirs(Root::kWorkspace, "x/y/z"), IsOk());
    auto st = ws_->stat(Root::kWorkspace, "x/y/z");
    ASSERT_THAT(st, IsOk());
    EXPECT_EQ(st->type, FileType::kDirectory);
    EXPECT_THAT(ws_->make_dirs(Root::kWorkspace, "x/y/z"), IsOk());  // idempotent
    EXPECT_THAT(ws_->make_dirs(Root::kWorkspace, ""), IsOk());
    auto through_file = ws_->make_dirs(Root::kWorkspace, "hello.txt/sub");
    ASSERT_THAT(through_file, HasErrc(Errc::kFailedPrecondition));
    EXPECT_THAT(through_file.error().message, HasSubstr("not a directory"));
}

TEST_P(LocalWorkspaceTest, RealPathIsWhereANameLeadsWhatExistsResolvedTheRestAppended) {
    tmp_.symlink("ws/code", "src");
    tmp_.mkdir("ws/deep/er");
    tmp_.symlink("ws/deep/er/up", "../../hello.txt");
    tmp_.symlink("ws/out", "../outside/secret");
    auto expect = [&](const std::string& path, const std::string& real, bool exists) {
        auto got = ws_->real_path(Root::kWorkspace, path);
        ASSERT_THAT(got, IsOk()) << path;
        EXPECT_EQ(got->path, real) << path;
        EXPECT_EQ(got->exists, exists) << path;
    };
    expect("", "", true);
    expect("hello.txt", "hello.txt", true);
    expect("code/a.cc", "src/a.cc", true);
    expect("deep/er/up", "hello.txt", true);
    expect("code/new/file.cc", "src/new/file.cc", false);
    expect("missing", "missing", false);
    // What every other call refuses, real_path refuses the same way.
    EXPECT_THAT(ws_->real_path(Root::kWorkspace, "out"), HasErrc(Errc::kPermissionDenied));
    EXPECT_THAT(ws_->real_path(Root::kWorkspace, "hello.txt/x"), Not(IsOk()));
    auto spill = ws_->real_path(Root::kSpill, "out-1.txt");
    ASSERT_THAT(spill, IsOk());
    EXPECT_EQ(spill->path, "out-1.txt");
}

TEST_P(LocalWorkspaceTest, CensusCountsTheProcessesBySession) {
    auto census = ws_->census();
    ASSERT_THAT(census, IsOk());
    EXPECT_GE(census->total, 1U) << "this test's parent, at least";
    uint32_t counted = 0;
    for (const auto& session : census->sessions) {
        counted += session.processes;
    }
    EXPECT_EQ(counted, census->total);
}

TEST_P(LocalWorkspaceTest, SymlinksThatStayInsideAreFollowed) {
    tmp_.symlink("ws/greeting", "hello.txt");
    tmp_.symlink("ws/code", "src");
    tmp_.mkdir("ws/deep/er");
    tmp_.symlink("ws/deep/er/up", "../../hello.txt");
    auto via_file = ws_->read(Root::kWorkspace, "greeting", 100);
    ASSERT_THAT(via_file, IsOk());
    EXPECT_EQ(via_file->bytes, "hello world\n");
    auto via_dir = ws_->read(Root::kWorkspace, "code/a.cc", 100);
    ASSERT_THAT(via_dir, IsOk());
    EXPECT_EQ(via_dir->bytes, "int main() {}\n");
    auto via_dotdot = ws_->read(Root::kWorkspace, "deep/er/up", 100);
    ASSERT_THAT(via_dotdot, IsOk());
    EXPECT_EQ(via_dotdot->bytes, "hello world\n");
    auto stat_link = ws_->stat(Root::kWorkspace, "code");
    ASSERT_THAT(stat_link, IsOk());
    EXPECT_EQ(stat_link->type, FileType::kDirectory);
    ASSERT_THAT(ws_->write(WriteRequest{.path = "code/b.cc", .bytes = "b"}), IsOk());
    EXPECT_EQ(tmp_.read("ws/src/b.cc"), "b");
}

TEST_P(LocalWorkspaceTest, SymlinksThatLeaveTheWorkspaceAreRefused) {
    tmp_.symlink("ws/rel-escape", "../outside/secret");
    tmp_.symlink("ws/abs-escape", tmp_.at("outside/secret"));
    tmp_.symlink("ws/dir-escape", "../outside");
    tmp_.symlink("ws/etc", "/etc");
    tmp_.mkdir("ws/sub");
    tmp_.symlink("ws/sub/sneaky", "../../outside/secret");
    for (const char* path :
         {"rel-escape", "abs-escape", "dir-escape/secret", "etc/passwd", "sub/sneaky"}) {
        SCOPED_TRACE(path);
        auto r = ws_->read(Root::kWorkspace, path, 100);
        ASSERT_THAT(r, HasErrc(Errc::kPermissionDenied));
        EXPECT_EQ(r.error().message,
                  fmt::format("path \"{}\" leaves the workspace through a symlink", path));
        EXPECT_THAT(ws_->stat(Root::kWorkspace, path), HasErrc(Errc::kPermissionDenied));
    }
    EXPECT_THAT(ws_->list(Root::kWorkspace, "dir-escape", 10), HasErrc(Errc::kPermissionDenied));
}

TEST_P(LocalWorkspaceTest, EscapingSymlinksCannotBeWrittenThrough) {
    tmp_.symlink("ws/dir-escape", "../outside");
    auto w = ws_->write(WriteRequest{.path = "dir-escape/planted", .bytes = "x"});
    ASSERT_THAT(w, HasErrc(Errc::kPermissionDenied));
    EXPECT_THAT(w.error().message, HasSubstr("leaves the workspace through a symlink"));
    EXPECT_FALSE(tmp_.exists("outside/planted"));
    EXPECT_THAT(ws_->make_dirs(Root::kWorkspace, "dir-escape/newdir"),
                HasErrc(Errc::kPermissionDenied));
    EXPECT_FALSE(tmp_.exists("outside/newdir"));
    auto no_parents =
        ws_->write(WriteRequest{.path = "dir-escape/secret", .bytes = "x", .make_parents = false});
    ASSERT_THAT(no_parents, HasErrc(Errc::kPermissionDenied));
    EXPECT_EQ(tmp_.read("outside/secret"), "host secret\n");
}

TEST_P(LocalWorkspaceTest, SymlinkLoopsAreRefused) {
    tmp_.symlink("ws/loop-a", "loop-b");
    tmp_.symlink("ws/loop-b", "loop-a");
    auto r = ws_->read(Root::kWorkspace, "loop-a", 100);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().sys_errno, ELOOP);
}

TEST_P(LocalWorkspaceTest, PathsThatAreNotNormalisedNeverReachTheKernel) {
    for (const char* path : {"a/../../outside/secret", "../outside/secret", "/etc/passwd",
                             "src//a.cc", "./hello.txt", "src/..", "src/a.cc/", ".."}) {
        SCOPED_TRACE(path);
        EXPECT_THAT(ws_->stat(Root::kWorkspace, path), HasErrc(Errc::kInvalidArgument));
        EXPECT_THAT(ws_->read(Root::kWorkspace, path, 10), HasErrc(Errc::kInvalidArgument));
        EXPECT_THAT(ws_->write(WriteRequest{.path = path, .bytes = "x"}),
                    HasErrc(Errc::kInvalidArgument));
        EXPECT_THAT(ws_->make_dirs(Root::kWorkspace, path), HasErrc(Errc::kInvalidArgument));
        EXPECT_THAT(ws_->list(Root::kWorkspace, path, 10), HasErrc(Errc::kInvalidArgument));
    }
    EXPECT_THAT(ws_->stat(Root::kWorkspace, std::string("a\0b", 3)),
                HasErrc(Errc::kInvalidArgument));
}

TEST_P(LocalWorkspaceTest, ListIsSortedCappedAndDoesNotFollowLinks) {
    tmp_.write("ws/b.txt", "bb");
    tmp_.write("ws/A.txt", "a");
    tmp_.symlink("ws/zlink", "../outside/secret");
    auto all = ws_->list(Root::kWorkspace, "", 100);
    ASSERT_THAT(all, IsOk());
    EXPECT_THAT(names_of(*all), ElementsAre("A.txt", "b.txt", "hello.txt", "src", "zlink"));
    EXPECT_EQ((*all)[1].type, FileType::kFile);
    EXPECT_EQ((*all)[1].size, 2U);
    EXPECT_EQ((*all)[3].type, FileType::kDirectory);
    EXPECT_EQ((*all)[4].type, FileType::kSymlink);

    auto first_two = ws_->list(Root::kWorkspace, "", 2);
    ASSERT_THAT(first_two, IsOk());
    EXPECT_THAT(names_of(*first_two), ElementsAre("A.txt", "b.txt"));
    auto none = ws_->list(Root::kWorkspace, "", 0);
    ASSERT_THAT(none, IsOk());
    EXPECT_TRUE(none->empty());
}

TEST_P(LocalWorkspaceTest, ListOfALargeDirectoryKeepsTheSmallestNames) {
    for (int i = 999; i >= 0; --i) {
        tmp_.write(fmt::format("ws/many/f{:04}", i), "");
    }
    auto r = ws_->list(Root::kWorkspace, "many", 3);
    ASSERT_THAT(r, IsOk());
    EXPECT_THAT(names_of(*r), ElementsAre("f0000", "f0001", "f0002"));
}

TEST_P(LocalWorkspaceTest, ListOfAFileIsRefused) {
    EXPECT_THAT(ws_->list(Root::kWorkspace, "hello.txt", 10), HasErrc(Errc::kFailedPrecondition));
    EXPECT_THAT(ws_->list(Root::kWorkspace, "missing", 10), HasErrc(Errc::kNotFound));
}

// ---- rg -------------------------------------------------------------------------------------

bool have_rg() {
    return ::access("/usr/bin/rg", X_OK) == 0;
}

TEST_P(LocalWorkspaceTest, RgSearchesFromTheRoot) {
    if (!have_rg()) {
        GTEST_SKIP() << "ripgrep is not installed (/usr/bin/rg)";
    }
    auto r = ws_->run_rg(RgRequest{.args = {"--no-heading", "--line-number", "-e", "main"}});
    ASSERT_THAT(r, IsOk());
    EXPECT_EQ(r->exit_code, 0);
    EXPECT_EQ(r->out, "src/a.cc:1:int main() {}\n");
    EXPECT_FALSE(r->truncated);
    EXPECT_FALSE(r->timed_out);

    auto none = ws_->run_rg(RgRequest{.args = {"-e", "absent-pattern"}});
    ASSERT_THAT(none, IsOk());
    EXPECT_EQ(none->exit_code, 1);
    EXPECT_EQ(none->out, "");

    auto bad = ws_->run_rg(RgRequest{.args = {"-e", "("}});
    ASSERT_THAT(bad, IsOk());
    EXPECT_EQ(bad->exit_code, 2);
    EXPECT_THAT(bad->err, HasSubstr("regex"));

    auto spill = ws_->run_rg(RgRequest{.root = Root::kSpill, .args = {"-l", "-e", "spilled"}});
    ASSERT_THAT(spill, IsOk());
    EXPECT_EQ(spill->out, "out-1.txt\n");
}

TEST_P(LocalWorkspaceTest, RgTimeoutKillsIt) {
    if (!have_rg()) {
        GTEST_SKIP() << "ripgrep is not installed (/usr/bin/rg)";
    }
    // rg blocks forever opening a FIFO nobody writes to.
    ASSERT_EQ(::mkfifo(tmp_.at("ws/stuck").c_str(), 0644), 0);
    auto start = std::chrono::steady_clock::now();
    auto r = ws_->run_rg(
        RgRequest{.args = {"-e", "x", "stuck"}, .timeout = std::chrono::milliseconds(300)});
    ASSERT_THAT(r, IsOk());
    EXPECT_TRUE(r->timed_out);
    EXPECT_EQ(r->exit_code, -1);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST_P(LocalWorkspaceTest, RgTimeoutKillsTheWholeProcessGroup) {
    auto opts = options();
    opts.rg_path = "/bin/sh";
    auto ws = LocalWorkspace::open(tmp_.at("ws"), "", opts);
    ASSERT_THAT(ws, IsOk());
    // A grandchild holding stdout open would keep the pipe alive if only rg were killed.
    auto start = std::chrono::steady_clock::now();
    auto r = ws->run_rg(RgRequest{.args = {"-c", "sleep 30 & sleep 30"},
                                  .timeout = std::chrono::milliseconds(200)});
    ASSERT_THAT(r, IsOk());
    EXPECT_TRUE(r->timed_out);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST_P(LocalWorkspaceTest, RgOutputPastTheCapIsDroppedAndMarked) {
    auto opts = options();
    opts.rg_path = "/bin/sh";
    auto ws = LocalWorkspace::open(tmp_.at("ws"), "", opts);
    ASSERT_THAT(ws, IsOk());
    auto r = ws->run_rg(RgRequest{.args = {"-c", "head -c 1000000 /dev/zero; echo done >&2"},
                                  .max_output_bytes = 1000});
    ASSERT_THAT(r, IsOk());
    EXPECT_EQ(r->out.size(), 1000U);
    EXPECT_TRUE(r->truncated);
    EXPECT_EQ(r->exit_code, 0);  // read to the end, not killed
    EXPECT_EQ(r->err, "done\n");
}

TEST_P(LocalWorkspaceTest, RgGetsOnlyPathCwdAtTheRootAndNullStdin) {
    auto opts = options();
    opts.rg_path = "/bin/sh";
    opts.path_env = "/usr/bin:/bin";
    auto ws = LocalWorkspace::open(tmp_.at("ws"), "", opts);
    ASSERT_THAT(ws, IsOk());
    auto env =
        ws->run_rg(RgRequest{.args = {"-c", "/usr/bin/env -u PWD; pwd -P; cat; ls /proc/self/fd"}});
    ASSERT_THAT(env, IsOk());
    char real[PATH_MAX];
    ASSERT_NE(::realpath(tmp_.at("ws").c_str(), real), nullptr);
    // env without PWD (the shell's own) prints PATH only; cat reads nothing from /dev/null;
    // the only descriptors are stdio (and ls's own directory descriptor).
    EXPECT_THAT(env->out, StartsWith(fmt::format("PATH=/usr/bin:/bin\n{}\n", real)));
    EXPECT_THAT(env->out, ::testing::EndsWith("\n0\n1\n2\n3\n"));
}

// Drives runs as serve_channel does: one poll over every run's descriptors.
Result<RgOutcome> drive_until_over(RgRun& run, const std::vector<RgRun*>& others = {}) {
    for (;;) {
        std::vector<pollfd> fds(3);
        fds.resize(run.poll_fds(std::span<pollfd, 3>(fds.data(), 3)));
        auto until = run.wake_at();
        for (RgRun* other : others) {
            std::array<pollfd, 3> more{};
            const size_t n = other->poll_fds(more);
            fds.insert(fds.end(), more.begin(), more.begin() + static_cast<ptrdiff_t>(n));
            until = std::min(until, other->wake_at());
        }
        const auto wait =
            std::chrono::ceil<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
        (void)::poll(fds.data(), fds.size(),
                     static_cast<int>(std::clamp<int64_t>(wait.count(), 0, 1000)));
        for (RgRun* other : others) {
            auto over = other->advance();
            EXPECT_THAT(over, IsOk());
            EXPECT_FALSE(over && *over) << "the other run ended first";
        }
        ASSIGN_OR_RETURN(bool over, run.advance());
        if (over) {
            return run.finish();
        }
    }
}

TEST_P(LocalWorkspaceTest, RgRunsStartedTogetherEndEachInItsOwnTime) {
    auto opts = options();
    opts.rg_path = "/bin/sh";
    auto ws = LocalWorkspace::open(tmp_.at("ws"), "", opts);
    ASSERT_THAT(ws, IsOk());
    // The first waits for "release", which only the test creates; the second ends at once.
    auto slow = ws->start_rg(
        RgRequest{.args = {"-c", "while [ ! -e release ]; do sleep 0.01; done; echo slow"}});
    ASSERT_THAT(slow, IsOk());
    auto quick = ws->start_rg(RgRequest{.args = {"-c", "echo quick; echo oops >&2; exit 1"}});
    ASSERT_THAT(quick, IsOk());

    auto q = drive_until_over(**quick, {slow->get()});
    ASSERT_THAT(q, IsOk());
    EXPECT_EQ(q->out, "quick\n");
    EXPECT_EQ(q->err, "oops\n");
    EXPECT_EQ(q->exit_code, 1);

    tmp_.write("ws/release", "");
    auto s = drive_until_over(**slow);
    ASSERT_THAT(s, IsOk());
    EXPECT_EQ(s->out, "slow\n");
    EXPECT_EQ(s->exit_code, 0);
    EXPECT_FALSE(s->timed_out);
}

TEST_P(LocalWorkspaceTest, AnRgRunDroppedUnfinishedKillsItsGroup) {
    auto opts = options();
    opts.rg_path = "/bin/sh";
    auto ws = LocalWorkspace::open(tmp_.at("ws"), "", opts);
    ASSERT_THAT(ws, IsOk());
    auto run = ws->start_rg(RgRequest{.args = {"-c", "sleep 30 & echo $! > child; wait"}});
    ASSERT_THAT(run, IsOk());
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while ((!tmp_.exists("ws/child") || tmp_.read("ws/child").empty()) &&
           std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    const std::string text = tmp_.read("ws/child");
    int child = 0;
    (void)std::from_chars(text.data(), text.data() + text.size(), child);
    ASSERT_GT(child, 0);
    run->reset();  // rg (the shell) is reaped; its group, the sleep included, is SIGKILLed
    // The sleep is not this process's child: it is gone once /proc has no live entry for it.
    const auto gone_by = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    bool alive = true;
    while (alive && std::chrono::steady_clock::now() < gone_by) {
        const std::string stat = read_proc_state(child);
        alive = !stat.empty() && stat != "Z";
        if (alive) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }
    EXPECT_FALSE(alive) << "the rg's group outlived its run";
}

TEST_P(LocalWorkspaceTest, RgMissingIsUnavailable) {
    auto opts = options();
    opts.path_env = tmp_.at("spill");
    auto ws = LocalWorkspace::open(tmp_.at("ws"), "", opts);
    ASSERT_THAT(ws, IsOk());
    auto r = ws->run_rg(RgRequest{.args = {"-e", "x"}});
    ASSERT_THAT(r, HasErrc(Errc::kUnavailable));
    EXPECT_THAT(r.error().message, HasSubstr("rg is not installed"));
}

// ---- Path checks ----------------------------------------------------------------------------

TEST(CheckRelativePathTest, AcceptsNormalisedRelativePaths) {
    for (const char* path : {"", "a", "a/b", "a.b/..c/...", "with space/x"}) {
        EXPECT_THAT(check_relative_path(path), IsOk()) << path;
    }
    for (const char* path : {"/", "/a", "a/", "a//b", ".", "..", "a/./b", "a/../b", "../a"}) {
        EXPECT_THAT(check_relative_path(path), HasErrc(Errc::kInvalidArgument)) << path;
    }
    EXPECT_THAT(check_relative_path(std::string(PATH_MAX, 'a')), HasErrc(Errc::kInvalidArgument));
}

}  // namespace
}  // namespace stockade::workspace
