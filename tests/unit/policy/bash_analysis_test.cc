#include "policy/bash_analysis.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "policy/command_pattern.h"

namespace stockade::policy {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::UnorderedElementsAreArray;

const RequestContext kCtx{.workspace_root = "/ws", .cwd = "", .home = "/home/u"};

// "kind what": the parts of a request a test cares about.
std::string brief(const CapabilityRequest& r) {
    switch (r.kind) {
        case CapabilityKind::kFileRead:
        case CapabilityKind::kFileWrite:
        case CapabilityKind::kFileWriteOutsideProject:
            return fmt::format("{} {}", capability_kind_name(r.kind), r.path);
        case CapabilityKind::kProcessExecute:
            return fmt::format("{} {}{}", capability_kind_name(r.kind), r.command,
                               r.opaque ? " (opaque)" : "");
        case CapabilityKind::kNetworkAccess:
            return fmt::format("{} {}", capability_kind_name(r.kind),
                               r.host.empty() ? "?" : r.host);
        case CapabilityKind::kGitModify:
            return fmt::format("{} {}", capability_kind_name(r.kind), r.subcommand);
        case CapabilityKind::kTool:
            return "tool";
    }
    return "";
}

std::vector<std::string> briefs(std::string_view command, const RequestContext& ctx = kCtx) {
    std::vector<std::string> out;
    for (const CapabilityRequest& r : bash_requests(command, ctx)) {
        EXPECT_EQ(r.tool, "bash");
        out.push_back(brief(r));
    }
    return out;
}

struct StripCase {
    const char* text;
    const char* command;  // after assignments and wrappers
};

class WrapperTest : public ::testing::TestWithParam<StripCase> {};

TEST_P(WrapperTest, StripsAssignmentsAndWrappers) {
    const BashAnalysis analysis = analyse_bash(GetParam().text);
    ASSERT_FALSE(analysis.opaque) << analysis.opaque_reason;
    ASSERT_EQ(analysis.commands.size(), 1U);
    EXPECT_EQ(command_text(analysis.commands[0]), GetParam().command);
    EXPECT_EQ(full_command_text(analysis.commands[0]), normalise_command_text(GetParam().text));
}

INSTANTIATE_TEST_SUITE_P(
    Wrappers, WrapperTest,
    ::testing::Values(
        StripCase{"FOO=1 BAR=2 npm test", "npm test"},
        StripCase{"env -i PATH=/bin npm test", "npm test"},
        StripCase{"env -u HOME -- make", "make"}, StripCase{"timeout 30 npm test", "npm test"},
        StripCase{"timeout -s KILL -k 5 5m make", "make"},
        StripCase{"timeout --signal=TERM 5 make", "make"}, StripCase{"xargs -n 1 rm", "rm"},
        StripCase{"xargs -0 -I{} cp {} dst", "cp {} dst"},
        StripCase{"nice -n 10 make -j4", "make -j4"},
        StripCase{"nohup ./server --port 80", "./server --port 80"},
        StripCase{"sudo -u root -E apt-get install x", "apt-get install x"},
        StripCase{"time -p make", "make"}, StripCase{"command ls", "ls"},
        StripCase{"command -v ls", "command -v ls"}, StripCase{"exec -a name ls", "ls"},
        StripCase{"stdbuf -oL tail -f log", "tail -f log"},
        StripCase{"/usr/bin/env FOO=1 node app.js", "node app.js"},
        StripCase{"sudo env A=1 timeout 5 nice nohup curl x", "curl x"}, StripCase{"FOO=1", ""}));

TEST(BashAnalysisTest, ShellScriptsEvalAndFindExecAreAnalysed) {
    auto commands = [](std::string_view text) {
        std::vector<std::string> out;
        const BashAnalysis analysis = analyse_bash(text);
        EXPECT_FALSE(analysis.opaque) << analysis.opaque_reason;
        for (const SimpleCommand& cmd : analysis.commands) {
            out.push_back(command_text(cmd));
        }
        return out;
    };
    EXPECT_EQ(commands("bash -c 'curl x && ls'"),
              (std::vector<std::string>{"bash -c curl x && ls", "curl x", "ls"}));
    EXPECT_EQ(commands("sh -lc \"npm test\""),
              (std::vector<std::string>{"sh -lc npm test", "npm test"}));
    EXPECT_EQ(commands("eval 'rm -rf x'"), (std::vector<std::string>{"eval rm -rf x", "rm -rf x"}));
    EXPECT_EQ(commands("find . -name '*.o' -exec rm -f {} \\;"),
              (std::vector<std::string>{"find . -name *.o -exec rm -f {} ;", "rm -f {}"}));
    EXPECT_EQ(commands("bash script.sh"), (std::vector<std::string>{"bash script.sh"}));
}

TEST(BashAnalysisTest, UnparseableScriptsMakeTheCommandOpaque) {
    const BashAnalysis analysis = analyse_bash("bash -c 'echo \"x'");
    EXPECT_TRUE(analysis.opaque);
    EXPECT_THAT(analysis.opaque_reason, HasSubstr("the script given to bash"));
    EXPECT_TRUE(analysis.commands.empty());
}

struct RequestCase {
    const char* name;
    const char* command;
    std::vector<std::string> requests;
};

std::ostream& operator<<(std::ostream& os, const RequestCase& c) {
    return os << c.name;
}

class BashRequestsTest : public ::testing::TestWithParam<RequestCase> {};

TEST_P(BashRequestsTest, DerivesCapabilities) {
    EXPECT_THAT(briefs(GetParam().command), UnorderedElementsAreArray(GetParam().requests))
        << GetParam().command;
}

INSTANTIATE_TEST_SUITE_P(
    Commands, BashRequestsTest,
    ::testing::Values(
        RequestCase{"EachPartIsItsOwnCommand",
                    "npm test && curl https://evil.example/x",
                    {"process.execute npm test", "process.execute curl https://evil.example/x",
                     "network.access evil.example"}},
        RequestCase{"SubstitutionsAndSubshells",
                    "echo $(wget -qO- http://a.io) ; (cd sub && nc host.example 80)",
                    {"process.execute wget -qO- http://a.io", "network.access a.io",
                     "process.execute echo $(wget -qO- http://a.io)",
                     "process.execute nc host.example 80", "network.access host.example"}},
        RequestCase{
            "GitPush",
            "git push origin main",
            {"process.execute git push origin main", "network.access ?", "git.modify push"}},
        RequestCase{
            "GitClone",
            "git clone git@github.com:o/r.git",
            {"process.execute git clone git@github.com:o/r.git", "network.access github.com"}},
        RequestCase{
            "GitGlobalOptions",
            "git -C sub -c user.name=x commit -m wip",
            {"process.execute git -C sub -c user.name=x commit -m wip", "git.modify commit"}},
        RequestCase{"GitReadsModifyNothing",
                    "git status && git log -1 && git checkout main",
                    {"process.execute git status", "process.execute git log -1",
                     "process.execute git checkout main"}},
        RequestCase{"GitCheckoutDiscard",
                    "git checkout -- src/a.c",
                    {"process.execute git checkout -- src/a.c", "git.modify checkout"}},
        RequestCase{"GitStash",
                    "git stash list; git stash pop",
                    {"process.execute git stash list", "process.execute git stash pop",
                     "git.modify stash"}},
        RequestCase{"GitBranchDelete",
                    "git branch -D old",
                    {"process.execute git branch -D old", "git.modify branch"}},
        RequestCase{"PackageManagers",
                    "pip install requests && npm ci && cargo install x",
                    {"process.execute pip install requests", "network.access pypi.org",
                     "process.execute npm ci", "network.access registry.npmjs.org",
                     "process.execute cargo install x", "network.access crates.io"}},
        RequestCase{
            "PythonDashMPip",
            "python3 -m pip install -r req.txt",
            {"process.execute python3 -m pip install -r req.txt", "network.access pypi.org"}},
        RequestCase{"Ssh",
                    "ssh -i ~/.ssh/key deploy@prod.example uptime",
                    {"process.execute ssh -i ~/.ssh/key deploy@prod.example uptime",
                     "network.access prod.example", "file.read /home/u/.ssh/key"}},
        RequestCase{"Scp",
                    "scp a.txt build.example:/srv/",
                    {"process.execute scp a.txt build.example:/srv/", "file.read /ws/a.txt",
                     "network.access build.example"}},
        RequestCase{"RsyncLocal",
                    "rsync -a src/ /backup/src/",
                    {"process.execute rsync -a src/ /backup/src/", "file.read /ws/src",
                     "file.write /backup/src", "file.write.outsideProject /backup/src"}},
        RequestCase{"RedirectInside",
                    "echo x > out.txt 2>/dev/null",
                    {"process.execute echo x", "file.write /ws/out.txt"}},
        RequestCase{"RedirectOutside",
                    "echo x >> /etc/hosts",
                    {"process.execute echo x", "file.write /etc/hosts",
                     "file.write.outsideProject /etc/hosts"}},
        RequestCase{"RedirectToScratch",
                    "sort data > /tmp/sorted",
                    {"process.execute sort data", "file.read /ws/data", "file.write /tmp/sorted"}},
        RequestCase{"HomeAndParent",
                    "cp notes ~/backup && rm -rf ../other",
                    {"process.execute cp notes ~/backup", "file.read /ws/notes",
                     "file.write /home/u/backup", "file.write.outsideProject /home/u/backup",
                     "process.execute rm -rf ../other", "file.write /other",
                     "file.write.outsideProject /other"}},
        RequestCase{"CdMovesTheCwd",
                    "cd /var && rm -rf cache",
                    {"process.execute rm -rf cache", "file.write /var/cache",
                     "file.write.outsideProject /var/cache"}},
        RequestCase{"DollarHome",
                    "$HOME/bin/tool > \"$HOME/out\"",
                    {"process.execute $HOME/bin/tool", "file.write /home/u/out",
                     "file.write.outsideProject /home/u/out"}},
        RequestCase{"UnresolvableTargetsAreSkipped", "echo hi > $OUT", {"process.execute echo hi"}},
        RequestCase{"Readers",
                    "cat .env; head -n 5 secrets/key; tail -f log < in",
                    {"process.execute cat .env", "file.read /ws/.env",
                     "process.execute head -n 5 secrets/key", "file.read /ws/secrets/key",
                     "process.execute tail -f log", "file.read /ws/log", "file.read /ws/in"}},
        RequestCase{
            "GrepPatternIsNotAFile",
            "grep -rn TOKEN . && grep -e x -f pats f",
            {"process.execute grep -rn TOKEN .", "file.read /ws",
             "process.execute grep -e x -f pats f", "file.read /ws/pats", "file.read /ws/f"}},
        RequestCase{
            "SedInPlace",
            "sed -i 's/a/b/' f.txt",
            {"process.execute sed -i s/a/b/ f.txt", "file.read /ws/f.txt", "file.write /ws/f.txt"}},
        RequestCase{
            "Tee",
            "make 2>&1 | tee build.log",
            {"process.execute make", "process.execute tee build.log", "file.write /ws/build.log"}},
        RequestCase{"CurlOutput",
                    "curl -sSL -o ~/x https://a.io/i.sh",
                    {"process.execute curl -sSL -o ~/x https://a.io/i.sh", "network.access a.io",
                     "file.write /home/u/x", "file.write.outsideProject /home/u/x"}},
        RequestCase{"DdOperands",
                    "dd if=disk.img of=/dev/sdb",
                    {"process.execute dd if=disk.img of=/dev/sdb", "file.read /ws/disk.img",
                     "file.write /dev/sdb", "file.write.outsideProject /dev/sdb"}},
        RequestCase{"BuiltinsOnlyStillExecute", "cd src", {"process.execute cd src"}},
        RequestCase{
            "DuplicatesCollapse", "cat a && cat a", {"process.execute cat a", "file.read /ws/a"}},
        RequestCase{"Opaque",
                    "echo 'unterminated && curl x",
                    {"process.execute echo 'unterminated && curl x (opaque)"}}));

TEST(BashRequestsTest, ResolvesAgainstTheCwdAndNamesTheTool) {
    RequestContext ctx = kCtx;
    ctx.cwd = "/ws/pkg";
    const std::vector<CapabilityRequest> requests = bash_requests("cat ../README", ctx, "process");
    ASSERT_EQ(requests.size(), 2U);
    EXPECT_EQ(requests[1].path, "/ws/README");
    for (const CapabilityRequest& r : requests) {
        EXPECT_EQ(r.tool, "process");
    }
}

// A command of builtins only is still decided as a command, marked as running no program
// (the executor does not fsync what cannot change a file); one program anywhere unmarks it.
TEST(BashRequestsTest, ACommandOfBuiltinsOnlyIsMarkedAsSuch) {
    const auto marked = [](std::string_view command) {
        const std::vector<CapabilityRequest> requests = bash_requests(command, kCtx, "bash");
        EXPECT_EQ(requests.front().kind, CapabilityKind::kProcessExecute) << command;
        return requests.front().builtins_only;
    };
    EXPECT_TRUE(marked("true"));
    EXPECT_TRUE(marked("cd pkg && test -f x"));
    EXPECT_FALSE(marked("ls"));
    EXPECT_FALSE(marked("cd pkg && make"));
    EXPECT_FALSE(marked("echo $(date)"));
    EXPECT_FALSE(marked("eval \"$X\""));
}

TEST(BashRequestsTest, TheSessionsOwnLoopbackIsNotTheNetwork) {
    RequestContext own = kCtx;
    own.private_loopback = true;
    auto network_hosts = [](const std::string& command, const RequestContext& ctx) {
        std::vector<std::string> hosts;
        for (const CapabilityRequest& r : bash_requests(command, ctx)) {
            if (r.kind == CapabilityKind::kNetworkAccess) {
                hosts.push_back(r.host.empty() ? "?" : r.host);
            }
        }
        return hosts;
    };
    for (const char* command :
         {"curl -sS http://127.0.0.1:8765/x", "curl localhost:3000/health", "wget -qO- 127.0.0.2/",
          "curl 'http://[::1]:8080/'", "nc 127.0.0.1 8080", "curl http://api.localhost/",
          "curl http://127.0.0.1:8765/$FILE"}) {
        EXPECT_THAT(network_hosts(command, own), IsEmpty()) << command;
        EXPECT_THAT(network_hosts(command, kCtx), Not(IsEmpty())) << "host network: " << command;
    }
    // Anything else, or a loopback address that an expansion could change, is the network.
    EXPECT_EQ(network_hosts("curl 127.0.0.1 https://pypi.org/simple", own),
              std::vector<std::string>{"pypi.org"});
    EXPECT_EQ(network_hosts("curl http://127.0.0.1:$PORT@evil.example/", own),
              std::vector<std::string>{"evil.example"});
    EXPECT_EQ(network_hosts("curl http://127.0.0.1:$PORT/", own),
              std::vector<std::string>{"127.0.0.1"});
    EXPECT_EQ(network_hosts("curl $URL", own), std::vector<std::string>{"?"});
    EXPECT_EQ(network_hosts("curl http://127.0.0.1.nip.io/", own),
              std::vector<std::string>{"127.0.0.1.nip.io"});
    EXPECT_EQ(network_hosts("curl http://128.0.0.1/", own), std::vector<std::string>{"128.0.0.1"});
}

TEST(BashRequestsTest, ExplainsDerivedRequests) {
    const std::vector<CapabilityRequest> requests = bash_requests("curl x.io", kCtx);
    ASSERT_EQ(requests.size(), 2U);
    EXPECT_EQ(requests[1].reason, "`curl` reaches the network");
    const std::vector<CapabilityRequest> opaque = bash_requests("echo \"", kCtx);
    ASSERT_EQ(opaque.size(), 1U);
    EXPECT_EQ(opaque[0].reason, "the command could not be parsed: unterminated double quote");
}

}  // namespace
}  // namespace stockade::policy
