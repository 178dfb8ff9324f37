// pull_to_layout against real registries on 127.0.0.1: Debian's docker-registry (Distribution
// 2.8) with TLS from a test CA and basic auth from an htpasswd file, another one on plain HTTP,
// and a hostile one (a Python script) that lies in the ways a registry can. Images are made with
// umoci and pushed with skopeo; what we pull is compared with what `skopeo copy docker://…
// oci:…` writes. Missing tools skip the test and say which.
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>

#include "common/unique_fd.h"
#include "images/import.h"
#include "images/registry_client.h"
#include "images/store.h"
#include "tests/testing/fd_leak_checker.h"
#include "tests/testing/matchers.h"

namespace stockade::images {
namespace {

namespace fs = std::filesystem;
using ::stockade::testing::HasErrc;
using ::stockade::testing::IsOk;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kUser = "tester";
constexpr const char* kPassword = "s3cret-Pa55";

struct Shell {
    int status = -1;
    std::string output;
};

// Runs `command` with sh, stdout and stderr together.
Shell sh(const std::string& command) {
    Shell out;
    FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
    if (pipe == nullptr) {
        return out;
    }
    std::array<char, 4096> buffer{};
    size_t n = 0;
    while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
        out.output.append(buffer.data(), n);
    }
    const int status = ::pclose(pipe);
    out.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return out;
}

// Commands that failed, for the tests to report (setup runs outside any one test).
std::string failed_commands;  // NOLINT(cert-err58-cpp)

std::string must(const std::string& command) {
    Shell r = sh(command);
    if (r.status != 0) {
        failed_commands += fmt::format("$ {}\n{}\n", command, r.output);
    }
    return r.output;
}

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void write_text(const fs::path& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

uint16_t free_port() {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0 ||          // NOLINT
        ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {  // NOLINT
        return 0;
    }
    return ntohs(addr.sin_port);
}

bool port_open(uint16_t port) {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    return ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;  // NOLINT
}

// A child process, killed and reaped when this goes.
class Child {
public:
    Child() = default;
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;
    ~Child() { stop(); }

    bool start(const std::vector<std::string>& argv, const fs::path& log) {
        pid_ = ::fork();
        if (pid_ == 0) {
            const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            if (fd >= 0) {
                ::dup2(fd, 1);
                ::dup2(fd, 2);
            }
            std::vector<char*> args;
            for (const auto& a : argv) {
                args.push_back(const_cast<char*>(a.c_str()));
            }
            args.push_back(nullptr);
            ::execvp(args[0], args.data());
            ::_exit(127);
        }
        return pid_ > 0;
    }
    void stop() {
        if (pid_ > 0) {
            ::kill(pid_, SIGTERM);
            int status = 0;
            ::waitpid(pid_, &status, 0);
            pid_ = -1;
        }
    }

private:
    pid_t pid_ = -1;
};

bool wait_for_port(uint16_t port) {
    for (int i = 0; i < 200; ++i) {
        if (port_open(port)) {
            return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
}

// A registry that misbehaves, chosen by the repository's name. Plain HTTP on 127.0.0.1.
constexpr const char* kHostileRegistry = R"PY(
import base64, hashlib, http.server, json, sys, time, urllib.parse
port = int(sys.argv[1])
layer = b"x" * 1000
def digest(b): return "sha256:" + hashlib.sha256(b).hexdigest()
config = json.dumps({"architecture": "amd64", "os": "linux",
                     "rootfs": {"type": "layers", "diff_ids": [digest(layer)]}}).encode()
manifest = json.dumps({"schemaVersion": 2,
    "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
               "digest": digest(config), "size": len(config)},
    "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                "digest": digest(layer), "size": len(layer)}]}).encode()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def send(self, body, ctype="application/vnd.oci.image.manifest.v1+json", length=None):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        self.wfile.write(body)
    def endless(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.oci.image.manifest.v1+json")
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            while True: self.wfile.write(b" " * 65536)
        except OSError: pass
    def empty(self, status, headers={}):
        self.send_response(status)
        for k, v in headers.items(): self.send_header(k, v)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def do_GET(self):
        if self.path.startswith("/token?"):
            # A token service: basic credentials in, a bearer token out.
            query = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
            basic = "Basic " + base64.b64encode(b"tester:token-Pa55").decode()
            if self.headers.get("Authorization") != basic:
                return self.empty(401)
            if query != {"service": ["hostile"], "scope": ["repository:bearer:pull"]}:
                return self.empty(400)
            return self.send(json.dumps({"token": "tok123"}).encode(), "application/json")
        parts = self.path.split("/")
        repo, kind = parts[2], parts[3]
        if repo == "bearer" and self.headers.get("Authorization") != "Bearer tok123":
            return self.empty(401, {"WWW-Authenticate":
                'Bearer realm="http://127.0.0.1:%d/token",service="hostile",'
                'scope="repository:bearer:pull"' % port})
        if kind == "blobs" and repo == "redirect":
            return self.empty(307, {"Location": "/v2/good/blobs/" + parts[4]})
        if kind == "blobs" and repo == "redirectloop":
            return self.empty(302, {"Location": self.path})
        if repo == "hugeheader":
            self.send_response(200)
            for i in range(4000): self.send_header("X-Filler-%d" % i, "y" * 40)
            self.end_headers(); return
        if repo == "badjson": return self.send(b"{\"schemaVersion\": 2, ")
        if repo == "endless" and kind == "manifests": return self.endless()
        if repo == "stall":
            time.sleep(5); return self.send(manifest)
        if kind == "manifests": return self.send(manifest)
        if parts[4] == digest(config): return self.send(config, "application/octet-stream")
        if repo == "longblob": return self.send(layer + b"more", "application/octet-stream")
        if repo == "shortblob":
            self.send_response(200); self.send_header("Connection", "close"); self.end_headers()
            self.wfile.write(layer[:500]); return
        if repo == "endlessblob": return self.endless()
        return self.send(layer, "application/octet-stream")
server = http.server.ThreadingHTTPServer(("127.0.0.1", port), H)
server.serve_forever()
)PY";

// Everything the tests share: the CA, the registries, the images in them.
struct Registries {
    std::string skip_reason;
    fs::path dir;
    uint16_t tls_port = 0;
    uint16_t plain_port = 0;
    uint16_t hostile_port = 0;
    Child tls_registry;
    Child plain_registry;
    Child hostile_registry;
    std::string amd64_digest;  // the manifest of test/app:v1 (linux/amd64)
    std::string arm64_digest;  // the manifest of test/app:v1-arm64
    std::string index_digest;  // test/multi:v1, an index of both

    std::string tls(const std::string& path) const {
        return fmt::format("127.0.0.1:{}/{}", tls_port, path);
    }
    std::string plain(const std::string& path) const {
        return fmt::format("127.0.0.1:{}/{}", plain_port, path);
    }
    std::string hostile(const std::string& path) const {
        return fmt::format("127.0.0.1:{}/{}", hostile_port, path);
    }

    void setup();
    bool start_registry(Child& child, const std::string& name, uint16_t port, bool secure);
};

std::string missing_tools() {
    std::string missing;
    for (const char* tool :
         {"docker-registry", "skopeo", "umoci", "htpasswd", "openssl", "curl", "python3"}) {
        if (sh(fmt::format("command -v {}", tool)).status != 0) {
            missing += missing.empty() ? tool : std::string(", ") + tool;
        }
    }
    return missing;
}

bool Registries::start_registry(Child& child, const std::string& name, uint16_t port, bool secure) {
    std::string config = fmt::format(
        "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n"
        "storage:\n  filesystem:\n    rootdirectory: {}\n"
        "http:\n  addr: 127.0.0.1:{}\n",
        (dir / (name + "-storage")).string(), port);
    if (secure) {
        config += fmt::format(
            "  tls:\n    certificate: {0}/server.pem\n    key: {0}/server.key\n"
            "auth:\n  htpasswd:\n    realm: stockade-test\n    path: {0}/htpasswd\n",
            dir.string());
    }
    write_text(dir / (name + ".yml"), config);
    if (!child.start({"docker-registry", "serve", (dir / (name + ".yml")).string()},
                     dir / (name + ".log"))) {
        return false;
    }
    return wait_for_port(port);
}

void Registries::setup() {
    if (auto missing = missing_tools(); !missing.empty()) {
        skip_reason = "not installed: " + missing + " (debian-packages.txt lists them)";
        return;
    }
    char dir_template[] = "/tmp/registry_pull_test.XXXXXX";
    dir = ::mkdtemp(dir_template);
    const std::string d = dir.string();
    // A CA and a server certificate for 127.0.0.1, as tests/network/upstreams.py makes them.
    const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    must(
        fmt::format("cd {0} && openssl req -x509 {1} -keyout ca.key -out ca.pem -days 30 "
                    "-sha256 -subj '/CN=Stockade Test CA' "
                    "-addext basicConstraints=critical,CA:TRUE "
                    "-addext keyUsage=critical,keyCertSign,cRLSign",
                    d, ec));
    must(
        fmt::format("cd {0} && openssl req -new {1} -keyout server.key -out server.csr "
                    "-subj /CN=stockade-test-registry",
                    d, ec));
    write_text(dir / "server.ext",
               "basicConstraints=critical,CA:FALSE\n"
               "keyUsage=critical,digitalSignature,keyEncipherment\n"
               "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1\n");
    must(
        fmt::format("cd {} && openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key "
                    "-set_serial 4242 -days 30 -sha256 -extfile server.ext -out server.pem",
                    d));
    fs::create_directories(dir / "certs.d");
    fs::copy_file(dir / "ca.pem", dir / "certs.d" / "ca.crt");
    must(fmt::format("htpasswd -Bbc {}/htpasswd {} {}", d, kUser, kPassword));

    tls_port = free_port();
    plain_port = free_port();
    hostile_port = free_port();
    if (!start_registry(tls_registry, "tls", tls_port, true) ||
        !start_registry(plain_registry, "plain", plain_port, false)) {
        // Installed but broken: a failure, not a skip.
        failed_commands += "docker-registry did not start: " + read_text(dir / "tls.log") +
                           read_text(dir / "plain.log");
        return;
    }
    write_text(dir / "hostile.py", kHostileRegistry);
    if (!hostile_registry.start(
            {"python3", (dir / "hostile.py").string(), std::to_string(hostile_port)},
            dir / "hostile.log") ||
        !wait_for_port(hostile_port)) {
        failed_commands += "the hostile registry did not start: " + read_text(dir / "hostile.log");
        return;
    }

    // Two images made by umoci: linux/amd64 with two layers, and its arm64 twin.
    const std::string rootless = ::geteuid() == 0 ? "" : "--rootless";
    fs::create_directories(dir / "src" / "etc");
    write_text(dir / "src" / "etc" / "os-release", "ID=stockade-test\n");
    write_text(dir / "src" / "hello.txt", "hello from the registry test\n");
    must(
        fmt::format("cd {0} && umoci init --layout oci && umoci new --image oci:v1 && "
                    "umoci insert {1} --image oci:v1 src/etc /etc && "
                    "umoci insert {1} --image oci:v1 src/hello.txt /hello.txt && "
                    "umoci config --image oci:v1 --architecture arm64 --tag v1-arm64",
                    d, rootless));
    const auto layout_index = nlohmann::json::parse(read_text(dir / "oci" / "index.json"));
    nlohmann::json entries = nlohmann::json::array();
    for (const auto& m : layout_index["manifests"]) {
        const std::string name = m["annotations"]["org.opencontainers.image.ref.name"];
        nlohmann::json entry = {
            {"mediaType", m["mediaType"]}, {"digest", m["digest"]}, {"size", m["size"]}};
        if (name == "v1") {
            amd64_digest = m["digest"];
            entry["platform"] = {{"os", "linux"}, {"architecture", "amd64"}};
        } else {
            arm64_digest = m["digest"];
            entry["platform"] = {{"os", "linux"}, {"architecture", "arm64"}};
        }
        entries.push_back(entry);
    }
    // arm64 first, so picking the first entry would be wrong.
    std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
        return a["platform"]["architecture"] > b["platform"]["architecture"];
    });
    const std::string creds = fmt::format("{}:{}", kUser, kPassword);
    for (const char* tag : {"v1", "v1-arm64"}) {
        must(
            fmt::format("skopeo copy -q --dest-cert-dir {0}/certs.d --dest-creds {1} "
                        "oci:{0}/oci:{2} docker://{3}",
                        d, creds, tag, tls(std::string("test/app:") + tag)));
        must(
            fmt::format("skopeo copy -q --dest-cert-dir {0}/certs.d --dest-creds {1} "
                        "oci:{0}/oci:{2} docker://{3}",
                        d, creds, tag, tls(std::string("test/multi:") + tag)));
    }
    must(fmt::format("skopeo copy -q --dest-tls-verify=false oci:{0}/oci:v1 docker://{1}", d,
                     plain("test/app:v1")));
    // The index, put with curl as a registry client would.
    const std::string index = nlohmann::json{
        {"schemaVersion", 2},
        {"mediaType", "application/vnd.oci.image.index.v1+json"},
        {"manifests", entries}}.dump();
    write_text(dir / "multi-index.json", index);
    index_digest = Digest::of(index).str();
    must(
        fmt::format("curl -sSf --cacert {0}/ca.pem -u {1} -X PUT "
                    "-H 'Content-Type: application/vnd.oci.image.index.v1+json' "
                    "--data-binary @{0}/multi-index.json "
                    "https://127.0.0.1:{2}/v2/test/multi/manifests/v1",
                    d, creds, tls_port));
}

Registries* registries = nullptr;

class RegistryPullTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        registries = new Registries();  // NOLINT(cppcoreguidelines-owning-memory)
        registries->setup();
    }
    static void TearDownTestSuite() {
        if (registries != nullptr && !registries->dir.empty()) {
            registries->tls_registry.stop();
            registries->plain_registry.stop();
            registries->hostile_registry.stop();
            fs::remove_all(registries->dir);
        }
        delete registries;  // NOLINT(cppcoreguidelines-owning-memory)
        registries = nullptr;
    }
    void SetUp() override {
        if (!registries->skip_reason.empty()) {
            GTEST_SKIP() << registries->skip_reason;
        }
        ASSERT_EQ(failed_commands, "") << "setting up the registries failed";
        layout_ = registries->dir / fmt::format("layout-{}", counter_++);
        fs::create_directories(layout_);
        layout_fd_ = UniqueFd(::open(layout_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    }

    PullOptions secure_options() const {
        return PullOptions{
            .credentials = RegistryCredentials{.username = kUser, .password = kPassword},
            .ca_file = (registries->dir / "ca.pem").string(),
            .platform = Platform{.os = "linux", .architecture = "amd64"}};
    }

    Result<PullResult> pull(const std::string& reference, const PullOptions& options) {
        auto parsed = parse_reference(reference);
        EXPECT_THAT(parsed, IsOk());
        if (!parsed) {
            return parsed.error();
        }
        return pull_to_layout(*parsed, options, layout_fd_.get());
    }

    // The manifest digest and the blobs (name -> bytes) of an OCI layout.
    static std::pair<std::string, std::map<std::string, std::string>> layout_contents(
        const fs::path& layout) {
        std::map<std::string, std::string> blobs;
        for (const auto& entry : fs::directory_iterator(layout / "blobs" / "sha256")) {
            blobs[entry.path().filename().string()] = read_text(entry.path());
        }
        const auto index = nlohmann::json::parse(read_text(layout / "index.json"));
        return {index["manifests"][0]["digest"].get<std::string>(), blobs};
    }

    bool layout_has_index() const { return fs::exists(layout_ / "index.json"); }

    static inline int counter_ = 0;
    fs::path layout_;
    UniqueFd layout_fd_;
};

TEST_F(RegistryPullTest, PullsByTagTheSameLayoutAsSkopeo) {
    ::stockade::testing::FdLeakChecker fds;
    auto result = pull(registries->tls("test/app:v1"), secure_options());
    ASSERT_THAT(result, IsOk());
    EXPECT_EQ(result->manifest.digest.str(), registries->amd64_digest);
    EXPECT_EQ(result->manifest.annotations.at("org.opencontainers.image.ref.name"), "v1");
    EXPECT_EQ(result->layers.size(), 2U);
    EXPECT_EQ(result->blobs_skipped, 0U);
    EXPECT_GT(result->bytes_fetched, 0U);
    EXPECT_THAT(parse_oci_layout(read_text(layout_ / "oci-layout")), IsOk());
    auto index = parse_layout_index(read_text(layout_ / "index.json"));
    ASSERT_THAT(index, IsOk());
    ASSERT_EQ(index->manifests.size(), 1U);
    EXPECT_EQ(index->manifests[0], result->manifest);

    const fs::path theirs = registries->dir / "skopeo-layout";
    must(
        fmt::format("skopeo copy -q --src-cert-dir {0}/certs.d --src-creds {1}:{2} "
                    "docker://{3} oci:{4}:v1",
                    registries->dir.string(), kUser, kPassword, registries->tls("test/app:v1"),
                    theirs.string()));
    const auto ours = layout_contents(layout_);
    const auto skopeo = layout_contents(theirs);
    EXPECT_EQ(ours.first, skopeo.first);
    std::set<std::string> our_names;
    std::set<std::string> their_names;
    for (const auto& [name, bytes] : ours.second) {
        our_names.insert(name);
        EXPECT_EQ(Digest::of(bytes).hex(), name);
    }
    for (const auto& [name, bytes] : skopeo.second) {
        their_names.insert(name);
    }
    EXPECT_EQ(our_names, their_names);
    EXPECT_EQ(ours.second, skopeo.second);
    EXPECT_EQ(failed_commands, "");
}

TEST_F(RegistryPullTest, PullsByThePinnedDigest) {
    auto result = pull(registries->tls("test/app@" + registries->amd64_digest), secure_options());
    ASSERT_THAT(result, IsOk());
    EXPECT_EQ(result->manifest.digest.str(), registries->amd64_digest);
    EXPECT_EQ(result->manifest.annotations.at("org.opencontainers.image.ref.name"),
              registries->amd64_digest);
    EXPECT_TRUE(layout_has_index());
}

TEST_F(RegistryPullTest, AWrongPinnedDigestIsRefusedAndLeavesNoIndex) {
    // Over a layout an earlier pull completed: its index.json goes too.
    ASSERT_THAT(pull(registries->tls("test/app:v1"), secure_options()), IsOk());
    ASSERT_TRUE(layout_has_index());
    const std::string wrong = Digest::of("not the image").str();
    auto result = pull(registries->tls("test/app:v1@" + wrong), secure_options());
    ASSERT_THAT(result, HasErrc(Errc::kNotFound));
    EXPECT_THAT(result.error().message, HasSubstr(wrong));
    EXPECT_FALSE(layout_has_index());
}

TEST_F(RegistryPullTest, AManifestThatIsNotThePinnedOneIsRefusedNamingBoth) {
    // The hostile registry serves its one manifest for any reference.
    const std::string wrong = Digest::of("not the image").str();
    PullOptions options{
        .insecure_registries = {fmt::format("127.0.0.1:{}", registries->hostile_port)},
        .platform = Platform{.os = "linux", .architecture = "amd64"}};
    auto result = pull(registries->hostile("lying@" + wrong), options);
    ASSERT_THAT(result, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(result.error().message, HasSubstr(wrong));
    EXPECT_THAT(result.error().message, HasSubstr("not the pinned"));
    RecordProperty("message", result.error().message);
    EXPECT_FALSE(layout_has_index());
}

TEST_F(RegistryPullTest, AWrongPasswordIsAClearRefusalWithoutThePassword) {
    PullOptions options = secure_options();
    options.credentials->password = "wrong-Pa55word";
    auto result = pull(registries->tls("test/app:v1"), options);
    ASSERT_THAT(result, HasErrc(Errc::kPermissionDenied));
    EXPECT_THAT(result.error().message, HasSubstr("401"));
    EXPECT_THAT(result.error().message, HasSubstr("refused the credentials"));
    RecordProperty("message", result.error().message);
    EXPECT_THAT(result.error().message, Not(HasSubstr("wrong-Pa55word")));
    EXPECT_THAT(result.error().message, Not(HasSubstr(kPassword)));

    options.credentials.reset();
    result = pull(registries->tls("test/app:v1"), options);
    ASSERT_THAT(result, HasErrc(Errc::kPermissionDenied));
    EXPECT_THAT(result.error().message, HasSubstr("none were found"));
    EXPECT_FALSE(layout_has_index());
}

TEST_F(RegistryPullTest, AnUnknownCaIsRefused) {
    PullOptions options = secure_options();
    options.ca_file.reset();
    auto result = pull(registries->tls("test/app:v1"), options);
    ASSERT_THAT(result, HasErrc(Errc::kUnavailable));
    EXPECT_THAT(result.error().message, HasSubstr("--ca-file"));
}

TEST_F(RegistryPullTest, PlainHttpOnlyWithTheInsecureOption) {
    PullOptions options{.platform = Platform{.os = "linux", .architecture = "amd64"}};
    auto refused = pull(registries->plain("test/app:v1"), options);
    ASSERT_FALSE(refused.has_value());
    RecordProperty("message", refused.error().message);
    EXPECT_FALSE(layout_has_index());

    options.insecure_registries = {fmt::format("127.0.0.1:{}", registries->plain_port)};
    auto result = pull(registries->plain("test/app:v1"), options);
    ASSERT_THAT(result, IsOk());
    EXPECT_EQ(result->manifest.digest.str(), registries->amd64_digest);
}

TEST_F(RegistryPullTest, AnIndexIsNarrowedToAmd64) {
    auto result = pull(registries->tls("test/multi:v1"), secure_options());
    ASSERT_THAT(result, IsOk());
    EXPECT_EQ(result->index_digest->str(), registries->index_digest);
    EXPECT_EQ(result->manifest.digest.str(), registries->amd64_digest);
    EXPECT_NE(registries->arm64_digest, registries->amd64_digest);

    // The arm64 manifest alone is refused for an amd64 host: its config says arm64.
    auto arm = pull(registries->tls("test/multi:v1-arm64"), secure_options());
    ASSERT_THAT(arm, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(arm.error().message, HasSubstr("linux/arm64"));
}

TEST_F(RegistryPullTest, BlobsTheStoreHasAreNotFetched) {
    PullOptions options = secure_options();
    std::vector<Digest> asked;
    options.have_blob = [&asked](const Digest& digest) {
        asked.push_back(digest);
        return true;
    };
    auto result = pull(registries->tls("test/app:v1"), options);
    ASSERT_THAT(result, IsOk());
    EXPECT_EQ(result->blobs_skipped, 3U);  // the config and two layers
    EXPECT_EQ(asked.size(), 3U);
    // Only the manifest is in the layout.
    const auto contents = layout_contents(layout_);
    ASSERT_EQ(contents.second.size(), 1U);
    EXPECT_EQ("sha256:" + contents.second.begin()->first, registries->amd64_digest);
}

// What a tree holds, for comparing two of them: relative path -> type, mode (without setuid and
// setgid, which the store strips) and content or link text.
std::map<std::string, std::string> tree_listing(const fs::path& root) {
    std::map<std::string, std::string> out;
    for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator();
         ++it) {
        const fs::path& path = it->path();
        struct stat st {};
        if (::lstat(path.c_str(), &st) != 0) {
            continue;
        }
        const std::string rel = fs::relative(path, root).string();
        const unsigned mode = st.st_mode & 01777;
        if (S_ISLNK(st.st_mode)) {
            out[rel] = "link " + fs::read_symlink(path).string();
        } else if (S_ISDIR(st.st_mode)) {
            out[rel] = fmt::format("dir {:o}", mode);
        } else if (S_ISREG(st.st_mode)) {
            out[rel] = fmt::format("file {:o} {}", mode, read_text(path));
        }
    }
    return out;
}

// The whole way: a pull into the store's layout, imported as any layout is, gives the image's
// own digest and the tree `umoci unpack` makes of the same image.
TEST_F(RegistryPullTest, APulledImageIsTheTreeUmociUnpacks) {
    auto store =
        ImageStore::open((registries->dir / fmt::format("store-{}", counter_++)).string(), true);
    ASSERT_THAT(store, IsOk());
    auto pulled = pull(registries->tls("test/app:v1"), secure_options());
    ASSERT_THAT(pulled, IsOk());
    // As `image pull` imports: the client verified the blobs, which are moved, not copied.
    auto imported = import_layout(*store, layout_fd_.get(), "", "docker://test/app:v1",
                                  ImportOptions{.name = "app:v1", .layout_verified = true});
    ASSERT_THAT(imported, IsOk());
    EXPECT_EQ(imported->image.digest.str(), registries->amd64_digest);
    for (const Digest& layer : imported->image.layers) {
        const std::string hex(layer.hex());
        EXPECT_NE(::faccessat(layout_fd_.get(), ("blobs/sha256/" + hex).c_str(), F_OK, 0), 0)
            << "layer " << hex << " was copied, not moved";
        EXPECT_TRUE(store->has_blob(layer));
    }
    // The umoci layout the registry was filled from, imported directly: the same image.
    auto direct = import_image(*store, (registries->dir / "oci").string() + ":v1",
                               ImportOptions{.name = "direct"});
    ASSERT_THAT(direct, IsOk());
    EXPECT_EQ(direct->image.digest, imported->image.digest);
    EXPECT_TRUE(direct->already_present);

    const fs::path bundle = registries->dir / fmt::format("bundle-{}", counter_++);
    must(fmt::format("umoci unpack {} --image {}:v1 {}", ::geteuid() == 0 ? "" : "--rootless",
                     (registries->dir / "oci").string(), bundle.string()));
    auto umoci = tree_listing(bundle / "rootfs");
    auto ours = tree_listing(fs::path(store->dir().path()) / "trees" /
                             std::string(imported->image.digest.hex()));
    // The placeholders our importer adds for the files a sandbox generates.
    for (const char* name : kGeneratedEtcFiles) {
        if (!umoci.contains(std::string("etc/") + name)) {
            ours.erase(std::string("etc/") + name);
        }
    }
    EXPECT_EQ(ours, umoci);
    EXPECT_THAT(ours["hello.txt"], HasSubstr("hello from the registry test"));

    // The same image as skopeo writes it for `docker load` (a docker-archive: uncompressed
    // layers, its own manifest.json): another digest, the same tree. Its layers, hashed as
    // they were extracted, become blobs without a second copy.
    const fs::path archive = registries->dir / fmt::format("docker-{}.tar", counter_++);
    must(fmt::format("skopeo copy -q oci:{}:v1 docker-archive:{}",
                     (registries->dir / "oci").string(), archive.string()));
    auto from_archive = import_image(*store, archive.string(), ImportOptions{.name = "archive"});
    ASSERT_THAT(from_archive, IsOk());
    EXPECT_FALSE(from_archive->already_present);
    for (const Digest& layer : from_archive->image.layers) {
        EXPECT_TRUE(store->has_blob(layer)) << layer.str();
    }
    auto archived = tree_listing(fs::path(store->dir().path()) / "trees" /
                                 std::string(from_archive->image.digest.hex()));
    for (const char* name : kGeneratedEtcFiles) {
        if (!umoci.contains(std::string("etc/") + name)) {
            archived.erase(std::string("etc/") + name);
        }
    }
    EXPECT_EQ(archived, umoci);
}

// The hostile registry, one misbehaviour per repository.
struct Hostile {
    const char* repository;
    Errc code;
    const char* message;
};

class HostileRegistryTest : public RegistryPullTest,
                            public ::testing::WithParamInterface<Hostile> {};

TEST_P(HostileRegistryTest, IsRefusedWithTheUrlAndTheReason) {
    const Hostile& h = GetParam();
    PullOptions options{
        .insecure_registries = {fmt::format("127.0.0.1:{}", registries->hostile_port)},
        .platform = Platform{.os = "linux", .architecture = "amd64"},
        .io_timeout = std::chrono::seconds(1)};
    auto result = pull(registries->hostile(std::string(h.repository) + ":v1"), options);
    ASSERT_THAT(result, HasErrc(h.code));
    RecordProperty("message", result.error().message);
    EXPECT_THAT(result.error().message,
                HasSubstr(fmt::format("http://127.0.0.1:{}/v2/{}/", registries->hostile_port,
                                      h.repository)));
    EXPECT_THAT(result.error().message, HasSubstr(h.message));
    EXPECT_FALSE(layout_has_index());
}

INSTANTIATE_TEST_SUITE_P(
    Misbehaviours, HostileRegistryTest,
    ::testing::Values(Hostile{"hugeheader", Errc::kResourceExhausted, "header is larger than"},
                      Hostile{"badjson", Errc::kInvalidArgument, "JSON"},
                      Hostile{"endless", Errc::kResourceExhausted, "larger than the 4194304 bytes"},
                      Hostile{"stall", Errc::kDeadlineExceeded, "timed out"},
                      Hostile{"longblob", Errc::kInvalidArgument, "announces 1004 bytes"},
                      Hostile{"shortblob", Errc::kInvalidArgument, "has 500 bytes, not the 1000"},
                      Hostile{"endlessblob", Errc::kResourceExhausted,
                              "larger than the 1000 bytes"},
                      Hostile{"redirectloop", Errc::kUnavailable, "more than 5 redirects"}),
    [](const ::testing::TestParamInfo<Hostile>& param) {
        return std::string(param.param.repository);
    });

TEST_F(RegistryPullTest, TheHostileRegistrysGoodRepositoryPulls) {
    // So the refusals above are the misbehaviours, not the script.
    PullOptions options{
        .insecure_registries = {fmt::format("127.0.0.1:{}", registries->hostile_port)},
        .platform = Platform{.os = "linux", .architecture = "amd64"}};
    auto result = pull(registries->hostile("good:v1"), options);
    ASSERT_THAT(result, IsOk());
    EXPECT_EQ(result->layers.size(), 1U);
}

}  // namespace
}  // namespace stockade::images

namespace stockade::images {
namespace {

TEST_F(RegistryPullTest, RedirectedBlobsAreFollowed) {
    PullOptions options{
        .insecure_registries = {fmt::format("127.0.0.1:{}", registries->hostile_port)},
        .platform = Platform{.os = "linux", .architecture = "amd64"}};
    auto result = pull(registries->hostile("redirect:v1"), options);
    ASSERT_THAT(result, IsOk());
    EXPECT_EQ(result->layers.size(), 1U);
}

TEST_F(RegistryPullTest, ABearerTokenComesFromTheRealmWithBasicCredentials) {
    PullOptions options{
        .credentials = RegistryCredentials{.username = kUser, .password = "token-Pa55"},
        .insecure_registries = {fmt::format("127.0.0.1:{}", registries->hostile_port)},
        .platform = Platform{.os = "linux", .architecture = "amd64"}};
    auto result = pull(registries->hostile("bearer:v1"), options);
    ASSERT_THAT(result, IsOk());

    options.credentials->password = "wrong-Pa55word";
    result = pull(registries->hostile("bearer:v1"), options);
    ASSERT_THAT(result, HasErrc(Errc::kPermissionDenied));
    RecordProperty("message", result.error().message);
    EXPECT_THAT(result.error().message, HasSubstr("get a registry token"));
    EXPECT_THAT(result.error().message, HasSubstr("/token"));
    EXPECT_THAT(result.error().message, Not(HasSubstr("wrong-Pa55word")));
}

}  // namespace
}  // namespace stockade::images
