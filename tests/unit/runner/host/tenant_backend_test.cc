#include "runner/host/tenant_backend.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "images/import.h"
#include "images/oci_document.h"
#include "tests/testing/matchers.h"

namespace stockade::runner {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using testing::HasErrc;
using ::testing::HasSubstr;
using testing::IsOk;

// The first host uid of acme's range: as root with a tenants file, its root must be its own.
constexpr uid_t kAcmeUid = 300000;

// Two tenants, one with every limit set and one with none, whose roots and the state directory
// are fresh directories.
class TenantBackendTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/stockade-backend-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
        for (const char* sub : {"acme", "beta", "state"}) {
            fs::create_directory(dir_ / sub);
        }
        if (::geteuid() == 0) {
            ASSERT_EQ(::chown((dir_ / "acme").c_str(), kAcmeUid, kAcmeUid), 0);
            ASSERT_EQ(::chown((dir_ / "beta").c_str(), 1879048193, 1879048193), 0);
        }
        const std::string text = fmt::format(
            R"json({{"tenants": [
              {{"name": "acme", "token_sha256": ["{}"], "workspace_root": "{}",
                "host_uid_range": "300000-365535", "policy": "/etc/stockade/acme.json",
                "network": "allowlist", "allow": ["Bash(git *)"], "deny": ["Read(./.env)"],
                "limits": {{"memory": "1G", "pids": 256, "cpu": 1.5, "tmp_size": "256M",
                            "disk": "2G", "cpu_weight": 300}}}},
              {{"name": "beta", "token_sha256": ["{}"], "workspace_root": "{}"}}]}})json",
            token_hash_hex("acme-token"), (dir_ / "acme").string(), token_hash_hex("beta-token"),
            (dir_ / "beta").string());
        auto tenants = parse_tenants(text, false);
        ASSERT_THAT(tenants, IsOk());
        auto state = HostDir::open((dir_ / "state").string());
        ASSERT_THAT(state, IsOk());
        // serve's own flags, typed: what a tenant leaves unset comes from here.
        SessionConfig base;
        base.sandbox.limits.memory_bytes = 4ULL << 30;
        base.sandbox.limits.pids = 100;
        base.spill_cap_bytes = 64ULL << 20;
        base.policy.allow = {"Read"};
        base.policy.mode = policy::Mode::kHosted;
        auto opened = TenantBackend::open(
            HostConfig{.tenants = *tenants, .state = *state, .base = base, .from_file = true});
        ASSERT_THAT(opened, IsOk());
        backend_ = std::move(opened).value();
    }
    void TearDown() override { fs::remove_all(dir_); }

    const ServedTenant& tenant(const std::string& token) {
        const mcp::HttpTenant* found = backend_->authenticate(token);
        EXPECT_NE(found, nullptr) << token;
        return static_cast<const ServedTenant&>(*found);
    }

    // The SessionConfig of a session `served` opens on its workspace `name`.
    Result<SessionConfig> config_for(const ServedTenant& served, const std::string& name) {
        auto ws = backend_->tenant_workspace(served, name);
        if (!ws) {
            return std::move(ws).error();
        }
        return backend_->session_config(served, *ws);
    }

    fs::path dir_;
    std::unique_ptr<TenantBackend> backend_;
};

TEST_F(TenantBackendTest, ATenantsTypedLimitsReachTheSessionConfigUnchanged) {
    const ServedTenant& acme = tenant("acme-token");
    ASSERT_EQ(acme.name, "acme");
    auto config = config_for(acme, "api");
    ASSERT_THAT(config, IsOk());
    const SandboxLimits& limits = config->sandbox.limits;
    EXPECT_EQ(limits.memory_bytes, 1ULL << 30);
    EXPECT_EQ(limits.pids, 256U);
    EXPECT_EQ(limits.cpu, 1.5);
    EXPECT_EQ(limits.tmp_bytes, 256ULL << 20);
    EXPECT_EQ(limits.group, "tenant-acme");
    EXPECT_EQ(limits.group_cpu_weight, 300U);
    EXPECT_EQ(config->spill_cap_bytes, 2ULL << 30);
    EXPECT_EQ(config->host_uid_range, (HostIdRange{.first = 300000, .count = 65536}));
    EXPECT_EQ(config->sandbox.network, sandbox::NetworkMode::kAllowlist);
    EXPECT_EQ(config->sandbox.workspace.path(), (dir_ / "acme" / "api").string());
    EXPECT_THAT(config->policy.files, ElementsAre("/etc/stockade/acme.json"));
    EXPECT_THAT(config->policy.allow, ElementsAre("Read", "Bash(git *)"));
    EXPECT_THAT(config->policy.deny, ElementsAre("Read(./.env)"));
    EXPECT_EQ(config->policy.mode, policy::Mode::kHosted) << "serve's --mode holds for tenants";
    // The tenant's share: its state directory, disk pool and meters, pruned by the pool.
    EXPECT_EQ(config->state.path(), (dir_ / "state" / "tenants" / "acme").string());
    EXPECT_EQ(config->disk_pool, acme.disk);
    EXPECT_EQ(config->disk_pool->cap(), 2ULL << 30);
    EXPECT_EQ(config->meters, acme.meters);
    EXPECT_FALSE(config->prune_outputs);
}

TEST_F(TenantBackendTest, WhatATenantLeavesUnsetIsServesOwn) {
    const ServedTenant& beta = tenant("beta-token");
    ASSERT_EQ(beta.name, "beta");
    auto config = config_for(beta, "");
    ASSERT_THAT(config, IsOk());
    EXPECT_EQ(config->sandbox.limits.memory_bytes, 4ULL << 30);
    EXPECT_EQ(config->sandbox.limits.pids, 100U);
    EXPECT_EQ(config->sandbox.limits.cpu, std::nullopt);
    EXPECT_EQ(config->sandbox.limits.group, "tenant-beta") << "acme's weight groups every tenant";
    EXPECT_EQ(config->sandbox.limits.group_cpu_weight, 100U);
    EXPECT_EQ(config->spill_cap_bytes, 64ULL << 20);
    EXPECT_EQ(config->host_uid_range, std::nullopt);
    EXPECT_EQ(config->sandbox.network, sandbox::NetworkMode::kNone);
    EXPECT_THAT(config->policy.allow, ElementsAre("Read"));
    EXPECT_TRUE(config->policy.files.empty());
    EXPECT_EQ(config->state.path(), (dir_ / "state" / "tenants" / "beta").string());
    EXPECT_NE(config->disk_pool, tenant("acme-token").disk) << "each tenant has its own pool";
}

TEST_F(TenantBackendTest, TokensNameTheirTenantAndNoOther) {
    EXPECT_EQ(backend_->authenticate(std::string("nobody")), nullptr);
    EXPECT_EQ(backend_->authenticate(std::nullopt), nullptr);
    EXPECT_FALSE(backend_->is_admin(std::string("acme-token")));
    EXPECT_EQ(tenant("beta-token").name, "beta");
}

TEST_F(TenantBackendTest, ASessionWorkspaceThroughALinkIsRefusedAndNothingIsOpened) {
    fs::create_directory_symlink(dir_ / "beta", dir_ / "acme" / "leak");
    auto ws = backend_->tenant_workspace(tenant("acme-token"), "leak");
    ASSERT_THAT(ws, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(ws.error().message, HasSubstr("Stockade-Workspace"));
}

TEST_F(TenantBackendTest, RootsInsideEachOtherAreRefusedAtStart) {
    auto tenants =
        parse_tenants(fmt::format(R"({{"tenants": [{{"name": "acme", "token_sha256": ["{}"],
                                       "workspace_root": "{}"}}]}})",
                                  token_hash_hex("t"), (dir_ / "state").string()),
                      false);
    ASSERT_THAT(tenants, IsOk());
    auto state = HostDir::open((dir_ / "state").string());
    ASSERT_THAT(state, IsOk());
    auto opened = TenantBackend::open(
        HostConfig{.tenants = *tenants, .state = *state, .base = {}, .from_file = false});
    ASSERT_THAT(opened, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(opened.error().message, HasSubstr("state directory"));
}

// A store holding one image, "img", whose only layer is empty (an image need not hold files to
// be chosen), made as an OCI layout and imported.
std::string store_with_image(const fs::path& dir) {
    const std::string layer;  // no bytes: a layer with no entries
    const std::string config = fmt::format(
        R"({{"architecture":"{}","os":"linux","rootfs":{{"type":"layers","diff_ids":["{}"]}}}})",
        images::host_platform().architecture, images::Digest::of(layer).str());
    const std::string manifest = fmt::format(
        R"({{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",)"
        R"("config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{}",)"
        R"("size":{}}},"layers":[{{"mediaType":"application/vnd.oci.image.layer.v1.tar",)"
        R"("digest":"{}","size":0}}]}})",
        images::Digest::of(config).str(), config.size(), images::Digest::of(layer).str());
    const std::string index =
        fmt::format(R"({{"schemaVersion":2,"manifests":[{{"mediaType":)"
                    R"("application/vnd.oci.image.manifest.v1+json","digest":"{}","size":{}}}]}})",
                    images::Digest::of(manifest).str(), manifest.size());
    const fs::path layout = dir / "layout";
    fs::create_directories(layout / "blobs" / "sha256");
    auto put = [&](const fs::path& path, const std::string& bytes) {
        FILE* f = std::fopen(path.c_str(), "wb");
        EXPECT_NE(f, nullptr);
        std::fwrite(bytes.data(), 1, bytes.size(), f);
        std::fclose(f);
    };
    put(layout / "oci-layout", R"({"imageLayoutVersion":"1.0.0"})");
    put(layout / "index.json", index);
    for (const std::string* blob : {&layer, &config, &manifest}) {
        put(layout / "blobs" / "sha256" / std::string(images::Digest::of(*blob).hex()), *blob);
    }
    const std::string store_dir = (dir / "store").string();
    auto store = images::ImageStore::open(store_dir, true);
    EXPECT_THAT(store, IsOk());
    EXPECT_THAT(images::import_image(*store, layout.string(), images::ImportOptions{.name = "img"}),
                IsOk());
    return store_dir;
}

TEST_F(TenantBackendTest, ATenantsImagesAreTheOnesItsSessionsMayChoose) {
    const std::string store = store_with_image(dir_);
    auto tenants =
        parse_tenants(fmt::format(R"({{"tenants": [{{"name": "acme", "token_sha256": ["{}"],
                       "workspace_root": "{}", "host_uid_range": "300000-365535",
                       "image": ["img", "host"]}},
                      {{"name": "beta", "token_sha256": ["{}"], "workspace_root": "{}"}}]}})",
                                  token_hash_hex("acme-token"), (dir_ / "acme").string(),
                                  token_hash_hex("beta-token"), (dir_ / "beta").string()),
                      false);
    ASSERT_THAT(tenants, IsOk());
    auto state = HostDir::open((dir_ / "state").string());
    ASSERT_THAT(state, IsOk());
    SessionConfig base;
    auto host = images::load_image("host");
    ASSERT_THAT(host, IsOk());
    base.sandbox.image = *host;
    auto opened = TenantBackend::open(HostConfig{.tenants = *tenants,
                                                 .state = *state,
                                                 .base = base,
                                                 .from_file = true,
                                                 .image_store = store});
    ASSERT_THAT(opened, IsOk());
    backend_ = std::move(opened).value();

    const ServedTenant& acme = tenant("acme-token");
    auto first = backend_->session_image(acme, "");
    ASSERT_THAT(first, IsOk());
    EXPECT_TRUE(first->stored());
    EXPECT_EQ(first->name, "img");
    auto chosen = backend_->session_image(acme, "host");
    ASSERT_THAT(chosen, IsOk());
    EXPECT_FALSE(chosen->stored());
    auto other = backend_->session_image(acme, "debian:12");
    ASSERT_THAT(other, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(other.error().message, HasSubstr("it may use img, host"));

    // A tenant without images runs on serve's, and may not ask for another.
    const ServedTenant& beta = tenant("beta-token");
    auto beta_image = backend_->session_image(beta, "");
    ASSERT_THAT(beta_image, IsOk());
    EXPECT_EQ(beta_image->name, "host");
    EXPECT_THAT(backend_->session_image(beta, "img"), HasErrc(Errc::kInvalidArgument));
}

TEST_F(TenantBackendTest, AnImageMissingFromTheStoreStopsTheStart) {
    const std::string store = store_with_image(dir_);
    auto tenants =
        parse_tenants(fmt::format(R"({{"tenants": [{{"name": "acme", "token_sha256": ["{}"],
                       "workspace_root": "{}", "host_uid_range": "300000-365535",
                       "image": "gone:1"}}]}})",
                                  token_hash_hex("acme-token"), (dir_ / "acme").string()),
                      false);
    ASSERT_THAT(tenants, IsOk());
    auto state = HostDir::open((dir_ / "state").string());
    ASSERT_THAT(state, IsOk());
    auto opened = TenantBackend::open(HostConfig{
        .tenants = *tenants, .state = *state, .base = {}, .from_file = true, .image_store = store});
    ASSERT_THAT(opened, HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(opened.error().message, HasSubstr("tenant acme: image gone:1"));
}

}  // namespace
}  // namespace stockade::runner
