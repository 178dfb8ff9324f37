#include "runner/host/tenant_roots.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade::runner {
namespace {

namespace fs = std::filesystem;
using testing::HasErrc;
using ::testing::HasSubstr;
using testing::IsOk;
using ::testing::Not;

TEST(TenantRootsTest, RootsMustLieApartFromEachOtherAndFromTheState) {
    const std::vector<TenantRoot> apart = {{"acme", "/srv/acme"}, {"globex", "/srv/globex"}};
    EXPECT_THAT(check_roots_apart(apart, {"/var/lib/stockade"}), IsOk());
    EXPECT_THAT(check_roots_apart({{"acme", "/srv/a"}, {"ab", "/srv/ab"}}, {}), IsOk())
        << "a shared prefix is not an overlap";
    struct Case {
        std::vector<TenantRoot> roots;
        std::string state;
        std::string says;
    };
    for (const Case& c : std::vector<Case>{
             {{{"acme", "/srv"}, {"globex", "/srv/globex"}}, "/var/st", "contains tenant globex"},
             {{{"acme", "/srv/a/in"}, {"globex", "/srv/a"}}, "/var/st", "lies inside tenant"},
             {{{"acme", "/srv/a"}, {"globex", "/srv/a"}}, "/var/st", "is tenant globex"},
             {{{"acme", "/var/st/tenants/acme"}}, "/var/st", "lies inside the state directory"},
             {{{"acme", "/var"}}, "/var/st", "contains the state directory"},
         }) {
        auto checked = check_roots_apart(c.roots, {c.state});
        ASSERT_THAT(checked, HasErrc(Errc::kInvalidArgument)) << c.says;
        EXPECT_THAT(checked.error().message, HasSubstr(c.says));
    }
}

TEST(TenantRootsTest, ASessionWorkspaceMayNotReachAnotherTenantOrTheState) {
    const std::vector<TenantRoot> roots = {{"acme", "/srv/acme"}, {"globex", "/srv/globex"}};
    const std::vector<std::string> state = {"/var/st"};
    EXPECT_THAT(check_workspace_apart("/srv/acme/api", "acme", roots, state), IsOk());
    EXPECT_THAT(check_workspace_apart("/srv/acme", "acme", roots, state), IsOk());
    for (const std::string elsewhere :
         {"/srv/globex", "/srv/globex/x", "/srv", "/", "/var/st/tenants/globex", "/var"}) {
        auto checked = check_workspace_apart(elsewhere, "acme", roots, state);
        ASSERT_THAT(checked, HasErrc(Errc::kInvalidArgument)) << elsewhere;
        EXPECT_THAT(checked.error().message, HasSubstr("Stockade-Workspace"));
        EXPECT_THAT(checked.error().message, Not(HasSubstr(elsewhere == "/" ? "//" : elsewhere)))
            << "the client is never told another tenant's host paths";
    }
}

TEST(TenantRootsTest, AsRootATenantsFilesBelongToItsOwnUids) {
    Tenant acme;
    acme.name = "acme";
    acme.host_uid_range = parse_host_id_range("300000-365535").value();
    EXPECT_EQ(owner_problem(acme, 300000, "/srv/acme"), "");
    EXPECT_EQ(owner_problem(acme, 365535, "/srv/acme"), "");
    for (const uid_t owner : {uid_t{0}, uid_t{1000}, uid_t{299999}, uid_t{365536}}) {
        const std::string why = owner_problem(acme, owner, "/srv/acme");
        EXPECT_THAT(why, HasSubstr("/srv/acme is owned by uid " + std::to_string(owner)));
        EXPECT_THAT(why, HasSubstr("chown 300000:300000 /srv/acme")) << "and the fix";
    }
    EXPECT_THAT(owner_problem(acme, 0, "/srv/acme"), HasSubstr("(root)"));
    Tenant plain;  // no range of its own: the default one
    plain.name = "plain";
    EXPECT_EQ(owner_problem(plain, 1879048193, "/srv/p"), "");
    EXPECT_THAT(owner_problem(plain, 0, "/srv/p"), HasSubstr("1879048193-1879113728"));
}

class SessionWorkspaceTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/stockade-tenant-roots-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = fs::canonical(tmpl).string();
        fs::create_directories(dir_ + "/acme");
        fs::create_directories(dir_ + "/globex/project");
        root_ = HostDir::open(dir_ + "/acme").value();
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::string dir_;
    HostDir root_;
};

TEST_F(SessionWorkspaceTest, NoNameIsTheRootAndANameIsCreatedBeneathIt) {
    auto root = session_workspace(root_, "", DirCreation{});
    ASSERT_THAT(root, IsOk());
    EXPECT_EQ(root->fd(), root_.fd()) << "the root itself";
    auto named = session_workspace(root_, "projects/api", DirCreation{.mode = 0750});
    ASSERT_THAT(named, IsOk());
    EXPECT_EQ(named->path(), dir_ + "/acme/projects/api") << "the resolved path, for the logs";
    EXPECT_TRUE(fs::is_directory(dir_ + "/acme/projects/api"));
}

TEST_F(SessionWorkspaceTest, ALinkPlantedInTheRootLeadsNowhere) {
    fs::create_symlink(dir_ + "/globex", dir_ + "/acme/esc");
    fs::create_symlink("/", dir_ + "/acme/slash");
    for (const std::string name : {"esc", "esc/project", "esc/new", "slash/tmp", "slash/x"}) {
        auto ws = session_workspace(root_, name, DirCreation{});
        ASSERT_THAT(ws, HasErrc(Errc::kInvalidArgument)) << name;
        EXPECT_THAT(ws.error().message, HasSubstr("Stockade-Workspace \"" + name + "\""));
        EXPECT_THAT(ws.error().message, HasSubstr("symbolic link"));
        EXPECT_THAT(ws.error().message, Not(HasSubstr(dir_))) << "no host path for the client";
    }
    EXPECT_FALSE(fs::exists(dir_ + "/globex/new"));
    EXPECT_FALSE(fs::exists("/x"));
    for (const std::string bad : {"../globex", "/etc", "a//b", "."}) {
        EXPECT_THAT(session_workspace(root_, bad, DirCreation{}), HasErrc(Errc::kInvalidArgument))
            << bad;
    }
}

}  // namespace
}  // namespace stockade::runner
