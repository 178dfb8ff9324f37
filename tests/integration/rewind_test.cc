// Checkpoints and `stockade rewind` on real sessions (docs/rewind.md): a golden session that
// writes, edits, runs sed -i, rm, mv, chmod, makes a symlink, a binary file and an empty
// directory, rewound to each point and compared byte for byte and mode for mode; a conflict
// refused and listed; the quota dropping the oldest checkpoint; a directory swapped for a
// symlink while the walk runs; and a rewind through serve --http's admin endpoint.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/crypto.h"
#include "tests/testing/http_client.h"
#include "tests/testing/sandbox_harness.h"
#include "tests/testing/serve_client.h"

namespace stockade::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

// A tree as the rewind must restore it: each path's kind, mode and bytes (a symlink's target),
// .git left out.
using Tree = std::map<std::string, std::string>;

Tree tree_of(const std::string& root) {
    Tree tree;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(root, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
        const std::string rel = fs::relative(it->path(), root).string();
        // .git and what .gitignore excludes (build/) are out of the checkpoints' scope.
        if (rel == ".git" || rel.starts_with(".git/") || rel == "build" ||
            rel.starts_with("build/")) {
            it.disable_recursion_pending();
            continue;
        }
        struct stat st {};
        if (::lstat(it->path().c_str(), &st) != 0) {
            continue;
        }
        std::string what = std::to_string(st.st_mode & 07777) + " ";
        if (S_ISLNK(st.st_mode)) {
            what += "link " + fs::read_symlink(it->path()).string();
        } else if (S_ISDIR(st.st_mode)) {
            what += "dir";
        } else {
            what += "file " + read_file_text(it->path().string()).value_or("?");
        }
        tree[rel] = what;
    }
    return tree;
}

std::string describe(const Tree& tree) {
    std::string out;
    for (const auto& [path, what] : tree) {
        out += path + ": " + what.substr(0, 60) + "\n";
    }
    return out;
}

std::vector<nlohmann::json> events_of(const std::string& state, const std::string& id) {
    std::vector<nlohmann::json> events;
    for (const std::string& line :
         split_lines(read_file_text(state + "/sessions/" + id + "/events.jsonl").value_or(""))) {
        auto j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_object()) {
            events.push_back(std::move(j));
        }
    }
    return events;
}

std::string only_session(const std::string& state) {
    std::vector<std::string> ids;
    for (const auto& entry : fs::directory_iterator(state + "/sessions")) {
        ids.push_back(entry.path().filename().string());
    }
    EXPECT_EQ(ids.size(), 1U);
    return ids.empty() ? std::string() : ids.front();
}

class RewindTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (stockade_path().empty()) {
            GTEST_SKIP() << "STOCKADE_BIN is not set: run this suite through ctest";
        }
        workspace_real_ = fs::canonical(workspace_.path()).string();
    }

    RunResult rewind(const std::string& id, const std::string& to,
                     std::vector<std::string> extra = {}) const {
        std::vector<std::string> args = {"rewind", id, "--to", to, "--state-dir", state_.path()};
        args.insert(args.end(), extra.begin(), extra.end());
        RunConfig config;
        config.timeout = 120s;
        return run_stockade(args, config);
    }

    static nlohmann::json initialize(ServeProcess& serve) {
        return serve.request("initialize", {{"protocolVersion", "2025-11-25"},
                                            {"capabilities", nlohmann::json::object()},
                                            {"clientInfo", {{"name", "test"}, {"version", "1"}}}});
    }

    TempDir workspace_{"stockade-rewind-ws"};
    TempDir state_{"stockade-rewind-state"};
    std::string workspace_real_;
};

TEST_F(RewindTest, AGoldenSessionRewindsToEachPointByteForByteAndModeForMode) {
    workspace_.write_file("a.txt", "one\ntwo\nthree\n");
    workspace_.write_file("tool.sh", "#!/bin/sh\necho tool\n", 0755);
    workspace_.write_file(".gitignore", "build/\n");
    workspace_.make_dir("build");
    workspace_.write_file("build/out.o", "ignored\n");
    const std::vector<std::pair<std::string, nlohmann::json>> steps = {
        {"write", {{"file_path", "new.txt"}, {"content", "fresh\n"}}},
        {"read", {{"file_path", "a.txt"}}},
        {"edit", {{"file_path", "a.txt"}, {"old_string", "two"}, {"new_string", "2"}}},
        {"bash", {{"command", "sed -i 's/one/1/' a.txt new.txt"}}},
        {"bash", {{"command", "rm tool.sh"}}},
        {"bash", {{"command", "mv new.txt renamed.txt"}}},
        {"bash", {{"command", "chmod 600 renamed.txt && chmod 750 empty-later 2>/dev/null; true"}}},
        {"bash", {{"command", "ln -s renamed.txt link && ln -s /etc/passwd abs"}}},
        {"bash", {{"command", "printf '\\000\\001\\377bin' > blob.bin"}}},
        {"bash", {{"command", "mkdir -p empty/deeper && rm -rf build/out.o"}}},
        {"bash", {{"command", "rm -rf empty && mkdir empty && rm link && mkdir link"}}},
    };
    std::vector<Tree> before;  // the tree just before each step
    std::string id;
    {
        ServeProcess serve(workspace_.path(), state_.path());
        ASSERT_TRUE(initialize(serve).contains("result"));
        for (const auto& [tool, args] : steps) {
            before.push_back(tree_of(workspace_.path()));
            auto reply = serve.call(tool, args);
            ASSERT_FALSE(reply["result"].value("isError", true)) << tool << ": " << reply.dump();
        }
        serve.close_input();
        EXPECT_EQ(serve.wait_exit(30s), 0);
    }
    const Tree last = tree_of(workspace_.path());
    id = only_session(state_.path());
    // The calls in order, and which of them have a checkpoint.
    std::vector<std::string> calls;
    std::map<std::string, int> checkpoints;
    for (const auto& e : events_of(state_.path(), id)) {
        if (e.value("type", "") == "ToolRequested") {
            calls.push_back(e.value("call", ""));
        }
        if (e.value("type", "") == "Checkpoint" && e.value("kind", "") == "call") {
            ++checkpoints[e.value("call", "")];
        }
    }
    ASSERT_EQ(calls.size(), steps.size());
    EXPECT_EQ(checkpoints.count(calls[1]), 0U) << "a read changes nothing: no checkpoint";
    // `stockade log` shows the checkpoints and their counts.
    RunConfig config;
    config.timeout = 30s;
    const RunResult log = run_stockade({"log", id, "--state-dir", state_.path()}, config);
    EXPECT_THAT(log.out, HasSubstr("checkpoint 1 (baseline): 3 added"));
    EXPECT_THAT(log.out, HasSubstr("checkpoint 2 (rewind --to " + calls[0] +
                                   " undoes it): 1 added, 0 changed, 0 removed"));

    // Back to each point, newest first, then forward again to one in the middle.
    std::vector<size_t> order;
    for (size_t i = steps.size(); i-- > 0;) {
        if (i != 1) {
            order.push_back(i);
        }
    }
    order.push_back(6);
    for (size_t i : order) {
        const RunResult r = rewind(id, calls[i]);
        ASSERT_EQ(r.exit_code, 0) << "to " << calls[i] << ": " << r.out << r.err;
        EXPECT_EQ(tree_of(workspace_.path()), before[i])
            << "rewound to before step " << i << " (" << steps[i].first << ")\n"
            << r.out << "want:\n"
            << describe(before[i]) << "got:\n"
            << describe(tree_of(workspace_.path()));
    }
    // Ignored files are out of scope: build/ and its file stayed as they were.
    EXPECT_FALSE(fs::exists(workspace_.sub("build/out.o"))) << "removed by step 10, not restored";
    // A dry run changes nothing and says what it would do.
    const Tree now = tree_of(workspace_.path());
    const RunResult dry = rewind(id, "@" + std::to_string(checkpoints.size() + 1), {"--dry-run"});
    EXPECT_EQ(dry.exit_code, 0) << dry.err;
    EXPECT_THAT(dry.out, HasSubstr("dry run"));
    EXPECT_EQ(tree_of(workspace_.path()), now);
    (void)last;
    // The rewinds are in the log.
    size_t rewinds = 0;
    for (const auto& e : events_of(state_.path(), id)) {
        rewinds += e.value("type", "") == "Rewind" ? 1U : 0U;
    }
    EXPECT_EQ(rewinds, order.size());
}

// In a git repository, a file that matches git's index is recorded by its blob id, not copied;
// the rewind gets it back with git cat-file, run in the sandbox.
TEST_F(RewindTest, FilesGitHoldsAreRecordedByBlobIdAndRestoredFromGit) {
    for (int i = 0; i < 20; ++i) {
        workspace_.write_file("f" + std::to_string(i) + ".txt", "line " + std::to_string(i) + "\n");
    }
    const std::string git = "git -C '" + workspace_.path() +
                            "' -c user.name=t -c user.email=t@t -c safe.directory='*' ";
    ASSERT_EQ(
        std::system((git + "init -q && " + git + "add -A && " + git + "commit -qm init").c_str()),
        0);
    std::this_thread::sleep_for(1100ms);  // the index newer than the files: none racily clean
    ASSERT_EQ(std::system((git + "update-index -q --refresh").c_str()), 0);
    const Tree before = tree_of(workspace_.path());
    std::string call;
    {
        ServeProcess serve(workspace_.path(), state_.path());
        ASSERT_TRUE(initialize(serve).contains("result"));
        auto reply = serve.call("bash", {{"command", "sed -i s/line/LINE/ f*.txt && rm f3.txt"}});
        ASSERT_FALSE(reply["result"].value("isError", true)) << reply.dump();
        serve.close_input();
        EXPECT_EQ(serve.wait_exit(30s), 0);
    }
    const std::string id = only_session(state_.path());
    for (const auto& e : events_of(state_.path(), id)) {
        if (e.value("type", "") == "ToolRequested") {
            call = e.value("call", "");
        }
    }
    const std::string objects = state_.path() + "/sessions/" + id + "/checkpoints/objects";
    const std::string log =
        read_file_text(state_.path() + "/sessions/" + id + "/checkpoints/log.jsonl").value_or("");
    // f0.txt, as git holds it, is in the baseline by its blob id alone.
    const auto baseline = nlohmann::json::parse(split_lines(log).at(0), nullptr, false);
    ASSERT_TRUE(baseline.is_object()) << log.substr(0, 300);
    const nlohmann::json& f0 = baseline["changes"]["f0.txt"];
    EXPECT_TRUE(f0.contains("b")) << f0.dump();
    EXPECT_FALSE(f0.contains("h")) << f0.dump();
    size_t stored = 0;
    for (const auto& entry : fs::directory_iterator(objects)) {
        (void)entry;
        ++stored;
    }
    EXPECT_EQ(stored, 19U) << "the 19 files sed changed, not the 20 git holds";
    const RunResult r = rewind(id, call);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(tree_of(workspace_.path()), before) << r.out;
}

TEST_F(RewindTest, AFileChangedOutsideTheSessionIsListedAndLeftUnlessForced) {
    workspace_.write_file("a.txt", "mine\n");
    std::string call;
    {
        ServeProcess serve(workspace_.path(), state_.path());
        ASSERT_TRUE(initialize(serve).contains("result"));
        serve.call("bash", {{"command", "echo session > a.txt; echo b > b.txt"}});
        serve.close_input();
        EXPECT_EQ(serve.wait_exit(30s), 0);
    }
    const std::string id = only_session(state_.path());
    for (const auto& e : events_of(state_.path(), id)) {
        if (e.value("type", "") == "ToolRequested") {
            call = e.value("call", "");
        }
    }
    workspace_.write_file("a.txt", "the user's own change\n");
    const RunResult refused = rewind(id, call);
    EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
    EXPECT_THAT(refused.out, HasSubstr("changed outside the session"));
    EXPECT_THAT(refused.out, HasSubstr("a.txt"));
    EXPECT_THAT(refused.out, HasSubstr("--force"));
    EXPECT_EQ(read_file_text(workspace_.sub("a.txt")).value_or(""), "the user's own change\n");
    EXPECT_FALSE(fs::exists(workspace_.sub("b.txt"))) << "what did not conflict was rewound";
    const RunResult forced = rewind(id, call, {"--force"});
    EXPECT_EQ(forced.exit_code, 0) << forced.out << forced.err;
    EXPECT_EQ(read_file_text(workspace_.sub("a.txt")).value_or(""), "mine\n");
    // A call that has no checkpoint is named as such.
    const RunResult unknown = rewind(id, "no-such-call");
    EXPECT_EQ(unknown.exit_code, 2);
    EXPECT_THAT(unknown.err, HasSubstr("no checkpoint follows call no-such-call"));
}

TEST_F(RewindTest, TheQuotaDropsTheOldestCheckpointAndTheLogSaysWhich) {
    workspace_.write_file("seed.txt", "seed\n");
    std::vector<std::string> calls;
    std::vector<std::string> after;  // f after each call
    {
        ServeProcess serve(workspace_.path(), state_.path(), {"--checkpoint-quota", "100K"});
        ASSERT_TRUE(initialize(serve).contains("result"));
        for (int i = 0; i < 4; ++i) {
            auto reply = serve.call("bash", {{"command", "head -c 40000 /dev/urandom > f"}});
            ASSERT_FALSE(reply["result"].value("isError", true)) << reply.dump();
            after.push_back(read_file_text(workspace_.sub("f")).value_or(""));
        }
        serve.close_input();
        EXPECT_EQ(serve.wait_exit(30s), 0);
    }
    const std::string id = only_session(state_.path());
    std::vector<std::string> dropped;
    for (const auto& e : events_of(state_.path(), id)) {
        if (e.value("type", "") == "ToolRequested") {
            calls.push_back(e.value("call", ""));
        }
        if (e.value("type", "") == "CheckpointDropped") {
            dropped.push_back(e.value("call", ""));
        }
    }
    ASSERT_EQ(calls.size(), 4U);
    ASSERT_FALSE(dropped.empty()) << "4 x 40 KB in a 100 KB quota";
    EXPECT_EQ(dropped.front(), calls[0]) << "the oldest goes first";
    uint64_t stored = 0;
    for (const auto& entry :
         fs::directory_iterator(state_.path() + "/sessions/" + id + "/checkpoints/objects")) {
        stored += entry.file_size();
    }
    EXPECT_LE(stored, 100U * 1024U);
    const RunResult gone = rewind(id, calls[0]);
    EXPECT_EQ(gone.exit_code, 2) << gone.out;
    EXPECT_THAT(gone.err, HasSubstr("dropped to keep within the checkpoint quota"));
    const RunResult kept = rewind(id, calls[3]);
    EXPECT_EQ(kept.exit_code, 0) << kept.out << kept.err;
    EXPECT_TRUE(read_file_text(workspace_.sub("f")) == after[2]) << "f as the third call left it";
}

// A command swaps a directory for a symlink to a directory outside the workspace (bound into
// the sandbox read-write), over and over, while checkpoints walk: nothing of it is read into the
// store, and the rewind writes nothing there.
TEST_F(RewindTest, ADirectorySwappedForASymlinkDuringTheWalkNeverLeadsOutside) {
    TempDir outside{"stockade-rewind-outside"};
    outside.write_file("secret.txt", "OUTSIDE-SECRET-7f3a\n", 0666);
    ::chmod(outside.path().c_str(), 0777);
    const std::string out_real = fs::canonical(outside.path()).string();
    workspace_.make_dir("d");
    workspace_.write_file("d/inner.txt", "inside\n");
    const std::string swap = "while :; do mv d d.away 2>/dev/null; ln -sfn " + out_real +
                             " d; rm -f d; mv d.away d 2>/dev/null; done";
    std::string first;
    {
        ServeProcess serve(workspace_.path(), state_.path(), {"--rw", outside.path()});
        ASSERT_TRUE(initialize(serve).contains("result"));
        auto started = serve.call("process", {{"action", "start"}, {"command", swap}});
        ASSERT_FALSE(started["result"].value("isError", true)) << started.dump();
        for (int i = 0; i < 30; ++i) {
            serve.call("bash", {{"command", "echo " + std::to_string(i) + " > n.txt"}});
        }
        // End the swapping with d a symlink to the outside directory.
        serve.call("bash", {{"command",
                             "pkill -f 'mv d d.away' ; sleep 0.2; rm -rf d d.away; "
                             "ln -s " +
                                 out_real + " d"}});
        serve.close_input();
        EXPECT_EQ(serve.wait_exit(30s), 0);
    }
    const std::string id = only_session(state_.path());
    for (const auto& e : events_of(state_.path(), id)) {
        if (e.value("type", "") == "ToolRequested" && first.empty()) {
            first = e.value("call", "");
        }
    }
    const std::string store = state_.path() + "/sessions/" + id + "/checkpoints";
    for (const auto& entry : fs::recursive_directory_iterator(store)) {
        if (entry.is_regular_file()) {
            EXPECT_THAT(read_file_text(entry.path().string()).value_or(""),
                        Not(HasSubstr("OUTSIDE-SECRET")))
                << entry.path();
        }
    }
    EXPECT_THAT(read_file_text(store + "/log.jsonl").value_or(""), Not(HasSubstr("d/secret.txt")));
    // Back to before the first call: d is a directory again, holding inner.txt; the outside
    // directory is as it was.
    const RunResult r = rewind(id, first, {"--force", "--rw", outside.path()});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    struct stat st {};
    ASSERT_EQ(::lstat(workspace_.sub("d").c_str(), &st), 0);
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_EQ(read_file_text(workspace_.sub("d/inner.txt")).value_or(""), "inside\n");
    std::vector<std::string> outside_names;
    for (const auto& entry : fs::directory_iterator(outside.path())) {
        outside_names.push_back(entry.path().filename().string());
    }
    EXPECT_THAT(outside_names, ::testing::ElementsAre("secret.txt"));
}

TEST_F(RewindTest, ARunningHttpSessionIsRewoundThroughTheAdminEndpoint) {
    workspace_.write_file("a.txt", "before\n");
    TempDir sock{"stockade-rewind-sock"};
    const std::string socket = sock.sub("s.sock");
    const std::string log = sock.sub("serve.log");
    RunConfig config;
    config.env = {"STOCKADE_STATE_DIR=" + state_.path(), "STOCKADE_TEST_LOG=" + log};
    config.timeout = 200s;
    const std::string tokens = sock.write_file("tokens", sha256_hex("user-token") + "\n");
    const std::string admins = sock.write_file("admins", sha256_hex("admin-token") + "\n");
    ChildProcess serve = ChildProcess::start(
        {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>\"$STOCKADE_TEST_LOG\"", stockade_path(), "serve",
         "--http", "unix:" + socket, "--token-file", tokens, "--admin-token-file", admins,
         "--workspace", workspace_.path(), "--no-user-settings", "--drain", "2"},
        config);
    for (int i = 0; i < 200 && !fs::exists(socket); ++i) {
        std::this_thread::sleep_for(50ms);
    }
    ASSERT_TRUE(fs::exists(socket)) << read_file_text(log).value_or("");
    McpHttpSession session(socket, "user-token");
    const HttpReply opened = session.open();
    ASSERT_EQ(opened.status, 200) << opened.body << read_file_text(log).value_or("");
    session.call("bash", {{"command", "echo after > a.txt; echo new > b.txt"}});
    EXPECT_EQ(read_file_text(workspace_.sub("a.txt")).value_or(""), "after\n");

    const std::vector<std::pair<std::string, std::string>> admin = {
        {"Authorization", "Bearer admin-token"}, {"Content-Type", "application/json"}};
    const HttpReply denied =
        http_exchange(socket, "POST", "/admin/sessions/" + session.id() + "/rewind",
                      {{"Authorization", "Bearer user-token"}}, R"({"to":"@1"})");
    EXPECT_EQ(denied.status, 401) << "the operator's endpoint: " << denied.body;
    const HttpReply bad =
        http_exchange(socket, "POST", "/admin/sessions/" + session.id() + "/rewind", admin, "[1]");
    EXPECT_EQ(bad.status, 400) << bad.body;
    const HttpReply missing =
        http_exchange(socket, "POST", "/admin/sessions/nope/rewind", admin, R"({"to":"@1"})");
    EXPECT_EQ(missing.status, 404) << missing.body;
    const HttpReply reply = http_exchange(
        socket, "POST", "/admin/sessions/" + session.id() + "/rewind", admin, R"({"to":"@1"})");
    ASSERT_EQ(reply.status, 200) << reply.body << read_file_text(log).value_or("");
    const auto report = nlohmann::json::parse(reply.body, nullptr, false);
    EXPECT_THAT(report.value("text", ""), HasSubstr("restored (1)"));
    EXPECT_EQ(read_file_text(workspace_.sub("a.txt")).value_or(""), "before\n");
    EXPECT_FALSE(fs::exists(workspace_.sub("b.txt")));
    // The session goes on; an edit of the rewound file needs a fresh read.
    auto edit = session.call(
        "edit", {{"file_path", "a.txt"}, {"old_string", "before"}, {"new_string", "x"}});
    EXPECT_TRUE(edit["result"].value("isError", false)) << edit.dump();
    session.close();
    serve.signal(SIGTERM);
    const RunResult ended = serve.wait();
    EXPECT_EQ(ended.exit_code, 0) << read_file_text(log).value_or("");
}

}  // namespace
}  // namespace stockade::testing
