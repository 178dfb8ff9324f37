// --network allowlist on real sandboxes, through a serve session's bash (the path agents use)
// and through `stockade run`: real clients (pip, npm, git, curl, Python, Node) reach the
// registries the preset allows — pinned to tests/network/upstreams.py on 127.0.0.1 — and what
// the rules do not allow is refused and reported in the command's own result.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/testing/sandbox_harness.h"
#include "tests/testing/serve_client.h"
#include "tests/testing/upstreams.h"

namespace stockade::testing {
namespace {

// The events of `type` in every session log of a state directory.
std::vector<nlohmann::json> session_events(const std::string& state, const std::string& type) {
    std::vector<nlohmann::json> out;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(state, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        if (it->path().filename() != "events.jsonl") {
            continue;
        }
        for (const std::string& line : split_lines(read_file_text(it->path()).value_or(""))) {
            auto event = nlohmann::json::parse(line, nullptr, false);
            if (event.is_object() && event.value("type", "") == type) {
                out.push_back(std::move(event));
            }
        }
    }
    return out;
}

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// The names the tests pin to the upstreams: the preset's registries and a few of our own.
const std::vector<std::string> kPinned = {"pypi.org",           "files.pythonhosted.org",
                                          "registry.npmjs.org", "github.com",
                                          "example.test",       "denied.test",
                                          "other.test"};

class NetworkTest : public AllowlistTest {
protected:
    // The flags of a session or run with the registries preset, our test names pinned, and:
    // example.test allowed; denied.test allowed and denied (deny wins); other.test unlisted.
    std::vector<std::string> network_flags() const {
        std::vector<std::string> flags = {
            "--network", "allowlist", "--allow-preset", "registries", "--allow",
            "network.access(example.test)", "--allow", "network.access(denied.test)", "--deny",
            "network.access(denied.test)",
            // git over plain HTTP (the preset has HTTPS only)
            "--allow", "network.access(github.com:80)", "--no-user-settings"};
        for (auto& flag : upstreams_->resolve_flags(kPinned)) {
            flags.push_back(std::move(flag));
        }
        return flags;
    }

    std::vector<std::string> serve_flags() const {
        std::vector<std::string> flags = network_flags();
        flags.insert(flags.end(), {"--mode", "ci"});
        return flags;
    }

    std::string bash(ServeProcess& serve, const std::string& command) {
        return text_of(serve.call("bash", {{"command", command}, {"timeout_ms", 120000}}, nullptr,
                                  std::chrono::seconds(150)));
    }
};

TEST_F(NetworkTest, PipInstallNpmInstallAndGitCloneGoThroughWithTheRegistriesPreset) {
    ServeProcess serve(workspace_.path(), state_.path(), serve_flags());
    ASSERT_TRUE(serve.initialize().contains("result"));
    const std::string ca = workspace_.sub("ca.pem");

    const std::string pip =
        bash(serve, "python3 -m venv /tmp/venv && PIP_CERT=" + ca +
                        " /tmp/venv/bin/pip install --disable-pip-version-check --no-input "
                        "--index-url https://pypi.org/simple tinypkg && /tmp/venv/bin/python -c "
                        "'import tinypkg; print(\"tinypkg says\", tinypkg.VALUE)'");
    EXPECT_THAT(
        pip, AllOf(HasSubstr("Successfully installed tinypkg-1.0.0"), HasSubstr("tinypkg says 42"),
                   HasSubstr("exit code 0"), Not(HasSubstr("network: refused"))));

    const std::string npm =
        bash(serve,
             "mkdir -p /tmp/app && cd /tmp/app && echo '{\"name\":\"app\"}' > package.json "
             "&& npm_config_cafile=" +
                 ca +
                 " npm install --no-audit --no-fund --loglevel=error tinypkg && node -e "
                 "'console.log(\"tinypkg says\", require(\"tinypkg\"))'");
    EXPECT_THAT(npm, AllOf(HasSubstr("tinypkg says 42"), HasSubstr("exit code 0"),
                           Not(HasSubstr("network: refused"))));

    const std::string git =
        bash(serve, "GIT_SSL_CAINFO=" + ca +
                        " git clone -q https://github.com/owner/tinyrepo.git /tmp/tinyrepo && cat "
                        "/tmp/tinyrepo/README");
    EXPECT_THAT(git, AllOf(HasSubstr("hello from tinyrepo"), HasSubstr("exit code 0"),
                           Not(HasSubstr("network: refused"))));
    const std::string plain_git =
        bash(serve,
             "git clone -q http://github.com/owner/tinyrepo.git /tmp/plain && cat "
             "/tmp/plain/README");
    EXPECT_THAT(plain_git, AllOf(HasSubstr("hello from tinyrepo"), HasSubstr("exit code 0")));

    // Every connection is in the session's log, tied to the call that made it.
    const std::vector<nlohmann::json> connections =
        session_events(state_.path(), "NetworkConnection");
    ASSERT_FALSE(connections.empty());
    for (const auto& event : connections) {
        EXPECT_NE(event.value("call", ""), "") << event.dump();
        EXPECT_EQ(event.value("outcome", ""), "relayed") << event.dump();
    }
    const bool registry = std::any_of(connections.begin(), connections.end(), [](const auto& e) {
        return e.value("host", "") == "registry.npmjs.org" && e.value("bytes_received", 0) > 0 &&
               e.value("rule", "") != "";
    });
    EXPECT_TRUE(registry) << "npm's connections are recorded with their rule and bytes";
}

TEST_F(NetworkTest, WhatTheRulesDoNotAllowIsRefusedAndTheResultSaysSo) {
    ServeProcess serve(workspace_.path(), state_.path(), serve_flags());
    ASSERT_TRUE(serve.initialize().contains("result"));
    const std::string ca = workspace_.sub("ca.pem");

    const std::string allowed = bash(serve, "curl -sS --cacert " + ca +
                                                " https://example.test/ && curl -sS "
                                                "http://example.test/plain");
    EXPECT_THAT(allowed, AllOf(HasSubstr("hello from example.test"), HasSubstr("exit code 0"),
                               Not(HasSubstr("network: refused"))));

    const std::string unlisted = bash(serve, "curl -sS --cacert " + ca + " https://other.test/");
    EXPECT_THAT(unlisted, HasSubstr("network: refused 1 connection to other.test:443 (not in the "
                                    "allowlist; the user can add network.access(other.test))"));
    EXPECT_THAT(unlisted, Not(HasSubstr("exit code 0")));

    const std::string denied =
        bash(serve, "curl -sS http://denied.test/; curl -sS http://denied.test/again");
    EXPECT_THAT(denied, HasSubstr("network: refused 2 connections to denied.test:80 (denied by "
                                  "network.access(denied.test))"));

    // Python's urllib and pip's requests follow the same variables; Node's https module does
    // not read them, and cannot reach anything at all.
    const std::string urllib = bash(
        serve,
        "python3 -c 'import ssl, urllib.request as u; "
        "c = ssl.create_default_context(cafile=\"" +
            ca + "\"); print(u.urlopen(\"https://example.test/\", context=c).read().decode())'");
    EXPECT_THAT(urllib, AllOf(HasSubstr("hello from example.test"), HasSubstr("exit code 0")));
}

TEST_F(NetworkTest, RunTakesTheSameAllowlistAndReportsRefusalsOnStderr) {
    std::vector<std::string> args = {"run", "--workspace", workspace_.path()};
    for (auto& flag : network_flags()) {
        args.push_back(std::move(flag));
    }
    args.insert(args.end(), {"--", "sh", "-c",
                             "curl -sS --cacert ca.pem https://example.test/; curl -sS --cacert "
                             "ca.pem https://other.test/; exit 0"});
    RunConfig config;
    config.cwd = workspace_.path();
    const RunResult result = run_stockade(args, config);
    EXPECT_EQ(result.exit_code, 0) << result.describe();
    EXPECT_THAT(result.out, HasSubstr("hello from example.test")) << result.describe();
    EXPECT_THAT(result.err,
                HasSubstr("stockade run: network: refused 1 connection to other.test:443 (not in "
                          "the allowlist; the user can add network.access(other.test))"))
        << result.describe();
}

TEST_F(NetworkTest, ASettingsFileCanHoldTheAllowlistAndThePins) {
    TempDir settings{"stockade-net-settings"};
    const std::string file = settings.write_file(
        "settings.json",
        nlohmann::json{
            {"sandbox",
             {{"network",
               {{"allowedDomains", {"example.test"}},
                {"resolve",
                 {"example.test:443=127.0.0.1:" + std::to_string(upstreams_->https_port())}}}}}}}
            .dump());
    RunConfig config;
    config.cwd = workspace_.path();
    const RunResult result = run_stockade(
        {"run", "--workspace", workspace_.path(), "--network", "allowlist", "--policy", file,
         "--no-user-settings", "--", "curl", "-sS", "--cacert", "ca.pem", "https://example.test/"},
        config);
    EXPECT_EQ(result.exit_code, 0) << result.describe();
    EXPECT_THAT(result.out, HasSubstr("hello from example.test")) << result.describe();
}

TEST_F(NetworkTest, AllowlistWithoutANetworkNamespaceIsRefusedNotRunOnTheHostNetwork) {
    const RunResult result =
        run_stockade({"run", "--workspace", workspace_.path(), "--network", "allowlist",
                      "--isolation", "landlock", "--no-user-settings", "--", "true"});
    EXPECT_EQ(result.exit_code, 77) << result.describe();
    EXPECT_THAT(result.err, HasSubstr("--network allowlist needs a network namespace"))
        << result.describe();
}

// Without a network (the default), a lookup fails at once — the sandbox's resolver is the
// supervisor's, which refuses every query — and the result names the host and the flags that
// would reach it. glibc (getent, Python) and c-ares (Node's dns.resolve) both get the answer.
TEST_F(NetworkTest, WithoutANetworkALookupIsRefusedAtOnceAndTheResultSaysHowToGetOne) {
    ServeProcess serve(workspace_.path(), state_.path(), {"--mode", "ci", "--no-user-settings"});
    ASSERT_TRUE(serve.initialize().contains("result"));
    const std::string getent = bash(serve, "getent hosts registry.npmjs.org; echo getent=$?");
    EXPECT_THAT(getent, HasSubstr("getent=2")) << "not found, after the refusal";
    // getent asks for the name's IPv6 and IPv4 addresses: two queries.
    EXPECT_THAT(getent,
                HasSubstr("\nnetwork: refused 2 DNS queries for registry.npmjs.org (this sandbox "
                          "has no network; to reach it, the user can start the sandbox with "
                          "--network allowlist --allow 'network.access(registry.npmjs.org)')"))
        << getent;

    const std::string clients =
        bash(serve,
             "python3 -c 'import socket\ntry:\n    socket.getaddrinfo(\"pypi.org\", 443)\nexcept "
             "OSError as e:\n    print(\"python:\", e)'; node -e "
             "'require(\"dns\").resolve4(\"github.com\", "
             "(e) => console.log(\"node:\", e && e.code))'");
    EXPECT_THAT(clients, HasSubstr("python: [Errno -3] Temporary failure in name resolution"));
    EXPECT_THAT(clients, HasSubstr("node: EREFUSED"));
    EXPECT_THAT(clients, AllOf(HasSubstr(" for pypi.org ("), HasSubstr(" for github.com (")))
        << clients;

    // The session's log has each name once per command, for `stockade log`.
    const std::vector<nlohmann::json> lookups = session_events(state_.path(), "NetworkLookup");
    std::vector<std::string> hosts;
    for (const auto& event : lookups) {
        hosts.push_back(event.value("host", ""));
    }
    EXPECT_THAT(hosts,
                ::testing::UnorderedElementsAre("registry.npmjs.org", "pypi.org", "github.com"));
}

TEST_F(NetworkTest, RunNamesTheLookupsItRefusedOnStderr) {
    RunConfig config;
    config.cwd = workspace_.path();
    const RunResult result = run_stockade({"run", "--workspace", workspace_.path(), "--", "sh",
                                           "-c", "getent hosts files.pythonhosted.org; exit 0"},
                                          config);
    EXPECT_EQ(result.exit_code, 0) << result.describe();
    EXPECT_THAT(result.err, HasSubstr("stockade run: network: refused 2 DNS queries for "
                                      "files.pythonhosted.org (this sandbox has no network;"))
        << result.describe();
}

TEST_F(NetworkTest, WithTheAllowlistALookupIsPointedAtTheProxy) {
    ServeProcess serve(workspace_.path(), state_.path(), serve_flags());
    ASSERT_TRUE(serve.initialize().contains("result"));
    const std::string out = bash(serve, "getent hosts example.test; echo getent=$?");
    EXPECT_THAT(out, AllOf(HasSubstr("getent=2"),
                           HasSubstr("network: refused 2 DNS queries for example.test (names are "
                                     "resolved by Stockade's proxy, outside the sandbox; connect "
                                     "through the proxy in $HTTPS_PROXY")))
        << out;
}

}  // namespace
}  // namespace stockade::testing
