#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "policy/bash_analysis.h"

namespace stockade::policy {
namespace {

struct WarningCase {
    const char* command;
    std::vector<std::string> warnings;
};

std::ostream& operator<<(std::ostream& os, const WarningCase& c) {
    return os << c.command;
}

const std::string kRm = "may force-remove files recursively (rm -rf)";
const std::string kPush = "may overwrite the remote branch's history (git push --force)";
const std::string kReset = "may discard uncommitted changes (git reset --hard)";
const std::string kClean = "may delete untracked files (git clean -f)";
const std::string kDropTable = "may destroy a database table (DROP TABLE)";
const std::string kDropDatabase = "may destroy a database (DROP DATABASE)";
const std::string kTruncate = "may delete every row of a table, or a file's contents (TRUNCATE)";
const std::string kKubectl = "may delete Kubernetes resources (kubectl delete)";
const std::string kTerraform = "may destroy infrastructure (terraform destroy)";
const std::string kDd = "may overwrite a device (dd of=/dev/...)";
const std::string kMkfs = "may format a filesystem (mkfs)";
const std::string kChmod = "may make files world-writable recursively (chmod -R 777)";
const std::string kForkBomb = "may exhaust the process table (a fork bomb)";

class DestructiveWarningsTest : public ::testing::TestWithParam<WarningCase> {};

TEST_P(DestructiveWarningsTest, FlagsKnownPatterns) {
    EXPECT_EQ(destructive_warnings(GetParam().command), GetParam().warnings);
}

INSTANTIATE_TEST_SUITE_P(
    Patterns, DestructiveWarningsTest,
    ::testing::Values(
        WarningCase{"rm -rf build", {kRm}}, WarningCase{"rm -fr build", {kRm}},
        WarningCase{"rm -r -f build", {kRm}}, WarningCase{"rm -R --force build", {kRm}},
        WarningCase{"rm --recursive --force x", {kRm}}, WarningCase{"rm -r build", {}},
        WarningCase{"rm -f a.o", {}}, WarningCase{"sudo rm -rf /", {kRm}},
        WarningCase{"bash -c 'rm -rf /tmp/x'", {kRm}},
        WarningCase{"find . -exec rm -rf {} +", {kRm}},
        WarningCase{"git push --force origin main", {kPush}}, WarningCase{"git push -f", {kPush}},
        WarningCase{"git push --force-with-lease", {kPush}},
        WarningCase{"git push --force-with-lease=main:abc origin", {kPush}},
        WarningCase{"git push origin +main", {kPush}}, WarningCase{"git push origin main", {}},
        WarningCase{"git reset --hard HEAD~1", {kReset}},
        WarningCase{"git reset --soft HEAD~1", {}}, WarningCase{"git clean -fdx", {kClean}},
        WarningCase{"git clean -n", {}}, WarningCase{"git -C repo clean --force", {kClean}},
        WarningCase{"psql -c 'DROP TABLE users'", {kDropTable}},
        WarningCase{"echo \"drop   database prod;\" | mysql", {kDropDatabase}},
        WarningCase{"sqlite3 db 'truncate orders'", {kTruncate}},
        WarningCase{"mysql < schema.sql  # drop table if needed", {kDropTable}},
        WarningCase{"echo dropped tables", {}},
        WarningCase{"kubectl -n prod delete pod web-1", {kKubectl}},
        WarningCase{"kubectl get pods", {}},
        WarningCase{"terraform destroy -auto-approve", {kTerraform}},
        WarningCase{"terraform apply -destroy", {kTerraform}}, WarningCase{"terraform plan", {}},
        WarningCase{"dd if=/dev/zero of=/dev/sda bs=1M", {kDd}},
        WarningCase{"dd if=a.img of=/dev/null", {}}, WarningCase{"mkfs.ext4 /dev/sdb1", {kMkfs}},
        WarningCase{"mkfs -t ext4 x", {kMkfs}}, WarningCase{"chmod -R 777 /", {kChmod}},
        WarningCase{"chmod 777 file", {}}, WarningCase{"chmod -R 755 dir", {}},
        WarningCase{":(){ :|:& };:", {kForkBomb}},
        WarningCase{"bomb() { bomb | bomb & }; bomb", {kForkBomb}},
        WarningCase{"rm -rf x && git push -f && git reset --hard", {kRm, kPush, kReset}},
        WarningCase{"rm -rf / 'unterminated", {kRm}},  // opaque: a rough split still sees it
        WarningCase{"ls -la && npm test", {}}));

TEST(DestructiveWarningsTest, ReusesAnAnalysis) {
    const std::string command = "timeout 5 rm -rf dist";
    EXPECT_EQ(destructive_warnings(analyse_bash(command), command), std::vector<std::string>{kRm});
}

}  // namespace
}  // namespace stockade::policy
