// The backend of `stockade serve --http` (runner/mcp/http_server.h): who a token is, and each
// session opened as its tenant says. A tenant is one ServedTenant: its entry of the tenants file
// (runner/host/tenants.h), what the HTTP server enforces for it, its workspace root and state
// directory held open, and what its sessions share (their disk and meters).
//
// A session's configuration is serve's own (a SessionConfig the CLI made from its flags, with
// no workspace), then its tenant's: the workspace resolved beneath the tenant's root by
// descriptor (runner/host/tenant_roots.h), its typed limits, network, host uid range, policy
// file and rules, and its share of the CPU, disk and meters. Nothing on the way is flag text.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/crypto.h"
#include "common/host_dir.h"
#include "common/result.h"
#include "images/image.h"
#include "images/store.h"
#include "runner/host/tenant_roots.h"
#include "runner/host/tenants.h"
#include "runner/mcp/http_server.h"
#include "runner/session/output_budget.h"
#include "runner/session/session.h"
#include "runner/session/session_meters.h"

namespace stockade::runner {

// Where a tenant's session shows its workspace and its spilled output (SandboxConfig::
// workspace_view, spill_view): the same for every tenant and every server.
inline constexpr const char* kTenantWorkspaceView = "/workspace";
inline constexpr const char* kTenantSpillView = "/stockade/tool-output";

struct ServedTenant : mcp::HttpTenant {
    Tenant config;
    HostDir root;   // its workspace root, opened at start
    HostDir state;  // its state directory (beneath serve's, by descriptor)
    std::shared_ptr<DiskPool> disk;
    std::shared_ptr<SessionMeters> meters;
};

struct HostConfig {
    TenantsConfig tenants{};
    HostDir state{};                    // serve's state directory, opened
    std::vector<Sha256Digest> admin{};  // --admin-token-file: /metrics and /admin/sessions
    // Every session's configuration before its tenant's: serve's flags, typed. Its sandbox has
    // no workspace (each session's is its tenant's).
    SessionConfig base{};
    bool from_file = false;  // --tenants; else the one default tenant of the command line
    bool no_auth = false;    // --no-auth: every request is the (one) tenant's
    // The image store tenants' "image" names are looked up in (serve's --image-store).
    std::string image_store{};
};

class TenantBackend final : public mcp::HttpBackend {
public:
    // Opens each tenant's workspace root (as root with a tenants file, it must be owned by one
    // of the tenant's host uids), refuses roots inside each other or the state directory,
    // opens each tenant's state directory and prunes its ended sessions' output to its disk
    // limit. Errors: kInvalidArgument for what the operator must fix, else the system's.
    static Result<std::unique_ptr<TenantBackend>> open(HostConfig config);

    [[nodiscard]] const std::vector<ServedTenant>& tenants() const noexcept { return tenants_; }

    // The configuration of a session of `tenant` in `workspace` (resolved already), as
    // open_session starts it. Errors are kInvalidArgument.
    [[nodiscard]] Result<SessionConfig> session_config(const ServedTenant& tenant,
                                                       HostDir workspace) const;
    // The image of a session of `tenant` that asked for `ref` (Stockade-Image; empty: the
    // tenant's first, else serve's --image). One the tenant does not list is refused
    // (kInvalidArgument, naming those it does).
    [[nodiscard]] Result<images::Image> session_image(const ServedTenant& tenant,
                                                      const std::string& ref) const;
    // The workspace of a session of `tenant` that asked for `name` (Stockade-Workspace):
    // resolved beneath its root by descriptor, apart from every other root and the server's
    // state, and owned by the tenant when serve runs as root with a tenants file.
    [[nodiscard]] Result<HostDir> tenant_workspace(const ServedTenant& tenant,
                                                   const std::string& name) const;

    const mcp::HttpTenant* authenticate(const std::optional<std::string>& token) override;
    // The tenant an access token names (serve --oauth), by its name in the tenants file.
    const mcp::HttpTenant* tenant_named(std::string_view name) override;
    bool is_admin(const std::optional<std::string>& token) override;
    Result<std::unique_ptr<mcp::ToolHost>> open_session(
        const mcp::HttpTenant& tenant, const std::string& session_id,
        const mcp::SessionRequest& request) override;
    std::vector<mcp::TenantUsage> usage() override;

private:
    explicit TenantBackend(HostConfig config);

    HostConfig config_;
    std::vector<ServedTenant> tenants_;  // in the tenants file's order; addresses stable
    std::vector<TenantRoot> places_;     // their roots' real paths, for check_workspace_apart
    // Root with a tenants file: roots and session workspaces belong to the tenants' uids.
    bool owned_by_tenants_ = false;
    // Opened at start when a tenant names images.
    std::optional<images::ImageStore> image_store_;
};

}  // namespace stockade::runner
