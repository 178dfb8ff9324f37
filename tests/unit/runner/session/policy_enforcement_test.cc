// enforcement_for(): deny rules on paths, expanded over a real temporary workspace into the
// masked and read-only paths of the sandbox.
#include "runner/session/policy_enforcement.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "images/image.h"
#include "policy/settings.h"
#include "tests/testing/matchers.h"

namespace stockade::runner {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;
namespace fs = std::filesystem;

class EnforcementTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/stockade-enforce-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        ws_ = fs::canonical(tmpl).string();
    }
    void TearDown() override { fs::remove_all(ws_); }

    std::string p(const std::string& relative) const { return ws_ + "/" + relative; }
    // The workspace, opened as a session opens it.
    HostDir ws() const {
        auto dir = HostDir::open(ws_);
        EXPECT_TRUE(dir) << dir.error().message;
        return dir ? *dir : HostDir();
    }

    void file(const std::string& relative, const std::string& content = "x") const {
        fs::create_directories(fs::path(p(relative)).parent_path());
        std::ofstream(p(relative)) << content;
    }
    void dir(const std::string& relative) const { fs::create_directories(p(relative)); }

    policy::Policy load(const std::vector<std::string>& deny,
                        const std::vector<std::string>& allow = {},
                        const std::vector<std::string>& ask = {},
                        policy::Mode mode = policy::Mode::kLocal) const {
        policy::SettingsSource source{
            .layer = policy::Layer::kProject,
            .origin = ws_ + "/.stockade/settings.json",
            .text = policy::command_line_source(allow, ask, deny).text,
        };
        auto loaded = policy::Policy::load(
            std::vector{source}, policy::PolicyOptions{.mode = mode, .workspace_root = ws_});
        EXPECT_THAT(loaded, testing::IsOk());
        return std::move(loaded).value();
    }

    std::string ws_;
};

TEST_F(EnforcementTest, NoRulesNoGitNothing) {
    file("src/main.cc");
    Enforcement e = enforcement_for(load({}), ws());
    EXPECT_THAT(e.masked_paths, IsEmpty());
    EXPECT_THAT(e.read_only_paths, IsEmpty());
    EXPECT_FALSE(e.from_rules);
}

TEST_F(EnforcementTest, ReadDenyMasksTheMatchingFilesAtAnyDepth) {
    file(".env", "SECRET=1");
    file("services/api/.env");
    file("services/api/main.go");
    file(".envrc");
    Enforcement e = enforcement_for(load({"Read(.env)"}), ws());
    EXPECT_THAT(e.masked_paths, ElementsAre(p(".env"), p("services/api/.env")));
    EXPECT_THAT(e.read_only_paths, IsEmpty());
    EXPECT_TRUE(e.from_rules);
}

TEST_F(EnforcementTest, ARuleWithASlashMasksOnlyThatPath) {
    file("config/.env");
    file("sub/config/.env");
    Enforcement e = enforcement_for(load({"Read(./config/.env)"}), ws());
    EXPECT_THAT(e.masked_paths, ElementsAre(p("config/.env")));
    // Without a slash a pattern matches at any depth (docs/policy.md), "./" or not.
    file(".env");
    file("sub/.env");
    Enforcement any = enforcement_for(load({"Read(./.env)"}), ws());
    EXPECT_THAT(any.masked_paths,
                ElementsAre(p(".env"), p("config/.env"), p("sub/.env"), p("sub/config/.env")));
}

TEST_F(EnforcementTest, ADirectoryThatMatchesIsMaskedWholeAndNotWalked) {
    file("secrets/a.key");
    file("secrets/deep/b.key");
    file("src/x.cc");
    Enforcement e = enforcement_for(load({"Read(./secrets/)"}), ws());
    EXPECT_THAT(e.masked_paths, ElementsAre(p("secrets")));
}

TEST_F(EnforcementTest, EverythingInsideADirectoryMasksTheDirectory) {
    // "secrets/**" names the contents, not the directory; every entry matches and so would a
    // new one: one mask over the directory instead of one per entry.
    file("secrets/a.key");
    file("secrets/deep/b.key");
    file("secretsnot/c");
    Enforcement e = enforcement_for(load({"Read(./secrets/**)"}), ws());
    EXPECT_THAT(e.masked_paths, ElementsAre(p("secrets")));
}

TEST_F(EnforcementTest, SomeEntriesOfADirectoryAreMaskedOneByOne) {
    file("certs/a.pem");
    file("certs/b.pem");
    file("certs/README");
    Enforcement e = enforcement_for(load({"Read(*.pem)"}), ws());
    EXPECT_THAT(e.masked_paths, ElementsAre(p("certs/a.pem"), p("certs/b.pem")));
}

TEST_F(EnforcementTest, AllEntriesMatchingByChanceDoNotMaskTheDirectory) {
    // Every file there is a .pem today, but a new file need not be: the directory stays.
    file("certs/a.pem");
    file("certs/b.pem");
    Enforcement e = enforcement_for(load({"Read(*.pem)"}), ws());
    EXPECT_THAT(e.masked_paths, ElementsAre(p("certs/a.pem"), p("certs/b.pem")));
}

TEST_F(EnforcementTest, EditDenyMakesReadOnly) {
    file(".github/workflows/ci.yml");
    file("Makefile");
    file("config/prod.yaml");
    Enforcement e = enforcement_for(load({"Edit(./.github/**)", "Write(./Makefile)",
                                          "Read(./config/prod.yaml)", "Edit(./config/prod.yaml)"}),
                                    ws());
    EXPECT_THAT(e.read_only_paths, ElementsAre(p(".github"), p("Makefile"), p("config/prod.yaml")))
        << "a path both unreadable and unwritable is in both lists (its parents get pinned)";
    EXPECT_THAT(e.masked_paths, ElementsAre(p("config/prod.yaml")));
    EXPECT_TRUE(e.from_rules);
}

TEST_F(EnforcementTest, ReadMasksInsideAReadOnlyDirectoryAreStillFound) {
    file("deploy/run.sh");
    file("deploy/.env");
    Enforcement e = enforcement_for(load({"Edit(./deploy/)", "Read(.env)"}), ws());
    EXPECT_THAT(e.read_only_paths, ElementsAre(p("deploy")));
    EXPECT_THAT(e.masked_paths, ElementsAre(p("deploy/.env")));
}

TEST_F(EnforcementTest, AllowAndAskRulesDoNotMask) {
    file(".env");
    file("notes.txt");
    Enforcement local = enforcement_for(load({}, {"Read(notes.txt)"}, {"Read(.env)"}), ws());
    EXPECT_THAT(local.masked_paths, IsEmpty()) << "an ask can be approved in local mode";
    Enforcement ci =
        enforcement_for(load({}, {"Read(notes.txt)"}, {"Read(.env)"}, policy::Mode::kCi), ws());
    EXPECT_THAT(ci.masked_paths, ElementsAre(p(".env"))) << "in ci mode an ask is a deny";
}

TEST_F(EnforcementTest, AnAllowRuleDoesNotOverrideADeny) {
    file(".env");
    Enforcement e = enforcement_for(load({"Read(.env)"}, {"Read(**)"}), ws());
    EXPECT_THAT(e.masked_paths, ElementsAre(p(".env")));
}

TEST_F(EnforcementTest, ThePresetsDefaultsAreNotEnforcedAsMounts) {
    file("src/a.cc");
    policy::SettingsSource source{
        .layer = policy::Layer::kUser,
        .origin = "user settings",
        .text = R"({"permissions": {"defaultMode": "read-only"}})",
    };
    auto loaded =
        policy::Policy::load(std::vector{source}, policy::PolicyOptions{.workspace_root = ws_});
    ASSERT_THAT(loaded, testing::IsOk());
    Enforcement e = enforcement_for(*loaded, ws());
    EXPECT_THAT(e.read_only_paths, IsEmpty()) << "the read-only preset denies writes by default";
}

TEST_F(EnforcementTest, GrepAndGlobOnlyRulesDoNotMaskForCommands) {
    file("big.log");
    Enforcement e = enforcement_for(load({"Grep(big.log)", "Glob(big.log)"}), ws());
    EXPECT_THAT(e.masked_paths, IsEmpty());
}

TEST_F(EnforcementTest, GitHooksAndConfigAreReadOnlyByDefault) {
    file(".git/config", "[core]\n");
    dir(".git/hooks");
    file(".git/HEAD", "ref: refs/heads/main\n");
    Enforcement e = enforcement_for(load({}), ws());
    EXPECT_THAT(e.read_only_paths, ElementsAre(p(".git/config"), p(".git/hooks")));
    EXPECT_FALSE(e.from_rules) << "defaults only: best effort";
    SandboxConfig options;
    apply_enforcement(e, options);
    EXPECT_TRUE(options.path_rules_best_effort);
    EXPECT_EQ(options.read_only_paths, e.read_only_paths);
}

TEST_F(EnforcementTest, DefaultsUnderAMaskedGitAreDropped) {
    file(".git/config");
    dir(".git/hooks");
    Enforcement e = enforcement_for(load({"Read(./.git/)"}), ws());
    EXPECT_THAT(e.masked_paths, ElementsAre(p(".git")));
    EXPECT_THAT(e.read_only_paths, IsEmpty());
}

TEST_F(EnforcementTest, ASymlinkedHooksDirectoryIsNotedNotProtected) {
    dir(".githooks");
    dir(".git");
    fs::create_directory_symlink("../.githooks", p(".git/hooks"));
    Enforcement e = enforcement_for(load({}), ws());
    EXPECT_THAT(e.read_only_paths, IsEmpty());
    EXPECT_THAT(e.notes, Contains(HasSubstr(".git/hooks\" is a symlink")));
}

TEST_F(EnforcementTest, AMatchingSymlinkMasksItsTargetInTheWorkspace) {
    file("config/real.env", "SECRET=1");
    fs::create_symlink("config/real.env", p(".env"));
    Enforcement e = enforcement_for(load({"Read(./.env)"}), ws());
    EXPECT_THAT(e.masked_paths, ElementsAre(p("config/real.env")));
    EXPECT_TRUE(e.from_rules);
}

TEST_F(EnforcementTest, AMatchingSymlinkOutOfTheWorkspaceIsANote) {
    fs::create_symlink("/etc/passwd", p(".env"));
    Enforcement e = enforcement_for(load({"Read(./.env)"}), ws());
    EXPECT_THAT(e.masked_paths, IsEmpty());
    EXPECT_THAT(e.notes, Contains(HasSubstr("outside the workspace")));
}

TEST_F(EnforcementTest, RulesReachFilesThroughASymlinkedDirectory) {
    file("shared/secret.txt");
    file("shared/readme");
    fs::create_directory_symlink("shared", p("config"));
    Enforcement e = enforcement_for(load({"Read(./config/secret.txt)"}), ws());
    EXPECT_THAT(e.masked_paths, ElementsAre(p("shared/secret.txt")));
}

TEST_F(EnforcementTest, SymlinkLoopsAreNotFollowedForever) {
    dir("a");
    fs::create_directory_symlink("..", p("a/up"));
    fs::create_directory_symlink(".", p("self"));
    file("a/.env");
    Enforcement e = enforcement_for(load({"Read(.env)"}), ws());
    EXPECT_THAT(e.masked_paths, ElementsAre(p("a/.env")));
}

TEST_F(EnforcementTest, OtherNamesOfAProtectedFileAreProtected) {
    file(".env", "SECRET=1");
    fs::create_hard_link(p(".env"), p("backup.txt"));
    Enforcement e = enforcement_for(load({"Read(./.env)"}), ws());
    EXPECT_THAT(e.masked_paths, ElementsAre(p(".env"), p("backup.txt")));
}

TEST_F(EnforcementTest, StopsAtMaxEntriesWithANote) {
    for (int i = 0; i < 50; ++i) {
        file("d/f" + std::to_string(i));
    }
    Enforcement e = enforcement_for(load({"Read(.env)"}), ws(), 10);
    EXPECT_THAT(e.notes, Contains(HasSubstr("more than 10 entries")));
}

TEST_F(EnforcementTest, TheWorkspaceRootItselfIsNeverMasked) {
    file("a");
    file("b/c");
    Enforcement e = enforcement_for(load({"Read(./**)"}), ws());
    EXPECT_THAT(e.masked_paths, ElementsAre(p("a"), p("b")));
}

TEST_F(EnforcementTest, ASymlinkedWorkspaceRootYieldsRealPaths) {
    file(".env");
    std::string link = ws_ + "-link";
    fs::create_directory_symlink(ws_, link);
    const std::vector<std::string> none;
    const std::vector<std::string> deny{"Read(.env)"};
    policy::SettingsSource source{.layer = policy::Layer::kProject,
                                  .origin = "settings",
                                  .text = policy::command_line_source(none, none, deny).text};
    // Opened as a session opens it: the rules are anchored at the path the kernel gives.
    const HostDir dir = HostDir::open(link).value();
    EXPECT_EQ(dir.path(), ws_);
    auto loaded = policy::Policy::load(std::vector{source},
                                       policy::PolicyOptions{.workspace_root = dir.path()});
    ASSERT_THAT(loaded, testing::IsOk());
    Enforcement e = enforcement_for(*loaded, dir);
    fs::remove(link);
    EXPECT_THAT(e.masked_paths, ElementsAre(p(".env")));
}

TEST_F(EnforcementTest, ApplyKeepsRequiredPathsRequired) {
    SandboxConfig options;
    options.masked_paths = {"/x/.env"};
    Enforcement defaults{
        .masked_paths = {}, .read_only_paths = {"/x/.git/hooks"}, .notes = {}, .from_rules = false};
    apply_enforcement(defaults, options);
    EXPECT_FALSE(options.path_rules_best_effort) << "--mask paths are never best effort";
    EXPECT_THAT(options.read_only_paths, ElementsAre("/x/.git/hooks"));

    SandboxConfig fresh;
    Enforcement rules{
        .masked_paths = {"/x/.env"}, .read_only_paths = {}, .notes = {}, .from_rules = true};
    apply_enforcement(rules, fresh);
    EXPECT_FALSE(fresh.path_rules_best_effort);
    EXPECT_THAT(fresh.masked_paths, UnorderedElementsAre("/x/.env"));
}

TEST_F(EnforcementTest, TheListsMakeAValidRunSpec) {
    file(".env");
    file("secrets/a.key");
    dir(".git/hooks");
    file(".git/config");
    Enforcement e = enforcement_for(load({"Read(.env)", "Read(./secrets/**)"}), ws());
    CallerContext caller;
    caller.cwd = ws_;
    caller.euid = 1234;
    caller.egid = 1234;
    SandboxConfig options;
    options.workspace = ws();
    auto image = images::load_image("host");
    ASSERT_TRUE(image) << image.error().message;
    options.image = std::move(image).value();
    options.process = CommandProcess{.argv = {"true"}};
    apply_enforcement(e, options);
    auto spec = make_sandbox_spec(options, caller, sandbox::Isolation::kFull);
    ASSERT_TRUE(spec) << spec.error().message;
    EXPECT_THAT(spec->masked_paths, ElementsAre(p(".env"), p("secrets")));
    EXPECT_THAT(spec->read_only_paths, ElementsAre(p(".git/config"), p(".git/hooks")));
    EXPECT_FALSE(spec->path_rules_best_effort) << "deny rules matched: required";
}

}  // namespace
}  // namespace stockade::runner
