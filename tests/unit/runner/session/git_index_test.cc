#include "runner/session/git_index.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/syscall.h"
#include "tests/testing/golden.h"
#include "tests/testing/matchers.h"

namespace stockade::runner {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using testing::HasErrc;
using ::testing::HasSubstr;
using testing::IsOk;
using ::testing::Not;

// A repository made by the real git, with `files` added to its index in `version`.
class GitIndexTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::string templ = (fs::temp_directory_path() / "gitindex-XXXXXX").string();
        ASSERT_NE(::mkdtemp(templ.data()), nullptr);
        dir_ = templ;
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    void make_repo(int version) {
        for (const char* f : {"README.md", ".env", "config/secrets.txt", "config/app.ini",
                              "src/a-long-directory-name/with/deep/file.cc",
                              "src/a-long-directory-name/with/deep/other.cc", "keys/id.pem"}) {
            fs::create_directories((dir_ / f).parent_path());
            std::ofstream(dir_ / f) << f << "\n";
        }
        const std::string git = "git -C '" + dir_.string() + "' -c user.name=t -c user.email=t@t ";
        ASSERT_EQ(std::system((git + "init -q && " + git + "add -A && " + git +
                               "update-index --index-version " + std::to_string(version))
                                  .c_str()),
                  0);
    }
    std::string index_bytes() {
        auto bytes = read_file((dir_ / ".git/index").string(), size_t{1} << 20);
        EXPECT_THAT(bytes, IsOk());
        return bytes.value_or("");
    }

    fs::path dir_;
};

TEST_F(GitIndexTest, ReadsThePathsOfEveryIndexVersion) {
    for (int version : {2, 3, 4}) {
        make_repo(version);
        auto paths = parse_git_index(index_bytes());
        ASSERT_THAT(paths, IsOk()) << "version " << version;
        EXPECT_THAT(*paths,
                    ElementsAre(".env", "README.md", "config/app.ini", "config/secrets.txt",
                                "keys/id.pem", "src/a-long-directory-name/with/deep/file.cc",
                                "src/a-long-directory-name/with/deep/other.cc"))
            << "version " << version;
        fs::remove_all(dir_ / ".git");
    }
}

TEST_F(GitIndexTest, EntriesCarryTheirBlobIdAndTheStatDataGitCompares) {
    for (int version : {2, 4}) {
        make_repo(version);
        auto entries = parse_git_index_entries(index_bytes());
        ASSERT_THAT(entries, IsOk()) << "version " << version;
        ASSERT_EQ(entries->size(), 7U);
        const GitIndexEntry& readme = (*entries)[1];
        EXPECT_EQ(readme.path, "README.md");
        // git hash-object of "README.md\n".
        FILE* p = ::popen(("git -C '" + dir_.string() + "' hash-object README.md").c_str(), "r");
        ASSERT_NE(p, nullptr);
        char id[64] = {};
        ASSERT_NE(std::fgets(id, sizeof id, p), nullptr);
        (void)::pclose(p);
        EXPECT_EQ(readme.blob, std::string(id, 40));
        struct stat st {};
        ASSERT_EQ(::lstat((dir_ / "README.md").c_str(), &st), 0);
        EXPECT_EQ(readme.size, static_cast<uint64_t>(st.st_size));
        EXPECT_EQ(readme.ino, static_cast<uint64_t>(st.st_ino) & 0xFFFFFFFFU);
        EXPECT_EQ(readme.mtime_ns, int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec);
        EXPECT_EQ(readme.mode, 0100644U);
        EXPECT_EQ(readme.stage, 0);
        fs::remove_all(dir_ / ".git");
    }
}

TEST_F(GitIndexTest, MalformedIndexesAreErrorsNeverReadsPastTheEnd) {
    make_repo(4);
    const std::string good = index_bytes();
    EXPECT_THAT(parse_git_index(""), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(parse_git_index("DIRC"), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(parse_git_index(std::string("DIRC\0\0\0\x09\0\0\0\0", 12)),
                HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(parse_git_index(std::string("DIRC\0\0\0\x02\xff\xff\xff\xff", 12)),
                HasErrc(Errc::kInvalidArgument));
    for (size_t cut = 13; cut < good.size() - 40; cut += 7) {
        // Every prefix either parses to fewer paths or is an error (the checksum at the end is
        // not needed to read the entries).
        (void)parse_git_index(good.substr(0, cut));
    }
}

TEST_F(GitIndexTest, TrackedFilesThatAReadRuleDeniesAreNamedWithTheRule) {
    make_repo(2);
    auto policy = policy::Policy::load(
        std::vector<policy::SettingsSource>{
            {.layer = policy::Layer::kCommandLine,
             .origin = "command line",
             .text =
                 R"json({"permissions": {"deny": ["Read(./.env)", "Read(./config/**)"]}})json"}},
        policy::PolicyOptions{.workspace_root = dir_.string()});
    ASSERT_THAT(policy, IsOk());
    const HostDir ws = HostDir::open(dir_.string()).value();
    const auto warnings = git_tracked_denials(*policy, ws);
    ASSERT_EQ(warnings.size(), 2U);
    EXPECT_THAT(warnings[0], HasSubstr("Read(./.env) (command line:1) denies 1 file that git "
                                       "tracks (.env)"));
    EXPECT_THAT(warnings[0], HasSubstr("git show HEAD:.env"));
    EXPECT_THAT(warnings[0], HasSubstr("deny Read(./.git/**) as well"));
    EXPECT_THAT(warnings[1], HasSubstr("Read(./config/**) (command line:1) denies 2 files"));
    const std::vector<TrackedDenial> denied = git_tracked_denied(*policy, ws);
    ASSERT_EQ(denied.size(), 2U);
    EXPECT_EQ(denied[1].rule, "Read(./config/**)");
    EXPECT_EQ(denied[1].origin, "command line:1");
    EXPECT_EQ(denied[1].count, 2U);
    EXPECT_THAT(denied[1].first, ElementsAre("config/app.ini", "config/secrets.txt"));
    // No repository, no warning.
    fs::remove_all(dir_ / ".git");
    EXPECT_TRUE(git_tracked_denials(*policy, ws).empty());
}

TEST_F(GitIndexTest, AnIndexPlantedOutsideTheWorkspaceOrAsAFifoIsNeverRead) {
    make_repo(2);
    auto policy = policy::Policy::load(
        std::vector<policy::SettingsSource>{
            {.layer = policy::Layer::kCommandLine,
             .origin = "command line",
             .text = R"json({"permissions": {"deny": ["Read(./.env)"]}})json"}},
        policy::PolicyOptions{.workspace_root = dir_.string()});
    ASSERT_THAT(policy, IsOk());
    const HostDir ws = HostDir::open(dir_.string()).value();
    ASSERT_EQ(git_tracked_denials(*policy, ws).size(), 1U);
    // A sandbox can replace .git/index: with a link to another repository's index, which is not
    // this workspace's, and with a FIFO, which would block whoever opened it for reading.
    const fs::path other = dir_.parent_path() / (dir_.filename().string() + "-other-index");
    fs::rename(dir_ / ".git/index", other);
    fs::create_symlink(other, dir_ / ".git/index");
    EXPECT_TRUE(git_tracked_denials(*policy, ws).empty()) << "followed a link out of the workspace";
    fs::remove(dir_ / ".git/index");
    fs::remove(other);
    ASSERT_EQ(::mkfifo((dir_ / ".git/index").c_str(), 0600), 0);
    EXPECT_TRUE(git_tracked_denials(*policy, ws).empty());
}

policy::Policy load(const std::string& deny, const std::string& workspace) {
    auto policy = policy::Policy::load(
        std::vector<policy::SettingsSource>{
            {.layer = policy::Layer::kCommandLine,
             .origin = "command line",
             .text = R"json({"permissions": {"deny": [)json" + deny + "]}}"}},
        policy::PolicyOptions{.workspace_root = workspace});
    EXPECT_THAT(policy, IsOk());
    return std::move(policy).value();
}

TEST(TrackedDenialsTest, EachRuleCountsTheTrackedFilesItDeniesAndNamesTheFirstFew) {
    const auto policy = load(R"j("Read(./.env)", "Read(./logs/**)", "Edit(./src/**)")j", "/ws");
    const std::vector<TrackedDenial> denied = tracked_denials(
        policy, "/ws",
        {".env", "README.md", "logs/1", "logs/2", "logs/3", "logs/4", "src/a.cc", "x/.env"});
    ASSERT_EQ(denied.size(), 2U) << "an Edit rule does not hide a file";
    EXPECT_EQ(denied[0].rule, "Read(./.env)");
    EXPECT_EQ(denied[0].count, 2U) << "a name without a slash, at any depth";
    EXPECT_THAT(denied[0].first, ElementsAre(".env", "x/.env"));
    EXPECT_EQ(denied[1].rule, "Read(./logs/**)");
    EXPECT_EQ(denied[1].count, 4U);
    EXPECT_THAT(denied[1].first, ElementsAre("logs/1", "logs/2", "logs/3"));
    EXPECT_TRUE(tracked_denials(policy, "/ws", {"README.md"}).empty());
}

TEST(TrackedDenialsTest, NothingIsSaidOnceTheRepositorysObjectsAreDeniedToo) {
    for (const char* git :
         {R"j("Read(./.git/**)")j", R"j("Read(./.git)")j", R"j("Read(./.git/objects/**)")j"}) {
        const auto policy = load(std::string(R"j("Read(./.env)", )j") + git, "/ws");
        EXPECT_TRUE(tracked_denials(policy, "/ws", {".env", "README.md"}).empty()) << git;
    }
    const auto refs_only = load(R"j("Read(./.env)", "Read(./.git/refs/**)")j", "/ws");
    EXPECT_EQ(tracked_denials(refs_only, "/ws", {".env"}).size(), 1U)
        << "git still reads the objects";
}

TEST(TrackedDenialsTest, TheOperatorIsToldTheRuleItsOriginAndBothRemedies) {
    stockade::testing::expect_golden(
        "policy", "git_tracked_warning.txt",
        tracked_denial_warning({.rule = "Read(./.env)",
                                .origin = "/etc/stockade/policy.json:3",
                                .count = 1,
                                .first = {".env"}}));
    stockade::testing::expect_golden(
        "policy", "git_tracked_warning_many.txt",
        tracked_denial_warning({.rule = "Read(./config/**)",
                                .origin = "command line:1",
                                .count = 5,
                                .first = {"config/a.ini", "config/b.ini", "config/c.ini"}}));
}

TEST(TrackedDenialsTest, TheModelIsToldOnceWhatTheRulesCannotHideAndWhatTheUserCanDo) {
    stockade::testing::expect_golden("policy", "git_tracked_note.txt",
                                     tracked_denials_note({{.rule = "Read(./.env)",
                                                            .origin = "/etc/stockade/x.json:3",
                                                            .count = 1,
                                                            .first = {".env"}}}));
    const std::vector<TrackedDenial> many = {
        {.rule = "Read(./.env)", .origin = "command line:1", .count = 1, .first = {".env"}},
        {.rule = "Read(./config/**)",
         .origin = "/home/op/.config/stockade/settings.json:4",
         .count = 5,
         .first = {"config/a.ini", "config/b.ini", "config/c.ini"}}};
    const std::string note = tracked_denials_note(many);
    stockade::testing::expect_golden("policy", "git_tracked_note_many.txt", note);
    EXPECT_THAT(note, Not(HasSubstr("/home/op"))) << "no host path reaches the model";
    EXPECT_EQ(tracked_denials_note({}), "");
    // A tracked name is the repository's, not ours: shown inert, on one line.
    EXPECT_THAT(tracked_denials_note({{.rule = "Read(./**/*.key)",
                                       .origin = "command line:1",
                                       .count = 1,
                                       .first = {"a\n\x1b[2Jb.key"}}}),
                HasSubstr(R"(("a\n\u001b[2Jb.key"; rule Read(./**/*.key)))"));
}

}  // namespace
}  // namespace stockade::runner
