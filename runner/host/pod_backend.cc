#include "runner/host/pod_backend.h"

#include <algorithm>
#include <cerrno>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/crypto.h"
#include "common/log.h"
#include "common/parse.h"
#include "common/syscall.h"

namespace stockade::runner {

namespace {

using json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

// A binding is a tenant of a tenants file and a date: far below this.
constexpr std::size_t kMaxBindFileBytes = (std::size_t{1} << 20) + 1;

json error_json(std::string_view message) {
    return json{{"error", message}};
}

mcp::AdminReply json_reply(unsigned status, const json& body) {
    return mcp::AdminReply{
        .status = status, .body = body.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"};
}

// The HTTP status of a refused binding.
unsigned bind_status(Errc code) {
    switch (code) {
        case Errc::kInvalidArgument:
        case Errc::kNotFound:
            return 400;
        case Errc::kAlreadyExists:
            return 409;
        case Errc::kPermissionDenied:
        case Errc::kPolicyDenied:
        case Errc::kFailedPrecondition:
        case Errc::kDeadlineExceeded:
        case Errc::kCancelled:
        case Errc::kResourceExhausted:
        case Errc::kUnavailable:
        case Errc::kInternal:
            return 500;
    }
    return 500;
}

}  // namespace

PodBackend::PodBackend(PodConfig config) : config_(std::move(config)) {}

std::unique_ptr<PodBackend> PodBackend::open(PodConfig config) {
    std::unique_ptr<PodBackend> pod(new PodBackend(std::move(config)));
    if (!pod->config_.bind_file.empty()) {
        pod->read_bind_file();
        pod->poller_ =
            std::jthread([raw = pod.get()](const std::stop_token& stop) { raw->poll(stop); });
    }
    return pod;
}

PodBackend::~PodBackend() = default;

Result<PodBackend::BindOutcome> PodBackend::bind(const PodBinding& binding,
                                                 std::string_view source) {
    const std::lock_guard lock(mu_);
    if (bound() != nullptr) {
        if (binding == binding_) {
            return BindOutcome::kAlreadyBound;
        }
        if (binding.tenant.name != binding_.tenant.name) {
            return Error{
                Errc::kAlreadyExists,
                fmt::format("this pod is bound to tenant \"{}\" already, since {}; a pod "
                            "is bound once, to one tenant: claim another pod for tenant "
                            "\"{}\"",
                            binding_.tenant.name,
                            utc_time_text(std::chrono::floor<std::chrono::seconds>(bound_at_)),
                            binding.tenant.name)};
        }
        return Error{Errc::kAlreadyExists,
                     fmt::format("this pod is bound to tenant \"{}\" already, by another binding "
                                 "(its tokens, settings or expires differ); a pod is bound once: "
                                 "claim another pod to serve the tenant with the new binding",
                                 binding_.tenant.name)};
    }
    const auto now = config_.clock();
    if (binding.expires && *binding.expires <= now) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("expires: {} has passed: the claim has ended; give a time to "
                                 "come, or leave expires out",
                                 utc_time_text(*binding.expires))};
    }
    HostConfig host = config_.host;
    host.tenants.tenants = {binding.tenant};
    host.from_file = true;
    ASSIGN_OR_RETURN(backend_, TenantBackend::open(std::move(host)));
    binding_ = binding;
    bound_at_ = now;
    bound_steady_ = SteadyClock::now();
    bound_.store(backend_.get(), std::memory_order_release);
    if (config_.announce) {
        config_.announce(fmt::format(
            "pod bound to tenant {} by {}{}", binding.tenant.name, source,
            binding.expires ? fmt::format("; it ends at {}", utc_time_text(*binding.expires))
                            : std::string()));
    }
    return BindOutcome::kBound;
}

void PodBackend::read_bind_file() {
    auto text = read_file(config_.bind_file, kMaxBindFileBytes);
    if (!text) {
        // Not there (yet): the platform has not bound this pod. Anything else is logged once.
        const std::string error = text.error().sys_errno == ENOENT ? "" : text.error().message;
        if (!error.empty() && error != file_error_) {
            SPDLOG_LOGGER_ERROR(log::get("runner"), "pod bind file unreadable file={} why={}",
                                config_.bind_file, error);
        }
        file_error_ = error;
        return;
    }
    if (file_text_ == *text) {
        return;  // taken, or refused for what it says
    }
    if (trim(*text).empty()) {
        file_error_.clear();
        return;
    }
    auto binding = parse_pod_binding(*text);
    Result<BindOutcome> bound = binding ? bind(*binding, "--bind-file " + config_.bind_file)
                                        : Result<BindOutcome>(std::move(binding).error());
    if (!binding || bound || bound.error().code == Errc::kAlreadyExists) {
        file_text_ = *text;  // done with this text; a new one is read again
    }
    // Else it is tried again at the next read: what the binding needs (its workspace root, an
    // image) may be there by then.
    const std::string error = bound ? "" : bound.error().message;
    if (!error.empty() && error != file_error_) {
        SPDLOG_LOGGER_ERROR(log::get("runner"), "pod bind file refused file={} status={} why={}",
                            config_.bind_file, bind_status(bound.error().code), error);
    }
    file_error_ = error;
}

void PodBackend::poll(const std::stop_token& stop) {
    std::unique_lock lock(poll_mu_);
    while (!stop.stop_requested()) {
        // Woken early only to stop. Once bound, the file is still read, to log a binding the
        // platform changed (which the pod refuses).
        (void)poll_wake_.wait_for(lock, stop, config_.poll, [] { return false; });
        if (stop.stop_requested()) {
            break;
        }
        read_bind_file();
    }
}

std::string PodBackend::status_json(const mcp::ServerActivity& activity) const {
    const TenantBackend* backend = bound();
    json status = {{"bound", backend != nullptr},  {"tenant", nullptr},
                   {"bound_at", nullptr},          {"expires", nullptr},
                   {"idle_seconds", nullptr},      {"idle_ttl_seconds", config_.idle_ttl.count()},
                   {"sessions", activity.sessions}};
    if (backend != nullptr) {
        status["tenant"] = binding_.tenant.name;
        status["bound_at"] = utc_time_text(std::chrono::floor<std::chrono::seconds>(bound_at_));
        if (binding_.expires) {
            status["expires"] = utc_time_text(*binding_.expires);
        }
        const auto since = std::max(activity.last_request, bound_steady_);
        status["idle_seconds"] =
            activity.sessions > 0
                ? 0
                : std::chrono::duration_cast<std::chrono::seconds>(activity.now - since).count();
    }
    return status.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

const mcp::HttpTenant* PodBackend::authenticate(const std::optional<std::string>& token) {
    TenantBackend* backend = bound_.load(std::memory_order_acquire);
    return backend == nullptr ? nullptr : backend->authenticate(token);
}

bool PodBackend::is_admin(const std::optional<std::string>& token) {
    if (!token || config_.host.admin.empty()) {
        return false;
    }
    return digest_in(config_.host.admin, sha256(*token));
}

Result<std::unique_ptr<mcp::ToolHost>> PodBackend::open_session(
    const mcp::HttpTenant& tenant, const std::string& session_id,
    const mcp::SessionRequest& request) {
    TenantBackend* backend = bound_.load(std::memory_order_acquire);
    if (backend == nullptr) {  // authenticate() found no tenant: never here
        return Error{Errc::kUnavailable, "this pod is not bound to a tenant yet"};
    }
    return backend->open_session(tenant, session_id, request);
}

std::string PodBackend::ready() {
    return bound() == nullptr ? "ready, unbound"
                              : fmt::format("ready, bound to tenant {}", binding_.tenant.name);
}

std::optional<std::string> PodBackend::unavailable() {
    if (bound() != nullptr) {
        return std::nullopt;
    }
    return "This pod is not bound to a tenant yet; the platform binds it with POST /admin/bind "
           "(or its --bind-file). Retry once it is bound.";
}

std::vector<mcp::TenantUsage> PodBackend::usage() {
    TenantBackend* backend = bound_.load(std::memory_order_acquire);
    return backend == nullptr ? std::vector<mcp::TenantUsage>{} : backend->usage();
}

std::string PodBackend::metrics() {
    return fmt::format(
        "# HELP stockade_pod_bound 1 once the pod is bound to its tenant (serve --pod), else 0.\n"
        "# TYPE stockade_pod_bound gauge\nstockade_pod_bound {}\n",
        bound() != nullptr ? 1 : 0);
}

mcp::AdminReply PodBackend::bind_request(const std::string& body,
                                         const mcp::ServerActivity& activity) {
    if (activity.draining) {
        return json_reply(503, error_json("this pod is shutting down and takes no binding; "
                                          "claim another pod"));
    }
    auto binding = parse_pod_binding(body);
    if (!binding) {
        return json_reply(400, error_json(binding.error().message));
    }
    auto bound = bind(*binding, "POST /admin/bind");
    if (!bound) {
        SPDLOG_LOGGER_WARN(log::get("runner"), "pod binding refused by=POST status={} why={}",
                           bind_status(bound.error().code), bound.error().message);
        return json_reply(bind_status(bound.error().code), error_json(bound.error().message));
    }
    return mcp::AdminReply{.status = 200, .body = status_json(activity)};
}

std::optional<mcp::AdminReply> PodBackend::admin(std::string_view method, std::string_view path,
                                                 const std::string& body,
                                                 const mcp::ServerActivity& activity) {
    if (path == "/admin/bind") {
        if (method != "POST") {
            return json_reply(405, error_json("POST the binding to /admin/bind as JSON: "
                                              "{\"tenant\": {...}, \"expires\": \"...\"}"));
        }
        return bind_request(body, activity);
    }
    if (path == "/admin/pod") {
        if (method != "GET") {
            return json_reply(405, error_json("GET /admin/pod"));
        }
        return mcp::AdminReply{.status = 200, .body = status_json(activity)};
    }
    return std::nullopt;
}

std::vector<std::string> PodBackend::admin_endpoints() {
    return {"POST /admin/bind", "GET /admin/pod"};
}

std::optional<std::string> PodBackend::stop_reason(const mcp::ServerActivity& activity) {
    if (bound() == nullptr) {
        return std::nullopt;  // a warm pod waits for its claim, however long
    }
    const std::string& tenant = binding_.tenant.name;
    if (binding_.expires && config_.clock() >= *binding_.expires) {
        return fmt::format("pod of tenant {} expired: its binding ended at {}", tenant,
                           utc_time_text(*binding_.expires));
    }
    const auto since = std::max(activity.last_request, bound_steady_);
    const auto idle = std::chrono::duration_cast<std::chrono::seconds>(activity.now - since);
    if (activity.sessions == 0 && idle >= config_.idle_ttl) {
        return fmt::format(
            "pod of tenant {} idle: no session and no request for {} s (--pod-idle-ttl {} s)",
            tenant, idle.count(), config_.idle_ttl.count());
    }
    return std::nullopt;
}

}  // namespace stockade::runner
