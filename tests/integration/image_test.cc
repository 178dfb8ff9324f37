// `stockade image` and `run --image` through the real binary, as root and unprivileged: an
// image made of Debian's busybox-static (no libc, nothing of ours) is imported into a store of
// the test's own; a sandbox on it sees its root and not the host's; every hostile archive is
// refused with exit 65 and nothing written outside the store; gc keeps what a sandbox holds.
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/syscall.h"
#include "images/digest.h"
#include "tests/integration/busybox_image.h"
#include "tests/testing/sandbox_harness.h"
#include "tests/unit/images/tar_builder.h"

namespace stockade::testing {
namespace {

using images::Compression;
using images::Entry;
using images::make_tar;
using json = nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int kExitDataError = 65;
constexpr int kExitUnavailable = 77;

bool has_namespaces() {
    const std::string level = auto_isolation_level();
    return level == "full" || level == "namespaces";
}

class ImageTest : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_FALSE(stockade_path().empty()) << "STOCKADE_BIN is not set: run through ctest";
        workspace_ = root_.make_dir("workspace");
        outside_ = root_.make_dir("outside");
        store_ = root_.sub("store");
    }

    RunResult stockade(std::vector<std::string> args, RunConfig config = {}) {
        config.env.push_back("STOCKADE_IMAGE_STORE=" + store_);
        if (config.cwd.empty()) {
            config.cwd = workspace_;
        }
        return run_stockade(args, config);
    }

    std::string busybox_rootfs() { return write_busybox_rootfs(root_); }

    // Imports `file` as `name`; the result of `image import`.
    RunResult import(const std::string& file, const std::string& name,
                     std::vector<std::string> extra = {}) {
        std::vector<std::string> args = {"image", "import", file, "--name", name};
        args.insert(args.end(), extra.begin(), extra.end());
        return stockade(args);
    }

    [[nodiscard]] bool store_has_no_tree() const {
        return !std::filesystem::exists(store_ + "/trees") ||
               std::filesystem::is_empty(store_ + "/trees");
    }

    TempDir root_;
    std::string workspace_;
    std::string outside_;
    std::string store_;
};

#define IMPORT_BUSYBOX_OR_SKIP()                                                    \
    std::string rootfs_ = busybox_rootfs();                                         \
    if (rootfs_.empty()) {                                                          \
        GTEST_SKIP() << kBusybox << " is missing: install Debian's busybox-static"; \
    }                                                                               \
    {                                                                               \
        const RunResult imported_ = import(rootfs_, "busybox:test");                \
        ASSERT_EQ(imported_.exit_code, 0) << imported_.describe();                  \
    }

TEST_F(ImageTest, ImportedImageIsListedAndInspected) {
    IMPORT_BUSYBOX_OR_SKIP();
    struct stat st {};
    ASSERT_EQ(::stat(store_.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    const RunResult list = stockade({"image", "list", "--json"});
    ASSERT_EQ(list.exit_code, 0) << list.describe();
    const json images = json::parse(list.out);
    ASSERT_TRUE(images.is_array());
    bool found = false;
    for (const json& image : images) {
        if (image["name"] == "busybox:test") {
            found = true;
            EXPECT_THAT(images::Digest::parse(image["digest"].get<std::string>()).has_value(),
                        true);
        }
    }
    EXPECT_TRUE(found) << list.out;
    const RunResult inspect = stockade({"image", "inspect", "busybox:test", "--json"});
    ASSERT_EQ(inspect.exit_code, 0) << inspect.describe();
    const json image = json::parse(inspect.out);
    for (const char* key :
         {"name", "digest", "size", "entries", "source", "created", "os_release"}) {
        EXPECT_TRUE(image.contains(key)) << key;
    }
    EXPECT_EQ(image["os_release"], "Stockade busybox test");
    EXPECT_GT(image["size"].get<uint64_t>(), 1000000u);
    EXPECT_EQ(stockade({"image", "inspect", "nope"}).exit_code, 1);
}

TEST_F(ImageTest, RunSeesTheImagesRootAndNotTheHosts) {
    IMPORT_BUSYBOX_OR_SKIP();
    if (!has_namespaces()) {
        GTEST_SKIP() << "no namespace isolation for this caller here: an image needs it";
    }
    const RunResult run = stockade(
        {"run", "--workspace", workspace_, "--image", "busybox:test", "--", "/bin/sh", "-c",
         "cat /etc/os-release /usr/share/marker; ls /usr; "
         "touch /usr/x 2>/dev/null && echo wrote-usr; touch /bin/x 2>/dev/null && echo wrote-bin; "
         "echo ok > " +
             workspace_ + "/from-image; echo uid=$(id -u) owner=$(stat -c %u:%g /bin/busybox); " +
             "chown 0:0 " + workspace_ +
             "/from-image 2>/dev/null && echo chowned-to-root || echo chown-refused"});
    ASSERT_EQ(run.exit_code, 0) << run.describe();
    EXPECT_THAT(run.out, HasSubstr("Stockade busybox test"));
    EXPECT_THAT(run.out, HasSubstr("from the image"));
    EXPECT_THAT(run.out, Not(HasSubstr("lib")));  // the host's /usr/lib is not there
    EXPECT_THAT(run.out, Not(HasSubstr("wrote-")));
    EXPECT_EQ(read_file_text(workspace_ + "/from-image"), "ok\n");
    // Files the image gives root are root's inside where the caller is privileged (an
    // idmapped mount onto an id nothing runs as); elsewhere the overflow ids, or the caller's
    // own where it owns them (an unprivileged import). Never a host user's, and the sandbox
    // user is never root and cannot give a file to root.
    EXPECT_THAT(run.out, Not(HasSubstr("uid=0 ")));
    EXPECT_THAT(run.out, HasSubstr("chown-refused"));
    if (privileged_caller()) {
        EXPECT_THAT(run.out, HasSubstr("owner=0:0")) << run.describe();
    } else {
        EXPECT_THAT(run.out, Not(HasSubstr("owner=0")));
    }
}

// The session worker needs nothing of the image: one `serve --image` session on an image of
// busybox-static alone, every tool called over stdio. grep and glob run the host's ripgrep,
// carried in by descriptor with its loader and libraries: the image has neither rg nor a libc.
TEST_F(ImageTest, ServeSessionToolsWorkOnAnImageWithoutLibc) {
    IMPORT_BUSYBOX_OR_SKIP();
    if (!has_namespaces()) {
        GTEST_SKIP() << "no namespace isolation for this caller here: an image needs it";
    }
    const std::string file = workspace_ + "/notes.txt";
    const std::vector<std::pair<std::string, json>> calls = {
        {"write", {{"file_path", file}, {"content", "one\ntwo\n"}}},
        {"read", {{"file_path", file}}},
        {"edit", {{"file_path", file}, {"old_string", "two"}, {"new_string", "three"}}},
        {"bash", {{"command", "cat /etc/os-release; ls /usr/share"}}},
        {"process", {{"action", "start"}, {"command", "echo started; sleep 1"}}},
        {"glob", {{"pattern", "*.txt"}}},
        {"grep", {{"pattern", "three"}}},
    };
    // A client that sends each call after the answer to the one before (calls of a session
    // may run at once, and these depend on each other), then closes stdin.
    const std::string client = R"py(
import json, subprocess, sys
serve = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
for line in open(sys.argv[1]):
    message = json.loads(line)
    serve.stdin.write(line)
    serve.stdin.flush()
    if "id" in message:
        print(serve.stdout.readline(), end="", flush=True)
serve.stdin.close()
sys.exit(serve.wait())
)py";
    std::string input =
        json{{"jsonrpc", "2.0"},
             {"id", 0},
             {"method", "initialize"},
             {"params",
              {{"protocolVersion", "2025-11-25"},
               {"capabilities", json::object()},
               {"clientInfo", {{"name", "image-test"}, {"version", "1"}}}}}}
            .dump() +
        "\n" + json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}.dump() + "\n";
    for (size_t i = 0; i < calls.size(); ++i) {
        input += json{{"jsonrpc", "2.0"},
                      {"id", i + 1},
                      {"method", "tools/call"},
                      {"params", {{"name", calls[i].first}, {"arguments", calls[i].second}}}}
                     .dump() +
                 "\n";
    }
    const std::string messages = root_.write_file("messages.jsonl", input);
    RunConfig config;
    config.env.push_back("STOCKADE_IMAGE_STORE=" + store_);
    config.cwd = workspace_;
    const RunResult served =
        run_process({"/usr/bin/python3", "-c", client, messages, stockade_path(), "serve",
                     "--workspace", workspace_, "--image", "busybox:test", "--mode", "ci"},
                    config);
    std::map<int, json> results;
    for (const std::string& line : split_lines(served.out)) {
        const json message = json::parse(line, nullptr, false);
        if (message.is_object() && message.contains("id") && message["id"].is_number()) {
            results[message["id"].get<int>()] = message;
        }
    }
    auto text = [&](int id) {
        std::string out;
        if (results.contains(id) && results[id].contains("result")) {
            for (const json& part : results[id]["result"]["content"]) {
                out += part.value("text", "");
            }
        }
        return out;
    };
    auto failed = [&](int id) {
        return !results.contains(id) || !results[id].contains("result") ||
               results[id]["result"].value("isError", false);
    };
    ASSERT_EQ(results.size(), calls.size() + 1) << served.describe();
    for (int id = 1; id <= 7; ++id) {
        EXPECT_FALSE(failed(id)) << calls[static_cast<size_t>(id - 1)].first << ": " << text(id);
    }
    EXPECT_THAT(text(2), HasSubstr("two"));
    EXPECT_EQ(read_file_text(file), "one\nthree\n");
    EXPECT_THAT(text(4), HasSubstr("Stockade busybox test"));
    EXPECT_THAT(text(6), HasSubstr("notes.txt"));
    EXPECT_THAT(text(7), HasSubstr("notes.txt"));
    EXPECT_THAT(text(7), HasSubstr("three"));
}

TEST_F(ImageTest, ImageNeedsAMountNamespace) {
    IMPORT_BUSYBOX_OR_SKIP();
    const RunResult run = stockade({"run", "--workspace", workspace_, "--image", "busybox:test",
                                    "--isolation", "landlock", "--", "/bin/true"});
    EXPECT_EQ(run.exit_code, kExitUnavailable) << run.describe();
    EXPECT_THAT(run.err, HasSubstr("mount namespace"));
    const RunResult missing =
        stockade({"run", "--workspace", workspace_, "--image", "no-such-image", "--", "/bin/true"});
    EXPECT_EQ(missing.exit_code, 2) << missing.describe();
    EXPECT_THAT(missing.err, HasSubstr("no image \"no-such-image\""));
}

// Every hostile archive of issue 23: exit 65, the entry or blob named, nothing outside.
TEST_F(ImageTest, HostileArchivesAreRefusedWithNothingWrittenOutside) {
    const std::string out = outside_;
    struct Case {
        std::string name;
        std::string tar;
        std::string names;  // what the message must name
        std::vector<std::string> extra{};
    };
    Entry bomb = images::file("zeros");
    bomb.zeros = size_t{80} << 20;
    std::vector<Entry> many;
    for (int i = 0; i < 50; ++i) {
        many.push_back(images::file("f" + std::to_string(i)));
    }
    const std::vector<Case> cases = {
        {"dotdot", make_tar({images::dir("a"), images::file("a/../../../outside/x")}), "x"},
        {"absolute-link", make_tar({images::link("up", out), images::file("up/planted", "x")}),
         "planted"},
        {"relative-link-out",
         make_tar({images::link("up", "../../../../../../../.." + out),
                   images::file("up/planted", "x")}),
         "planted"},
        {"hardlink-out", make_tar({images::hardlink("h", out + "/x")}), "h"},
        {"hardlink-missing", make_tar({images::hardlink("h", "missing")}), "missing"},
        {"bomb", make_tar({bomb}, Compression::kGzip), "--max-size", {"--max-size", "64M"}},
        {"entries", make_tar(many), "--max-entries", {"--max-entries", "20"}},
    };
    for (const Case& c : cases) {
        const std::string file = root_.write_file(c.name + ".tar", c.tar);
        const RunResult result = import(file, "hostile-" + c.name, c.extra);
        EXPECT_EQ(result.exit_code, kExitDataError) << c.name << ": " << result.describe();
        EXPECT_THAT(result.err, HasSubstr(c.names)) << c.name;
        EXPECT_TRUE(std::filesystem::is_empty(outside_)) << c.name;
        EXPECT_TRUE(store_has_no_tree()) << c.name;
    }
    // A layout whose layer is not the one its digest names, and one missing its layer.
    const std::string layer = make_tar({images::file("a", "a")});
    const std::string config =
        json{{"architecture", "amd64"},
             {"os", "linux"},
             {"rootfs", {{"type", "layers"}, {"diff_ids", {images::Digest::of(layer).str()}}}}}
            .dump();
    const std::string manifest = json{
        {"schemaVersion", 2},
        {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
        {"config",
         {{"mediaType", "application/vnd.oci.image.config.v1+json"},
          {"digest", images::Digest::of(config).str()},
          {"size", config.size()}}},
        {"layers",
         {{{"mediaType", "application/vnd.oci.image.layer.v1.tar"},
           {"digest", images::Digest::of(layer).str()},
           {"size", layer.size()}}}}}.dump();
    const std::string index = json{{"schemaVersion", 2},
                                   {"manifests",
                                    {{{"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                                      {"digest", images::Digest::of(manifest).str()},
                                      {"size", manifest.size()}}}}}
                                  .dump();
    for (const std::string kind : {"mismatch", "missing"}) {
        const std::string dir = root_.make_dir("layout-" + kind);
        root_.write_file("layout-" + kind + "/oci-layout", R"({"imageLayoutVersion":"1.0.0"})");
        root_.write_file("layout-" + kind + "/index.json", index);
        std::filesystem::create_directories(dir + "/blobs/sha256");
        auto blob = [&](const std::string& bytes, const std::string& as) {
            root_.write_file(
                "layout-" + kind + "/blobs/sha256/" + std::string(images::Digest::of(bytes).hex()),
                as);
        };
        blob(config, config);
        blob(manifest, manifest);
        if (kind == "mismatch") {
            blob(layer, make_tar({images::file("evil", "x")}));
        }
        const RunResult result = import(dir, "hostile-" + kind);
        EXPECT_EQ(result.exit_code, kExitDataError) << kind << ": " << result.describe();
        EXPECT_THAT(result.err, HasSubstr(images::Digest::of(layer).str())) << kind;
        EXPECT_TRUE(store_has_no_tree()) << kind;
    }
    const RunResult list = stockade({"image", "list", "--json"});
    EXPECT_THAT(list.out, Not(HasSubstr("hostile")));
}

TEST_F(ImageTest, GcKeepsWhatARunningSandboxHolds) {
    IMPORT_BUSYBOX_OR_SKIP();
    if (!has_namespaces()) {
        GTEST_SKIP() << "no namespace isolation for this caller here: an image needs it";
    }
    RunConfig config;
    config.env.push_back("STOCKADE_IMAGE_STORE=" + store_);
    config.cwd = workspace_;
    ChildProcess sleeper =
        start_stockade({"run", "--workspace", workspace_, "--image", "busybox:test", "--",
                        "/bin/sh", "-c", "touch started; sleep 30"},
                       config);
    for (int i = 0; i < 500 && !std::filesystem::exists(workspace_ + "/started"); ++i) {
        ::usleep(20000);
    }
    ASSERT_TRUE(std::filesystem::exists(workspace_ + "/started"));
    ASSERT_EQ(stockade({"image", "rm", "busybox:test"}).exit_code, 0);
    const RunResult kept = stockade({"image", "gc", "--json"});
    ASSERT_EQ(kept.exit_code, 0) << kept.describe();
    EXPECT_EQ(json::parse(kept.out)["trees_in_use"], 1) << kept.out;
    EXPECT_FALSE(store_has_no_tree());
    sleeper.signal(SIGTERM);
    (void)sleeper.wait();
    const RunResult removed = stockade({"image", "gc", "--json"});
    ASSERT_EQ(removed.exit_code, 0) << removed.describe();
    EXPECT_EQ(json::parse(removed.out)["trees_removed"], 1) << removed.out;
    EXPECT_TRUE(store_has_no_tree());
}

}  // namespace
}  // namespace stockade::testing
