// `stockade image build` through the real binary, as root and unprivileged: steps run in a
// sandbox over an image and become one more layer of a new image, which `run --image` then
// sees; a failing step stores nothing; and (as root, where Debian's archive answers) a Debian
// root built twice by mmdebstrap has one digest.
#include <unistd.h>

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/busybox_image.h"
#include "tests/testing/sandbox_harness.h"

namespace stockade::testing {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

bool has_namespaces() {
    const std::string level = auto_isolation_level();
    return level == "full" || level == "namespaces";
}

class ImageBuildTest : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_FALSE(stockade_path().empty()) << "STOCKADE_BIN is not set: run through ctest";
        workspace_ = root_.make_dir("workspace");
        store_ = root_.sub("store");
    }

    RunResult stockade(const std::vector<std::string>& args) {
        RunConfig config;
        config.env.push_back("STOCKADE_IMAGE_STORE=" + store_);
        config.cwd = workspace_;
        return run_stockade(args, config);
    }

    // Imports busybox-static's root as busybox:test; false when it is not installed.
    bool import_busybox() {
        const std::string rootfs = write_busybox_rootfs(root_);
        if (rootfs.empty()) {
            return false;
        }
        const RunResult imported = stockade({"image", "import", rootfs, "--name", "busybox:test"});
        EXPECT_EQ(imported.exit_code, 0) << imported.describe();
        return true;
    }

    RunResult run_in(const std::string& image, const std::string& script) {
        return stockade(
            {"run", "--workspace", workspace_, "--image", image, "--", "/bin/sh", "-c", script});
    }

    TempDir root_;
    std::string workspace_;
    std::string store_;
};

#define BUSYBOX_IMAGE_OR_SKIP()                                                           \
    if (!has_namespaces()) {                                                              \
        GTEST_SKIP() << "no namespace isolation for this caller here: an image needs it"; \
    }                                                                                     \
    if (!import_busybox()) {                                                              \
        GTEST_SKIP() << kBusybox << " is missing: install Debian's busybox-static";       \
    }

TEST_F(ImageBuildTest, StepsOverAnImageBecomeOneMoreLayer) {
    BUSYBOX_IMAGE_OR_SKIP();
    const RunResult built =
        stockade({"image", "build", "built:1", "--from", "busybox:test", "--json", "--run",
                  "echo built > /usr/share/built && rm /usr/share/marker", "--run",
                  "id -u > /usr/share/uid"});
    ASSERT_EQ(built.exit_code, 0) << built.describe();
    EXPECT_THAT(built.err, HasSubstr("step 1/2: echo built"));
    const json out = json::parse(built.out);
    EXPECT_EQ(out["layers"], 2);
    EXPECT_EQ(out["steps"], 2);
    EXPECT_EQ(out["changes"]["removed"], 1);
    EXPECT_GE(out["changes"]["added"].get<int>(), 2);

    const RunResult on_built =
        run_in("built:1", "cat /usr/share/built /usr/share/uid; ls /usr/share");
    ASSERT_EQ(on_built.exit_code, 0) << on_built.describe();
    EXPECT_THAT(on_built.out, HasSubstr("built\n0\n"));  // the steps ran as the sandbox's root
    EXPECT_THAT(on_built.out, Not(HasSubstr("marker")));
    // The base is as it was: the steps wrote a copy.
    const RunResult on_base = run_in("busybox:test", "cat /usr/share/marker; ls /usr/share");
    ASSERT_EQ(on_base.exit_code, 0) << on_base.describe();
    EXPECT_THAT(on_base.out, HasSubstr("from the image"));
    EXPECT_THAT(on_base.out, Not(HasSubstr("built")));
    // The same steps over the same base give the same image.
    const RunResult again =
        stockade({"image", "build", "built:2", "--from", "busybox:test", "--json", "--run",
                  "echo built > /usr/share/built && rm /usr/share/marker", "--run",
                  "id -u > /usr/share/uid"});
    ASSERT_EQ(again.exit_code, 0) << again.describe();
    EXPECT_EQ(json::parse(again.out)["digest"], out["digest"]);
}

TEST_F(ImageBuildTest, AFailingStepStoresNothing) {
    BUSYBOX_IMAGE_OR_SKIP();
    const RunResult failed = stockade({"image", "build", "broken:1", "--from", "busybox:test",
                                       "--run", "echo partial > /usr/share/partial; exit 3"});
    EXPECT_EQ(failed.exit_code, 1) << failed.describe();
    EXPECT_THAT(failed.err, HasSubstr("step 1 exited with status 3: nothing was stored"));
    const RunResult listed = stockade({"image", "list", "--json"});
    ASSERT_EQ(listed.exit_code, 0) << listed.describe();
    EXPECT_THAT(listed.out, Not(HasSubstr("broken:1")));
    EXPECT_TRUE(std::filesystem::is_empty(store_ + "/tmp"));
}

TEST_F(ImageBuildTest, StepsSeeTheImageNotTheHostAndGoThroughTheProxy) {
    BUSYBOX_IMAGE_OR_SKIP();
    // The step's /usr is the image's (the host's /usr/lib is not there); its network is the
    // allowlist proxy's, which it finds in its environment.
    const RunResult built =
        stockade({"image", "build", "probe:1", "--from", "busybox:test", "--run",
                  "ls /usr > /usr/share/usr-list; echo \"proxy=$HTTPS_PROXY\" > /usr/share/env"});
    ASSERT_EQ(built.exit_code, 0) << built.describe();
    const RunResult seen = run_in("probe:1", "cat /usr/share/usr-list /usr/share/env");
    ASSERT_EQ(seen.exit_code, 0) << seen.describe();
    EXPECT_THAT(seen.out, HasSubstr("share\n"));
    EXPECT_THAT(seen.out, Not(HasSubstr("lib")));
    EXPECT_THAT(seen.out, HasSubstr("proxy=http://"));
}

TEST_F(ImageBuildTest, BadRecipesAreRefusedWithTheFix) {
    const std::string recipe =
        root_.write_file("r.toml", "suite = \"bookworm\"\npackages = [\"--hook=x\"]\n");
    const RunResult bad = stockade({"image", "build", "x:1", "--recipe", recipe});
    EXPECT_EQ(bad.exit_code, 2) << bad.describe();
    EXPECT_THAT(bad.err, HasSubstr("not a Debian package name"));
    const RunResult no_base = stockade({"image", "build", "x:1"});
    EXPECT_EQ(no_base.exit_code, 2) << no_base.describe();
    EXPECT_THAT(no_base.err, HasSubstr("give a base"));
    const RunResult missing = stockade({"image", "build", "x:1", "--from", "nothing:here"});
    EXPECT_EQ(missing.exit_code, 66) << missing.describe();
}

// Needs Debian's archive (CI reaches it) and root (mmdebstrap's unshare mode would need
// subordinate ids for the test user).
TEST_F(ImageBuildTest, ADebianRootBuiltTwiceHasOneDigest) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "as root only: mmdebstrap builds unprivileged in its unshare mode, which "
                        "needs /etc/subuid ranges the test user does not have";
    }
    if (::access("/usr/bin/mmdebstrap", X_OK) != 0) {
        GTEST_SKIP() << "mmdebstrap is missing: install Debian's mmdebstrap";
    }
    const std::vector<std::string> build = {"--suite", "bookworm", "--variant", "essential",
                                            "--json"};
    auto make = [&](const std::string& name) {
        std::vector<std::string> args = {"image", "build", name};
        args.insert(args.end(), build.begin(), build.end());
        return stockade(args);
    };
    const RunResult first = make("deb:one");
    if (first.exit_code != 0 &&
        (first.err.find("Temporary failure resolving") != std::string::npos ||
         first.err.find("Could not resolve") != std::string::npos ||
         first.err.find("Failed to fetch") != std::string::npos)) {
        GTEST_SKIP() << "Debian's archive is not reachable from here: " << first.err;
    }
    ASSERT_EQ(first.exit_code, 0) << first.describe();
    const RunResult second = make("deb:two");
    ASSERT_EQ(second.exit_code, 0) << second.describe();
    EXPECT_EQ(json::parse(first.out)["digest"], json::parse(second.out)["digest"]);
    if (has_namespaces()) {
        const RunResult run = run_in("deb:one", "cat /etc/debian_version; ls /etc/hostname");
        EXPECT_THAT(run.out, HasSubstr("12."));
    }
}

}  // namespace
}  // namespace stockade::testing
