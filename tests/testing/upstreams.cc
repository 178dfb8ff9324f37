#include "tests/testing/upstreams.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "upstreams_py.h"  // kUpstreamsPy: tests/network/upstreams.py (generated)

namespace stockade::testing {

Upstreams::Upstreams() {
    const std::string script = dir_.write_file("upstreams.py", kUpstreamsPy, 0755);
    const std::string work = dir_.make_dir("site");
    pid_ = ::fork();
    if (pid_ < 0) {
        error_ = "fork failed";
        return;
    }
    if (pid_ == 0) {
        // stderr stays the test's: a server that fails to start says why there.
        const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null >= 0) {
            ::dup2(null, 0);
            ::dup2(null, 1);
        }
        ::execl("/usr/bin/python3", "python3", script.c_str(), "--dir", work.c_str(),
                "--die-with-parent", static_cast<char*>(nullptr));
        ::_exit(127);
    }
    const std::string state = work + "/upstreams.json";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
        if (auto text = read_file_text(state)) {
            const auto info = nlohmann::json::parse(*text, nullptr, false);
            if (info.is_object()) {
                https_port_ = info.value("https_port", 0);
                http_port_ = info.value("http_port", 0);
                return;
            }
        }
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            error_ = "tests/network/upstreams.py exited before it listened (its stderr says why)";
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    error_ = "tests/network/upstreams.py did not listen within 60 s";
}

Upstreams::~Upstreams() {
    if (pid_ > 0) {
        ::kill(pid_, SIGTERM);
        int status = 0;
        for (int i = 0; i < 100 && ::waitpid(pid_, &status, WNOHANG) == 0; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        ::kill(pid_, SIGKILL);
        (void)::waitpid(pid_, &status, 0);
    }
}

std::string Upstreams::ca_pem() const {
    return read_file_text(dir_.sub("site/ca.pem")).value_or("");
}

Upstreams& shared_upstreams() {
    static Upstreams upstreams;
    return upstreams;
}

std::string allowlist_unavailable() {
    const std::string level = auto_isolation_level();
    if (level == "full" || level == "namespaces") {
        return "";
    }
    return "--network allowlist needs a network namespace; this host gives isolation level \"" +
           level + "\"";
}

void AllowlistTest::SetUp() {
    if (const std::string why = allowlist_unavailable(); !why.empty()) {
        GTEST_SKIP() << why;
    }
    upstreams_ = &shared_upstreams();
    ASSERT_EQ(upstreams_->error(), "");
    workspace_.write_file("ca.pem", upstreams_->ca_pem());
}

std::vector<std::string> Upstreams::resolve_flags(const std::vector<std::string>& names) const {
    std::vector<std::string> out;
    for (const auto& name : names) {
        out.push_back("--resolve");
        out.push_back(name + ":443=127.0.0.1:" + std::to_string(https_port_));
        out.push_back("--resolve");
        out.push_back(name + ":80=127.0.0.1:" + std::to_string(http_port_));
    }
    return out;
}

}  // namespace stockade::testing
