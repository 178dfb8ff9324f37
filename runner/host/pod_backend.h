// `stockade serve --http --pod` (docs/http.md, "Pod mode"): a server for one tenant that is not
// known when it starts. A warm pool's pod (kubernetes-sigs/agent-sandbox) starts with no tenant;
// when a claim adopts it, the platform binds it, once, with POST /admin/bind or by writing the
// file --bind-file names, to one tenant given exactly as in a tenants file (PodBinding,
// runner/host/tenants.h). Until then /mcp answers 503 and /readyz 200 "ready, unbound" (a warm
// pod is ready to be claimed).
//
// Binding opens a TenantBackend (runner/host/tenant_backend.h) for that one tenant, with every
// check serve makes of a tenants file: its workspace root opened once, by descriptor, apart from
// the state directory and, as root, owned by the tenant; its images in the store. From then on
// the pod serves as that backend. A bound pod ends itself (the server drains as on SIGTERM) when
// the binding's `expires` passes, or once it has had no session and no request on /mcp for the
// idle ttl; an unbound pod never ends by itself.
//
// Threads: bind() runs on an I/O thread (POST /admin/bind) or on the bind file's poller; mu_
// makes them one at a time. The bound TenantBackend is published through an atomic pointer once
// it and the binding are complete, and is never replaced nor freed before the PodBackend, so the
// I/O threads read it, and the binding, without a lock.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/result.h"
#include "runner/host/tenant_backend.h"
#include "runner/host/tenants.h"
#include "runner/mcp/http_server.h"

namespace stockade::runner {

struct PodConfig {
    // serve's configuration but its tenant (--admin-token-file, --no-auth, the state directory,
    // the session flags, the image store); its `tenants` is replaced by the binding's one tenant,
    // served as a tenants file's (from_file).
    HostConfig host{};
    std::chrono::seconds idle_ttl{1800};   // --pod-idle-ttl
    std::string bind_file{};               // --bind-file FILE; empty: POST /admin/bind only
    std::chrono::milliseconds poll{1000};  // how often the bind file is read
    // What the pod tells its operator whatever the log level (its binding): serve's announce.
    std::function<void(const std::string&)> announce{};
    // The time `expires` is compared with.
    std::function<std::chrono::system_clock::time_point()> clock = [] {
        return std::chrono::system_clock::now();
    };
};

class PodBackend final : public mcp::HttpBackend {
public:
    // An unbound pod. With a bind file, reads it once now (a pod whose container restarted
    // after its binding is bound again before it listens) and then every `poll` on a thread of
    // its own: a file that does not exist (yet), or is empty, leaves the pod unbound; a file whose
    // content changed is read as a binding. Kubernetes updates a mounted Secret or ConfigMap by
    // swapping a symlink, so the file is opened again by its path at each read.
    static std::unique_ptr<PodBackend> open(PodConfig config);
    ~PodBackend() override;
    PodBackend(const PodBackend&) = delete;
    PodBackend& operator=(const PodBackend&) = delete;

    enum class BindOutcome { kBound, kAlreadyBound };
    // Binds the pod to `binding`, once; `source` says who asked, for the log ("POST
    // /admin/bind"). The same binding again (the platform retrying) is kAlreadyBound. Errors:
    // kAlreadyExists when bound to another binding (409: a pod is bound once); kInvalidArgument
    // for what the platform must fix (400: an `expires` that has passed, a workspace root that
    // cannot be opened or is not the tenant's, an image not in the store); else the system's.
    Result<BindOutcome> bind(const PodBinding& binding, std::string_view source);

    // The backend of the bound tenant, or null while the pod is unbound.
    [[nodiscard]] const TenantBackend* bound() const noexcept {
        return bound_.load(std::memory_order_acquire);
    }
    // What GET /admin/pod answers: {"bound", "tenant", "bound_at", "expires", "idle_seconds",
    // "idle_ttl_seconds", "sessions"}; null for what an unbound pod has not.
    [[nodiscard]] std::string status_json(const mcp::ServerActivity& activity) const;

    const mcp::HttpTenant* authenticate(const std::optional<std::string>& token) override;
    bool is_admin(const std::optional<std::string>& token) override;
    Result<std::unique_ptr<mcp::ToolHost>> open_session(
        const mcp::HttpTenant& tenant, const std::string& session_id,
        const mcp::SessionRequest& request) override;
    std::string ready() override;
    std::optional<std::string> unavailable() override;
    std::vector<mcp::TenantUsage> usage() override;
    std::string metrics() override;
    std::optional<mcp::AdminReply> admin(std::string_view method, std::string_view path,
                                         const std::string& body,
                                         const mcp::ServerActivity& activity) override;
    std::vector<std::string> admin_endpoints() override;
    std::optional<std::string> stop_reason(const mcp::ServerActivity& activity) override;

private:
    explicit PodBackend(PodConfig config);

    // Reads the bind file and binds the pod when it holds a binding it did not hold before.
    // Thread: the poller's (or open's, before the poller starts).
    void read_bind_file();
    void poll(const std::stop_token& stop);
    mcp::AdminReply bind_request(const std::string& body, const mcp::ServerActivity& activity);

    const PodConfig config_;
    std::mutex mu_;  // one bind() at a time
    // Written once by bind() under mu_ before bound_ is published; read-only after.
    std::unique_ptr<TenantBackend> backend_;
    PodBinding binding_;
    std::chrono::system_clock::time_point bound_at_{};
    std::chrono::steady_clock::time_point bound_steady_{};
    std::atomic<TenantBackend*> bound_{nullptr};
    // Thread: the poller only. What the bind file held at its last read, and the error of that
    // read, so that each is logged once.
    std::optional<std::string> file_text_;
    std::string file_error_;
    std::mutex poll_mu_;
    std::condition_variable_any poll_wake_;
    std::jthread poller_;  // last: stopped and joined first
};

}  // namespace stockade::runner
