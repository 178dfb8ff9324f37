// Isolation is resolved in one place, from real probes: on a host where user namespaces are
// unavailable, `stockade run`, the session worker of `stockade serve` and `stockade doctor` all
// end at the landlock level and give the same reason. The host's sysctls are never touched:
// every stockade here runs under a seccomp filter of the test's own (tests/testing/refusals.h)
// that fails clone(CLONE_NEWUSER) and unshare(CLONE_NEWUSER) with EPERM, as a container
// runtime's default profile does.
#include <filesystem>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/testing/sandbox_harness.h"
#include "tests/testing/serve_client.h"

namespace stockade::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr const char* kWhyNot =
    "namespaces isolation is not available: user namespace: clone(CLONE_NEWUSER): EPERM";

class IsolationFallbackTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::string report;
        (void)auto_isolation_level(&report);
        if (report.find("ok   landlock") == std::string::npos) {
            GTEST_SKIP() << "no Landlock on this host, so there is no level to fall back to:\n"
                         << report;
        }
    }

    static RunConfig without_userns() {
        RunConfig config;
        config.deny_user_namespaces = true;
        return config;
    }

    TempDir workspace_{"stockade-fallback-ws"};
    TempDir outside_{"stockade-fallback-outside"};  // never mounted: the sandbox cannot write it
    TempDir state_{"stockade-fallback-state"};
};

// The reason `stockade run` printed for falling back: "namespaces isolation is not available:
// ... Fix: ...".
std::string run_shortfall(const std::string& err) {
    const std::string head = "stockade run: warning: ";
    const std::string tail = "; --isolation auto falls back to \"landlock\"";
    const size_t start = err.find(head);
    const size_t end = err.find(tail);
    if (start == std::string::npos || end == std::string::npos || end < start) {
        return "";
    }
    return err.substr(start + head.size(), end - start - head.size());
}

// `stockade run -- /bin/echo hi` in `workspace` under `config` falls back to landlock: it
// runs, and the reason its warning gives starts with `why`.
void expect_echo_falls_back(RunConfig config, const std::string& workspace,
                            const std::string& why) {
    config.cwd = workspace;
    RunResult run =
        run_stockade({"run", "--workspace", workspace, "--", "/bin/echo", "hi"}, config);
    ASSERT_EQ(run.exit_code, 0) << run.describe();
    EXPECT_EQ(run.out, "hi\n");
    EXPECT_THAT(run_shortfall(run.err), StartsWith(why)) << run.describe();
}

TEST_F(IsolationFallbackTest, DoctorSaysAutoChoosesLandlockAndWhy) {
    RunResult r = run_stockade({"doctor"}, without_userns());
    ASSERT_FALSE(r.timed_out) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("no   user namespace")) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("clone(CLONE_NEWUSER): EPERM (Operation not permitted) — denied "
                                 "by a seccomp filter"))
        << r.describe();
    EXPECT_THAT(r.out, HasSubstr("isolation: --isolation auto chooses \"landlock\""))
        << r.describe();
    EXPECT_THAT(r.out, HasSubstr(std::string("isolation: not stronger because ") + kWhyNot))
        << r.describe();
    EXPECT_EQ(r.exit_code, 1) << "doctor exits 1 below namespace isolation\n" << r.describe();
}

TEST_F(IsolationFallbackTest, RunFallsBackToLandlockAndSaysWhy) {
    const std::string escape = outside_.sub("written-from-the-sandbox");
    RunConfig config = without_userns();
    config.cwd = workspace_.path();
    RunResult r = run_stockade({"run", "--workspace", workspace_.path(), "--", "/bin/sh", "-c",
                                "echo hi; readlink /proc/self/ns/user; echo x > " + escape +
                                    " && echo ESCAPED || echo refused"},
                               config);
    ASSERT_EQ(r.exit_code, 0) << "auto falls back instead of exiting 77\n" << r.describe();
    const std::vector<std::string> lines = split_lines(r.out);
    ASSERT_GE(lines.size(), 2U) << r.describe();
    EXPECT_EQ(lines[0], "hi");
    EXPECT_EQ(lines[1], namespace_of(0, "user")) << "landlock: no user namespace of its own";
    EXPECT_THAT(r.out, Not(HasSubstr("ESCAPED"))) << "Landlock confines writes\n" << r.describe();
    EXPECT_THAT(r.out, HasSubstr("refused")) << r.describe();
    EXPECT_FALSE(read_file_text(escape).has_value());
    EXPECT_THAT(run_shortfall(r.err), StartsWith(kWhyNot)) << r.describe();
    EXPECT_THAT(run_shortfall(r.err), HasSubstr("Fix: ")) << r.describe();
}

// `run` launches before it probes (the namespaces are tried by the launch itself); a level
// asked for by name that the host cannot give still ends in exit 77 with the probe's reason,
// and the command never runs.
TEST_F(IsolationFallbackTest, AnExplicitLevelTheHostCannotGiveExitsUnavailableWithWhy) {
    const std::string marker = workspace_.sub("ran");  // writable at every level
    RunResult r = run_stockade({"run", "--isolation", "namespaces", "--workspace",
                                workspace_.path(), "--", "/bin/sh", "-c", "echo x > " + marker},
                               without_userns());
    EXPECT_EQ(r.exit_code, 77) << r.describe();
    EXPECT_THAT(r.err, HasSubstr(std::string("stockade run: ") + kWhyNot)) << r.describe();
    EXPECT_THAT(r.err, Not(HasSubstr("warning"))) << r.describe();
    EXPECT_FALSE(read_file_text(marker).has_value()) << "the command must not run";
}

TEST_F(IsolationFallbackTest, ServeFallsBackExactlyAsRunDoes) {
    // run's verdict on this host, under the same filter.
    RunConfig config = without_userns();
    config.cwd = workspace_.path();
    RunResult run =
        run_stockade({"run", "--workspace", workspace_.path(), "--", "/bin/true"}, config);
    ASSERT_EQ(run.exit_code, 0) << run.describe();
    const std::string run_reason = run_shortfall(run.err);
    ASSERT_THAT(run_reason, StartsWith(kWhyNot)) << run.describe();

    const std::string log = outside_.sub("serve.log");
    const std::string escape = outside_.sub("written-from-the-session");
    {
        ServeProcess serve(workspace_.path(), state_.path(), {"--ask-fallback", "allow"},
                           ServeLaunch{.stderr_path = log, .deny_user_namespaces = true});
        auto init = serve.initialize();
        ASSERT_TRUE(init.contains("result"))
            << "serve starts instead of exiting 77: " << init.dump() << "\n"
            << read_file_text(log).value_or("");
        auto hi = serve.call("bash", {{"command", "echo hi"}});
        EXPECT_FALSE(hi["result"].value("isError", true)) << hi.dump();
        EXPECT_THAT(text_of(hi), HasSubstr("hi"));
        auto ns = serve.call("bash", {{"command", "readlink /proc/self/ns/user"}});
        EXPECT_THAT(text_of(ns), HasSubstr(namespace_of(0, "user")))
            << "landlock: no user namespace of its own";
        auto write = serve.call(
            "bash", {{"command", "echo x > " + escape + " && echo ESCAPED || echo refused"}});
        EXPECT_THAT(text_of(write), Not(HasSubstr("ESCAPED"))) << write.dump();
        EXPECT_FALSE(read_file_text(escape).has_value());
    }
    // The worker's level and reason, as the event log records them: the same as run's.
    std::vector<nlohmann::json> started;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(state_.path(), ec);
         it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        if (ec || it->path().filename() != "events.jsonl") {
            continue;
        }
        for (const std::string& line : split_lines(read_file_text(it->path()).value_or(""))) {
            auto event = nlohmann::json::parse(line, nullptr, false);
            if (!event.is_discarded() && event.value("type", "") == "WorkerStarted") {
                started.push_back(event);
            }
        }
    }
    ASSERT_EQ(started.size(), 1U);
    EXPECT_EQ(started[0].value("isolation", ""), "landlock") << started[0].dump();
    EXPECT_EQ(started[0].value("isolation_shortfall", ""), run_reason) << started[0].dump();
    EXPECT_THAT(read_file_text(log).value_or(""),
                HasSubstr("isolation auto falls back to \"landlock\": " + run_reason));
}

// Every setup step a container can refuse is probed, so `auto` falls to the next level with the
// reason, instead of failing at launch. A /proc path masked as Docker masks them: the kernel
// refuses a new /proc in a user namespace (mount_too_revealing).
TEST_F(IsolationFallbackTest, AMaskedProcMakesAutoFallBackWithTheReason) {
    if (!running_as_root()) {
        GTEST_SKIP() << "masking a /proc path needs a mount namespace of the test's own (root)";
    }
    RunConfig config;
    config.mask_proc_path = "/proc/timer_list";
    if (!read_file_text(config.mask_proc_path).has_value()) {
        GTEST_SKIP() << config.mask_proc_path << " does not exist here";
    }
    RunResult doctor = run_stockade({"doctor"}, config);
    EXPECT_THAT(doctor.out, HasSubstr("no   new /proc")) << doctor.describe();
    EXPECT_THAT(doctor.out, HasSubstr("mount /proc: EPERM")) << doctor.describe();
    EXPECT_THAT(doctor.out, HasSubstr("isolation: --isolation auto chooses \"landlock\""))
        << doctor.describe();
    EXPECT_THAT(doctor.out,
                HasSubstr("isolation: not stronger because namespaces isolation is not available: "
                          "new /proc: "))
        << doctor.describe();

    expect_echo_falls_back(config, workspace_.path(),
                           "namespaces isolation is not available: new /proc: ");
}

// sethostname refused (a seccomp profile that denies it): the uts namespace is of no use, so
// `auto` takes landlock and says why.
TEST_F(IsolationFallbackTest, ARefusedSethostnameMakesAutoFallBackWithTheReason) {
    RunConfig config;
    config.deny_sethostname = true;
    RunResult doctor = run_stockade({"doctor"}, config);
    EXPECT_THAT(doctor.out, HasSubstr("no   ipc/uts/cgroup namespaces")) << doctor.describe();
    EXPECT_THAT(doctor.out, HasSubstr("isolation: --isolation auto chooses \"landlock\""))
        << doctor.describe();

    expect_echo_falls_back(config, workspace_.path(),
                           "namespaces isolation is not available: ipc/uts/cgroup namespaces: in "
                           "a new ipc/uts/cgroup namespace: EPERM");
}

}  // namespace
}  // namespace stockade::testing
