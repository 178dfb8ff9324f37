#include "runner/session/checkpoints.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/matchers.h"
#include "tests/testing/recording_sink.h"
#include "workspace/local_workspace.h"

namespace stockade::runner {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using testing::HasErrc;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::IsOk;
using workspace::FileType;

CheckpointFile file(std::string bytes, uint32_t mode = 0644) {
    return CheckpointFile{.type = FileType::kFile,
                          .mode = mode,
                          .size = bytes.size(),
                          .blob = git_blob_id(bytes),
                          .sha256 = "",
                          .target = {}};
}

TEST(CheckpointsPureTest, GitBlobIdIsGits) {
    EXPECT_EQ(git_blob_id("hello\n"), "ce013625030ba8dba906f756967f9e9ca394464a");
    EXPECT_EQ(git_blob_id(""), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
}

TEST(CheckpointsPureTest, DiffAndApplyAreInverse) {
    CheckpointTree a{{"x", file("1")}, {"y", file("2")}};
    CheckpointTree b{{"y", file("2", 0600)}, {"z", file("3")}};
    CheckpointChanges d = diff_trees(a, b);
    EXPECT_EQ(d.size(), 3U);
    EXPECT_FALSE(d.at("x").has_value());
    CheckpointTree c = a;
    apply_changes(c, d);
    EXPECT_EQ(c, b);
    EXPECT_THAT(diff_trees(b, b), IsEmpty());
}

TEST(CheckpointsPureTest, ASeededModeComparesOnlyTheExecBit) {
    CheckpointFile seeded = file("x", 0644);
    seeded.seeded = true;
    EXPECT_TRUE(same_file(seeded, file("x", 0664)));
    EXPECT_FALSE(same_file(seeded, file("x", 0755)));
    EXPECT_FALSE(same_file(file("x", 0644), file("x", 0600)));
}

TEST(CheckpointsPureTest, APlanRemovesDeepestFirstAndLeavesConflicts) {
    const CheckpointTree target{{"a", file("old")},
                                {"d", {.type = FileType::kDirectory, .mode = 0755}}};
    const CheckpointTree last{{"a", file("new")},
                              {"b", file("b")},
                              {"n", {.type = FileType::kDirectory, .mode = 0755}},
                              {"n/f", file("f")}};
    CheckpointTree current = last;
    current["b"] = file("someone else");
    const RewindPlan plan = plan_rewind(target, last, current, false);
    EXPECT_THAT(plan.remove, ElementsAre("n/f", "n"));
    ASSERT_EQ(plan.put.size(), 2U);
    EXPECT_EQ(plan.put[0].path, "a");
    EXPECT_EQ(plan.put[1].path, "d");
    EXPECT_THAT(plan.conflicts, ElementsAre("b"));
    const RewindPlan forced = plan_rewind(target, last, current, true);
    EXPECT_THAT(forced.remove, ElementsAre("n/f", "n", "b"));
    EXPECT_THAT(forced.conflicts, IsEmpty());
}

TEST(CheckpointsPureTest, ATypeChangeRemovesFirstAndAFileAboveTheCapIsListed) {
    CheckpointFile big = file("huge");
    big.too_large = true;
    const CheckpointTree target{{"p", file("was a file")}, {"big", big}};
    const CheckpointTree now{{"p", {.type = FileType::kDirectory, .mode = 0755}},
                             {"big", file("other")}};
    const RewindPlan plan = plan_rewind(target, now, now, false);
    EXPECT_THAT(plan.remove, ElementsAre("p"));
    ASSERT_EQ(plan.put.size(), 1U);
    EXPECT_EQ(plan.put[0].path, "p");
    EXPECT_THAT(plan.unrewindable, ElementsAre("big"));
}

TEST(CheckpointsPureTest, RecordsRoundTripAndForeignPathsAreRefused) {
    CheckpointRecord r{.seq = 3,
                       .call = "c-1",
                       .kind = CheckpointKind::kCall,
                       .ts = "t",
                       .changes = {{"a", file("1")}, {"gone", std::nullopt}}};
    r.changes["a"]->sha256 = std::string(64, 'a');
    auto back = record_from_json(record_to_json(r));
    ASSERT_THAT(back, IsOk());
    EXPECT_EQ(back->changes, r.changes);
    EXPECT_EQ(back->call, "c-1");
    nlohmann::json bad = record_to_json(r);
    bad["changes"]["../escape"] = nullptr;
    EXPECT_THAT(record_from_json(bad), HasErrc(Errc::kInvalidArgument));
    nlohmann::json bad_id = record_to_json(r);
    bad_id["changes"]["a"]["h"] = "../../etc/passwd";
    EXPECT_THAT(record_from_json(bad_id), HasErrc(Errc::kInvalidArgument));
}

// The store over a real LocalWorkspace (the worker's code, without a sandbox).
class CheckpointsTest : public ::testing::Test {
protected:
    void SetUp() override {
        for (fs::path* dir : {&ws_, &state_}) {
            std::string templ = (fs::temp_directory_path() / "checkpoints-XXXXXX").string();
            ASSERT_NE(::mkdtemp(templ.data()), nullptr);
            *dir = templ;
        }
        state_fd_ = ::open(state_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_GE(state_fd_, 0);
        auto ws = workspace::LocalWorkspace::open(ws_.string(), "");
        ASSERT_THAT(ws, IsOk());
        local_ = std::make_unique<workspace::LocalWorkspace>(std::move(ws).value());
    }
    void TearDown() override {
        ::close(state_fd_);
        std::error_code ec;
        fs::remove_all(ws_, ec);
        fs::remove_all(state_, ec);
    }
    std::unique_ptr<Checkpoints> open(CheckpointOptions options = {}) {
        auto dir = HostDir::open(ws_.string());
        EXPECT_THAT(dir, IsOk());
        auto c = Checkpoints::open(state_fd_, *dir, std::move(options), &sink_);
        EXPECT_THAT(c, IsOk());
        return c ? std::move(c).value() : nullptr;
    }
    void put(const std::string& rel, const std::string& bytes) {
        fs::create_directories((ws_ / rel).parent_path());
        std::ofstream(ws_ / rel, std::ios::binary | std::ios::trunc) << bytes;
    }
    std::string get(const std::string& rel) {
        std::ifstream in(ws_ / rel, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), {});
    }

    fs::path ws_;
    fs::path state_;
    int state_fd_ = -1;
    std::unique_ptr<workspace::LocalWorkspace> local_;
    testing::RecordingSink sink_;
};

TEST_F(CheckpointsTest, EachCallIsCheckpointedAndRewoundAcrossAReopen) {
    put("a", "one");
    {
        auto c = open();
        c->before_call(*local_, "c1");
        put("a", "two");
        put("b", "new");
        c->after_call(*local_, "c1");
        c->before_call(*local_, "c2");
        fs::remove(ws_ / "b");
        c->after_call(*local_, "c2");
        const auto list = c->list();
        ASSERT_EQ(list.size(), 3U);
        EXPECT_EQ(list[0].kind, CheckpointKind::kBaseline);
        EXPECT_EQ(list[1].added, 1U);
        EXPECT_EQ(list[1].changed, 1U);
        EXPECT_EQ(list[2].removed, 1U);
    }
    // Reopened (a session resumed, or rewound after it ended) with a fresh worker index.
    auto ws = workspace::LocalWorkspace::open(ws_.string(), "");
    ASSERT_THAT(ws, IsOk());
    local_ = std::make_unique<workspace::LocalWorkspace>(std::move(ws).value());
    auto c = open();
    std::vector<std::string> touched;
    auto report =
        c->rewind(*local_, {.to = "c1"}, [&](const std::string& p) { touched.push_back(p); });
    ASSERT_THAT(report, IsOk());
    EXPECT_EQ(get("a"), "one");
    EXPECT_FALSE(fs::exists(ws_ / "b"));
    EXPECT_THAT(touched, ElementsAre("a"));
    auto forward = c->rewind(*local_, {.to = "c2"});
    ASSERT_THAT(forward, IsOk());
    EXPECT_EQ(get("a"), "two");
    EXPECT_THAT(c->rewind(*local_, {.to = "nope"}), HasErrc(Errc::kNotFound));
    const auto types = sink_.types();
    EXPECT_EQ(std::count(types.begin(), types.end(), "Rewind"), 2);
}

TEST_F(CheckpointsTest, TheQuotaDropsTheOldestAndDeletesWhatOnlyItHeld) {
    put("f", std::string(3000, 'a'));
    auto c = open({.cap_bytes = 8000});
    c->before_call(*local_, "c1");
    for (int i = 0; i < 4; ++i) {
        put("f", std::string(3000, static_cast<char>('b' + i)));
        c->after_call(*local_, "c" + std::to_string(i + 1));
    }
    EXPECT_LE(c->used_bytes(), 8000U);
    size_t dropped = 0;
    for (const auto& e : sink_.events()) {
        dropped += e.type == "CheckpointDropped" ? 1U : 0U;
    }
    EXPECT_GE(dropped, 1U);
    EXPECT_THAT(c->rewind(*local_, {.to = "c1"}), HasErrc(Errc::kNotFound));
    auto back = c->rewind(*local_, {.to = "c4"});
    ASSERT_THAT(back, IsOk());
    EXPECT_EQ(get("f"), std::string(3000, 'd'));
}

TEST_F(CheckpointsTest, OffMeansNothingIsRecorded) {
    auto c = open({.enabled = false});
    c->before_call(*local_, "c1");
    put("x", "1");
    c->after_call(*local_, "c1");
    EXPECT_THAT(c->list(), IsEmpty());
    EXPECT_THAT(sink_.types(), IsEmpty());
}

}  // namespace
}  // namespace stockade::runner
