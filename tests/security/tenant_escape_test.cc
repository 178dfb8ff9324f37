// Escape attempts of a hostile tenant of `stockade serve --http --tenants`: what a tenant names
// in Stockade-Workspace, and what its own sandboxes plant in its workspace root before it does
// (symlinks to another tenant's root, to the state directory, to the host's /, to a directory no
// tenant owns; a directory flipped with a symlink while sessions open; a workspace replaced
// after its session opened). Nothing outside the tenant's root may be created, read or bound,
// and, as root, everything the tenant's sandboxes write belongs to the tenant's own host uid.
//
// One server for the suite, two tenants: alpha (the attacker) and beta (the victim), each with
// its own workspace root and, as root, its own host uid range, which owns its root. Runs as root
// and as the unprivileged test user (tests/testing/as_user.sh), and again with both tenants'
// sessions on an imported image (STOCKADE_TEST_IMAGE=1, tests/testing/test_image.h: busybox,
// the host's libc and a few host programs, the tenants' "image") rather than the host's /usr.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/testing/escape_support.h"
#include "tests/testing/http_client.h"
#include "tests/testing/sandbox_harness.h"
#include "tests/testing/serve_client.h"
#include "tests/testing/test_image.h"

namespace stockade::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using namespace std::chrono_literals;

constexpr uid_t kAlphaUid = 1500200000;  // as root: alpha's range starts here, and owns its root
constexpr uid_t kBetaUid = 1500300000;
const char* const kAlphaToken = "alpha-token-4d1f0c9e7b2a";
const char* const kBetaToken = "beta-token-8e3a61d05c7f";

std::string sha256_hex(const std::string& text) {
    RunConfig config;
    config.stdin_data = text + "\n";
    const RunResult hashed = run_stockade({"token", "hash"}, config);
    std::string out = hashed.out;
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) {
        out.pop_back();
    }
    return out;
}

// Entries of a directory, sorted (empty when it does not exist).
std::vector<std::string> entries(const std::string& dir) {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        out.push_back(entry.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::string text_or_error(const nlohmann::json& response, const HttpReply& raw) {
    if (response.is_null()) {
        return "no response: HTTP " + std::to_string(raw.status) + " " + raw.error + " " + raw.body;
    }
    return text_of(response);
}

// The tenants file of the suite, and `stockade serve --http unix:...` on it.
struct Server {
    TempDir root{"stockade-tenant-escape"};
    std::string alpha, beta, state, outside, socket, log, tenants;
    std::unique_ptr<ChildProcess> serve;
    std::string failure;

    // What the file says of a tenant besides its name and root.
    static nlohmann::json tenant(const std::string& name, const std::string& token,
                                 const std::string& workspace_root, uid_t first_uid) {
        nlohmann::json t = {{"name", name},
                            {"token_sha256", {sha256_hex(token)}},
                            {"workspace_root", workspace_root},
                            {"limits", {{"sessions", 64}, {"calls", 4}}},
                            // Anchored where the tenant sees its workspace (/workspace).
                            {"deny", {"Read(./private.txt)"}}};
        if (running_as_root()) {
            t["host_uid_range"] =
                std::to_string(first_uid) + "-" + std::to_string(first_uid + 65535);
        }
        return t;
    }

    void start() {
        if (stockade_path().empty()) {
            failure = "STOCKADE_BIN is not set: run this suite through ctest";
            return;
        }
        if (test_image().wanted && !test_image().ready()) {
            failure = "no test image";  // SetUp skips or fails every case with the reason
            return;
        }
        alpha = root.make_dir("alpha");
        beta = root.make_dir("beta");
        state = root.make_dir("state", 0700);
        outside = root.make_dir("outside", 0777);  // writable by anyone: only serve stops it
        root.write_file("beta/secret.txt", "beta only\n", 0600);
        root.make_dir("beta/project");
        if (running_as_root()) {
            for (const auto& [dir, uid] :
                 {std::pair{alpha, kAlphaUid}, std::pair{beta, kBetaUid}}) {
                std::error_code ec;
                for (const auto& entry : fs::recursive_directory_iterator(dir, ec)) {
                    if (::lchown(entry.path().c_str(), uid, uid) != 0) {
                        failure = "chown " + entry.path().string();
                    }
                }
                if (::chown(dir.c_str(), uid, uid) != 0) {
                    failure = "chown " + dir;
                }
            }
        }
        socket = root.sub("serve.sock");
        log = root.sub("serve.log");
        nlohmann::json both = nlohmann::json::array({tenant("alpha", kAlphaToken, alpha, kAlphaUid),
                                                     tenant("beta", kBetaToken, beta, kBetaUid)});
        if (test_image().ready()) {
            for (nlohmann::json& t : both) {
                t["image"] = test_image().name;
            }
        }
        tenants = root.write_file("tenants.json", nlohmann::json{{"tenants", both}}.dump());
        RunConfig config;
        config.env = {"STOCKADE_STATE_DIR=" + state, "STOCKADE_TEST_LOG=" + log,
                      "SPDLOG_LEVEL=info"};
        // The store the tenants' image is found in.
        const std::vector<std::string> image_env = test_image_env();
        config.env.insert(config.env.end(), image_env.begin(), image_env.end());
        config.timeout = 280s;
        serve = std::make_unique<ChildProcess>(ChildProcess::start(
            {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>\"$STOCKADE_TEST_LOG\"", stockade_path(),
             "serve", "--http", "unix:" + socket, "--tenants", tenants, "--no-user-settings",
             "--ask-fallback", "allow", "--drain", "2"},
            config));
        for (int i = 0; i < 200 && !fs::exists(socket); ++i) {
            std::this_thread::sleep_for(50ms);
        }
        if (!fs::exists(socket)) {
            failure = "serve did not start: " + read_file_text(log).value_or("(no log)");
        }
    }

    [[nodiscard]] std::string serve_log() const { return read_file_text(log).value_or(""); }
};

class TenantEscapeTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        server_ = std::make_unique<Server>();
        server_->start();
    }
    static void TearDownTestSuite() {
        if (server_ && server_->serve && server_->serve->running()) {
            server_->serve->signal(SIGTERM);
            const RunResult ended = server_->serve->wait();
            EXPECT_EQ(ended.exit_code, 0) << ended.describe() << server_->serve_log();
        }
        server_.reset();
    }
    void SetUp() override {
        SKIP_OR_FAIL_WITHOUT_TEST_IMAGE();
        if (!server_->failure.empty()) {
            GTEST_FAIL() << server_->failure;
        }
    }

    static Server& s() { return *server_; }

    // A session of alpha on its whole root: the attacker's own sandbox, which plants things.
    static McpHttpSession& attacker() {
        static std::unique_ptr<McpHttpSession> session;
        if (!session) {
            session = std::make_unique<McpHttpSession>(s().socket, kAlphaToken);
            const HttpReply opened = session->open();
            EXPECT_EQ(opened.status, 200) << opened.body << s().serve_log();
        }
        return *session;
    }

    // bash in the attacker's sandbox; its output.
    static std::string plant(const std::string& command) {
        HttpReply raw;
        const nlohmann::json response =
            attacker().call("bash", {{"command", command}, {"timeout_ms", 30000}}, &raw);
        return text_or_error(response, raw);
    }

    // The host pid of the worker of alpha's session on `workspace` (its events.jsonl), or -1.
    static pid_t worker_of(const std::string& workspace) {
        pid_t pid = -1;
        std::error_code ec;
        for (const auto& dir : fs::directory_iterator(s().state + "/tenants/alpha/sessions", ec)) {
            const std::string events = read_file_text(dir.path() / "events.jsonl").value_or("");
            if (events.find("\"workspace\":\"" + workspace + "\"") == std::string::npos) {
                continue;
            }
            std::istringstream lines(events);
            for (std::string line; std::getline(lines, line);) {
                auto event = nlohmann::json::parse(line, nullptr, false);
                if (!event.is_discarded() && event.value("type", "") == "WorkerStarted") {
                    pid = event.value("pid", -1);
                }
            }
        }
        return pid;
    }

    static std::unique_ptr<Server> server_;
};

std::unique_ptr<Server> TenantEscapeTest::server_;

TEST_F(TenantEscapeTest, ANamedWorkspaceOpensBeneathTheRootAndTheLogsNameWhere) {
    McpHttpSession session(s().socket, kAlphaToken);
    const HttpReply opened = session.open("projects/api");
    ASSERT_EQ(opened.status, 200) << opened.body;
    HttpReply raw;
    const std::string where =
        text_or_error(session.call("bash", {{"command", "pwd -P && touch made-here"}}, &raw), raw);
    const std::string path = s().alpha + "/projects/api";
    EXPECT_THAT(where, HasSubstr("/workspace\n")) << "the tenant sees a neutral path";
    EXPECT_TRUE(fs::exists(path + "/made-here"));
    session.close();
    EXPECT_THAT(s().serve_log(), HasSubstr("workspace=" + path));
    EXPECT_GE(worker_of(path), 0) << "the event log's SessionStarted names the resolved path";
}

// Nothing a tenant's model reads names the server's layout: the workspace is /workspace, spilled
// output and process logs are under /stockade, in results, their _meta, and the initialize
// result; and those paths work as they read.
TEST_F(TenantEscapeTest, ATenantSeesNeutralPathsNeverTheServersLayout) {
    McpHttpSession session(s().socket, kAlphaToken);
    const HttpReply opened = session.open("projects/neutral");
    ASSERT_EQ(opened.status, 200) << opened.body;
    std::vector<std::string> seen = {opened.body};
    auto call = [&](const std::string& tool, const nlohmann::json& args) {
        HttpReply raw;
        const nlohmann::json response = session.call(tool, args, &raw);
        seen.push_back(raw.body);
        return response;
    };
    const nlohmann::json big = call(
        "bash", {{"command", "pwd; echo \"$PWD\"; seq 1 200000; ls -d /stockade/tool-output"}});
    const std::string big_text = text_or_error(big, HttpReply{});
    EXPECT_THAT(big_text, AllOf(HasSubstr("/workspace\n"), HasSubstr("cwd /workspace]")));
    const nlohmann::json meta = big["result"].value("_meta", nlohmann::json::object());
    ASSERT_FALSE(meta.empty()) << big.dump();
    std::string log_path;
    for (const auto& [key, value] : meta.items()) {
        if (value.is_object() && value.contains("log_path") && value["log_path"].is_string()) {
            log_path = value["log_path"].get<std::string>();
        }
    }
    EXPECT_THAT(log_path, ::testing::StartsWith("/stockade/tool-output/")) << meta.dump();
    // The model can read what the result points it to.
    const std::string tail = text_or_error(
        call("read", {{"file_path", log_path}, {"offset", 199990}, {"limit", 5}}), HttpReply{});
    EXPECT_THAT(tail, HasSubstr("199990")) << tail;
    const std::string started = text_or_error(
        call("process", {{"action", "start"}, {"command", "echo started; sleep 30"}}), HttpReply{});
    EXPECT_THAT(started, HasSubstr("/stockade/tool-output/process-logs/")) << started;
    (void)call("write", {{"file_path", "/workspace/note.txt"}, {"content", "hi\n"}});
    EXPECT_EQ(read_file_text(s().alpha + "/projects/neutral/note.txt").value_or(""), "hi\n");
    session.close();

    // The tenant's rules hold at the neutral paths: Read(./private.txt) denies the tool and
    // hides the file from commands.
    McpHttpSession again(s().socket, kAlphaToken);
    std::ofstream(s().alpha + "/projects/neutral/private.txt") << "not for the model\n";
    ASSERT_EQ(again.open("projects/neutral").status, 200);
    HttpReply raw;
    const nlohmann::json denied =
        again.call("read", {{"file_path", "/workspace/private.txt"}}, &raw);
    EXPECT_TRUE(denied["result"].value("isError", false)) << denied.dump();
    // A command that names it only through a glob: the mount hides it.
    const std::string hidden = text_or_error(
        again.call("bash", {{"command", "cat /workspace/*.txt; echo status=$?"}}, &raw), raw);
    EXPECT_THAT(hidden, AllOf(Not(HasSubstr("not for the model")), HasSubstr("hi\n"),
                              HasSubstr("status=1")))
        << hidden;
    seen.push_back(denied.dump());
    seen.push_back(hidden);
    again.close();
    for (const std::string& body : seen) {
        EXPECT_THAT(body, AllOf(Not(HasSubstr(s().alpha)), Not(HasSubstr(s().state)),
                                Not(HasSubstr("stockade-tenant-escape"))))
            << body.substr(0, 2000);
    }
}

TEST_F(TenantEscapeTest, LinksPlantedInTheRootNeverTakeASessionOutOfIt) {
    const std::string marker = "stockade-escape-" + unique_suffix();
    const std::string planted =
        plant("set -e; ln -s '" + s().beta + "' esc-beta; ln -s '" + s().state + "' esc-state; " +
              "ln -s / esc-root; ln -s '" + s().outside + "' esc-out; mkdir -p real; " +
              "ln -s / real/deep; ln -s ../.. up; echo planted");
    ASSERT_THAT(planted, HasSubstr("planted"));
    const std::vector<std::string> beta_before = entries(s().beta);
    const std::vector<std::string> state_before = entries(s().state);
    for (const std::string& name : std::vector<std::string>{
             "esc-beta", "esc-beta/project", "esc-beta/" + marker, "esc-state",
             "esc-state/" + marker, "esc-root/tmp/" + marker, "esc-root/" + marker, "esc-out",
             "esc-out/" + marker, "real/deep/" + marker, "up", "up/" + marker}) {
        McpHttpSession session(s().socket, kAlphaToken);
        const HttpReply opened = session.open(name);
        EXPECT_EQ(opened.status, 400) << name << ": " << opened.body;
        EXPECT_THAT(opened.body, HasSubstr("Stockade-Workspace")) << name;
        EXPECT_THAT(opened.body, Not(HasSubstr(s().beta))) << "the client learns no host path";
        EXPECT_TRUE(session.id().empty()) << name << " opened a session";
        session.close();
    }
    EXPECT_EQ(entries(s().beta), beta_before) << "something was created in beta's root";
    EXPECT_EQ(entries(s().state), state_before);
    EXPECT_THAT(entries(s().outside), IsEmpty());
    EXPECT_FALSE(fs::exists("/tmp/" + marker));
    EXPECT_FALSE(fs::exists("/" + marker));
}

TEST_F(TenantEscapeTest, ADirectoryFlippedWithALinkWhileSessionsOpenNeverLeavesTheRoot) {
    // The attacker's sandbox flips `race` between a directory and a link out, as fast as it can,
    // while sessions open beneath it (bounded: the loop ends after 60 s, or when stopped).
    HttpReply raw;
    const std::string started =
        text_or_error(attacker().call("process",
                                      {{"action", "start"},
                                       {"command",
                                        "timeout 60 sh -c 'while :; do rm -rf race; "
                                        "mkdir race; rm -rf race; ln -s " +
                                            s().outside + " race; done'"}},
                                      &raw),
                      raw);
    std::smatch id;
    ASSERT_TRUE(std::regex_search(started, id, std::regex("\\bp[0-9]+\\b"))) << started;
    // The flipping runs: the host sees `race` as a directory and as a link.
    bool seen_dir = false;
    bool seen_link = false;
    for (int i = 0; i < 2000 && !(seen_dir && seen_link); ++i) {
        struct stat st {};
        if (::lstat((s().alpha + "/race").c_str(), &st) == 0) {
            seen_dir = seen_dir || S_ISDIR(st.st_mode);
            seen_link = seen_link || S_ISLNK(st.st_mode);
        }
        std::this_thread::sleep_for(1ms);
    }
    ASSERT_TRUE(seen_dir && seen_link) << "the attacker's loop does not run";
    int refused = 0;
    int opened_inside = 0;
    const auto until = std::chrono::steady_clock::now() + 20s;
    for (int i = 0; i < 40 && std::chrono::steady_clock::now() < until; ++i) {
        McpHttpSession session(s().socket, kAlphaToken);
        const std::string name = "race/p" + std::to_string(i);
        const HttpReply opened = session.open(name);
        if (opened.status == 400 ||
            (opened.status == 503 &&
             opened.body.find("moved, removed or replaced") != std::string::npos)) {
            ++refused;  // a link on the way; or, unprivileged, a directory gone before the bind
            continue;
        }
        ASSERT_EQ(opened.status, 200) << name << ": " << opened.body;
        const std::string where = text_or_error(
            session.call("bash", {{"command", "pwd -P; touch wrote-" + std::to_string(i)}}, &raw),
            raw);
        // Inside its own root, seen as /workspace (or gone: the loop removed it after the open).
        EXPECT_THAT(where, AnyOf(HasSubstr("cwd /workspace]"), HasSubstr("moved, removed")))
            << name;
        ++opened_inside;
        session.close();
    }
    (void)attacker().call("process", {{"action", "stop"}, {"id", id.str()}});
    (void)plant("rm -rf race");
    RecordProperty("refused", refused);
    RecordProperty("opened", opened_inside);
    std::cout << "race: " << refused << " sessions refused, " << opened_inside
              << " opened inside the root\n";
    EXPECT_THAT(entries(s().outside), IsEmpty()) << "a session of the race wrote outside the root";
}

TEST_F(TenantEscapeTest, AWorkspaceReplacedAfterItsSessionOpenedIsNeverRebound) {
    McpHttpSession victim(s().socket, kAlphaToken);
    ASSERT_EQ(victim.open("moved/proj").status, 200);
    HttpReply raw;
    ASSERT_THAT(
        text_or_error(victim.call("bash", {{"command", "echo original > marker.txt"}}, &raw), raw),
        Not(HasSubstr("rror")));
    // Another of the tenant's sessions swaps the directory for a link out, then the session's
    // worker dies: the next call starts a new one, which must not bind what the path leads to.
    ASSERT_THAT(plant("mv moved/proj moved/proj.old && ln -s '" + s().outside +
                      "' moved/proj && echo swapped"),
                HasSubstr("swapped"));
    const pid_t worker = worker_of(s().alpha + "/moved/proj");
    ASSERT_GT(worker, 0);
    ASSERT_EQ(::kill(worker, SIGKILL), 0);
    for (int i = 0; i < 100 && alive(worker); ++i) {
        std::this_thread::sleep_for(50ms);
    }
    // The first call after a worker's death may be the one that finds it gone; the next
    // starts a new worker.
    std::string after;
    for (int attempt = 0; attempt < 2; ++attempt) {
        after = text_or_error(
            victim.call("bash", {{"command", "cat marker.txt && touch after.txt"}}, &raw), raw);
        if (after.find("worker stopped") == std::string::npos) {
            break;
        }
    }
    if (running_as_root()) {
        // The supervisor binds the directory it opened, wherever it is now.
        EXPECT_THAT(after, HasSubstr("original"));
        EXPECT_TRUE(fs::exists(s().alpha + "/moved/proj.old/after.txt")) << after;
    } else {
        // An unprivileged supervisor cannot clone its own mount from the sandbox's namespace:
        // the path must still lead to that directory, or the worker does not start.
        EXPECT_THAT(after, AnyOf(HasSubstr("moved, removed or replaced"), HasSubstr("original")))
            << after;
    }
    EXPECT_THAT(entries(s().outside), IsEmpty()) << after;
    victim.close();
}

TEST_F(TenantEscapeTest, AsRootWhatATenantWritesBelongsToTheTenant) {
    if (!running_as_root()) {
        GTEST_SKIP() << "an unprivileged server's sandboxes all write as its own uid";
    }
    McpHttpSession session(s().socket, kAlphaToken);
    ASSERT_EQ(session.open("owned/x").status, 200);
    HttpReply raw;
    ASSERT_THAT(
        text_or_error(
            session.call("bash", {{"command", "echo hi > f && mkdir d && echo ok"}}, &raw), raw),
        HasSubstr("ok"));
    session.close();
    for (const std::string made : {"owned", "owned/x", "owned/x/f", "owned/x/d"}) {
        struct stat st {};
        ASSERT_EQ(::lstat((s().alpha + "/" + made).c_str(), &st), 0) << made;
        EXPECT_EQ(st.st_uid, kAlphaUid) << made << " is not the tenant's";
        EXPECT_EQ(st.st_gid, kAlphaUid) << made;
    }
    // A directory of the root that the tenant does not own is refused: the idmapped workspace
    // would map the sandbox user to its owner, here root.
    const std::string foreign = s().root.make_dir("alpha/root-owned");
    ASSERT_EQ(::chown(foreign.c_str(), 0, 0), 0);
    McpHttpSession refused(s().socket, kAlphaToken);
    const HttpReply reply = refused.open("root-owned");
    EXPECT_EQ(reply.status, 400) << reply.body;
    EXPECT_THAT(reply.body, HasSubstr("belongs to uid 0"));
    EXPECT_THAT(entries(foreign), IsEmpty());
}

// Tenants files serve must refuse before it listens.
TEST(TenantRootsAtStartTest, RootsThatOverlapEachOtherOrTheStateAreRefused) {
    TempDir dir("stockade-tenant-roots");
    const std::string outer = dir.make_dir("outer");
    const std::string inner = dir.make_dir("outer/inner");
    const std::string other = dir.make_dir("other");
    const std::string state_inside = dir.make_dir("other/state", 0700);
    if (running_as_root()) {
        ASSERT_EQ(::chown(outer.c_str(), kAlphaUid, kAlphaUid), 0);
        ASSERT_EQ(::chown(inner.c_str(), kBetaUid, kBetaUid), 0);
        ASSERT_EQ(::chown(other.c_str(), kAlphaUid, kAlphaUid), 0);
    }
    struct Case {
        std::vector<nlohmann::json> tenants;
        std::string state;
        std::string says;
    };
    const std::vector<Case> cases = {
        {{Server::tenant("alpha", kAlphaToken, outer, kAlphaUid),
          Server::tenant("beta", kBetaToken, inner, kBetaUid)},
         dir.sub("state"),
         "contains tenant beta's"},
        {{Server::tenant("alpha", kAlphaToken, other, kAlphaUid)},
         state_inside,
         "contains the state directory"},
    };
    for (const Case& c : cases) {
        const std::string file =
            dir.write_file("tenants.json", nlohmann::json{{"tenants", c.tenants}}.dump());
        RunConfig config;
        config.env = {"STOCKADE_STATE_DIR=" + c.state};
        config.timeout = 30s;
        const RunResult refused = run_stockade(
            {"serve", "--http", "unix:" + dir.sub("s.sock"), "--tenants", file}, config);
        EXPECT_EQ(refused.exit_code, 2) << refused.describe();
        EXPECT_THAT(refused.err, HasSubstr(c.says)) << refused.describe();
        EXPECT_FALSE(fs::exists(dir.sub("s.sock"))) << "it listened";
    }
    if (running_as_root()) {
        const std::string plain = dir.make_dir("root-owned");  // root's, as made
        const std::string file = dir.write_file(
            "tenants.json",
            nlohmann::json{{"tenants", {Server::tenant("alpha", kAlphaToken, plain, kAlphaUid)}}}
                .dump());
        RunConfig config;
        config.env = {"STOCKADE_STATE_DIR=" + dir.sub("state")};
        config.timeout = 30s;
        const RunResult refused = run_stockade(
            {"serve", "--http", "unix:" + dir.sub("s.sock"), "--tenants", file}, config);
        EXPECT_EQ(refused.exit_code, 2) << refused.describe();
        EXPECT_THAT(refused.err, HasSubstr("is owned by uid 0 (root)"));
        EXPECT_THAT(refused.err, HasSubstr("chown"));
    }
}

}  // namespace
}  // namespace stockade::testing
