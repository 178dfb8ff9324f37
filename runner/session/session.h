// A session: one agent's work on one workspace. Owns the sandboxed worker, the file stamps,
// the per-file locks, the grants, the spill store and the event log, and hands each tool call
// to its Executor (runner/session/executor.h: the path of DESIGN.md §3). It is the MCP server's
// ToolHost: it frames the executor's result for MCP.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "runner/mcp/tool_host.h"
#include "runner/session/checkpoints.h"
#include "runner/session/event_log.h"
#include "runner/session/executor.h"
#include "runner/session/host_environment.h"
#include "runner/session/host_ids.h"
#include "runner/session/output_budget.h"
#include "runner/session/policy_setup.h"
#include "runner/session/process_manager.h"
#include "runner/session/sandbox_config.h"
#include "runner/session/sandbox_network.h"
#include "runner/session/session_grants.h"
#include "runner/session/session_worker.h"
#include "runner/session/state_dir.h"
#include "tools/file_locks.h"
#include "tools/file_stamps.h"
#include "tools/tool.h"

namespace stockade::runner {

// Everything a session is opened with, typed: whoever makes one (the CLI from its flags, the
// host from serve's flags and a tenant) has parsed and checked its parts; Session::open reads
// no flag text.
struct SessionConfig {
    // The worker's sandbox: the workspace (opened), binds, isolation, network, limits. The
    // session adds its policy's settings and deny rules.
    SandboxConfig sandbox{};
    std::string state_dir{};  // default_state_dir() when empty
    HostDir state{};          // the state directory already opened; when valid, state_dir
                              // is not looked at (serve --http: a tenant's)
    std::string resume{};     // a session id to resume, or empty for a new session
    // Who commits made in the sandbox are by; nullopt: the operator's (git config), else
    // fallback_git_identity().
    std::optional<GitIdentity> git_identity{};
    // Privileged callers: the range the session's own host uid is leased from; nullopt: the
    // default range (1879048193 and the 65,535 ids above it).
    std::optional<HostIdRange> host_uid_range{};
    // What the session keeps on disk of spilled results and process logs together (the
    // oldest are pruned first), and what all sessions keep (pruned at start, oldest first).
    uint64_t spill_cap_bytes = 512ULL << 20;
    // Per process log (process-logs/<id>.log): output past it is not kept on disk.
    uint64_t process_log_cap_bytes = uint64_t{8} << 30;
    PolicyConfig policy{};  // files, rules, mode, preset, ask fallback
    // Also send each result's metadata as structuredContent, with an outputSchema per tool
    // (`serve --structured-content`). Off by default: several clients then show the model the
    // metadata instead of the text. The metadata always goes in the result's _meta.
    bool structured_content = false;
    // What a host shares between its sessions (serve --http, per tenant); null: nothing.
    std::shared_ptr<DiskPool> disk_pool{};    // the tenant's disk, beside spill_cap_bytes
    std::shared_ptr<SessionMeters> meters{};  // restarts and processes, for /metrics
    // Prune the state directory's ended sessions' output at the start (spill_cap_bytes for all
    // of them). A host that prunes in the background (serve --http) turns it off.
    bool prune_outputs = true;
    // The MCP session id serve --http gave the session, and its tenant (empty: none), recorded
    // in SessionStarted so that `stockade log` finds the session by either id.
    std::string mcp_session_id{};
    std::string tenant{};
    // Checkpoints of the workspace after each call that may change it, for `stockade rewind`
    // (--checkpoints on|off; on by default). Its pool, when unset, is disk_pool.
    CheckpointOptions checkpoints{};
};

class Session final : public mcp::ToolHost {
public:
    static Result<std::unique_ptr<Session>> open(SessionConfig config);
    ~Session() override;
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    [[nodiscard]] const SessionPaths& paths() const noexcept { return paths_; }
    // The workspace's real path when it was opened (what the sandbox mounts it at).
    [[nodiscard]] const std::string& workspace() const noexcept { return workspace_.path(); }
    [[nodiscard]] const policy::Policy& policy() const noexcept { return *policy_; }
    // The worker's sandbox, once the policy and the settings files are applied.
    [[nodiscard]] const SandboxConfig& sandbox() const noexcept { return sandbox_; }
    [[nodiscard]] const GitIdentity& git_identity() const noexcept { return git_identity_; }
    // Starts the worker now, so that a host that cannot sandbox fails at start-up.
    Status start_worker();

    std::vector<mcp::ToolInfo> list_tools() override;
    mcp::ToolCallResult call_tool(const std::string& name, const nlohmann::json& arguments,
                                  const mcp::CallInfo& info) override;
    [[nodiscard]] std::string event_log_id() const override { return paths_.id; }
    // POST /admin/sessions/ID/rewind: {"to", "dry_run", "force"} → RewindReport::to_json, with
    // its text.
    Result<nlohmann::json> rewind(const nlohmann::json& request) override;

    // Puts the workspace back as it was just before a call (runner/session/checkpoints.h);
    // the file stamps of what it rewrote are forgotten, so an edit of one needs a fresh read.
    Result<RewindReport> rewind(const RewindRequest& request);
    // The session's checkpoints, oldest first (empty when they are off).
    [[nodiscard]] std::vector<CheckpointSummary> checkpoints() const;

    // Runs one call outside MCP (`stockade call`).
    mcp::ToolCallResult call(const std::string& name, const nlohmann::json& arguments,
                             const std::string& call_id);

private:
    class Spill;
    Session() = default;
    // Rebuilds the file stamps from FileRead/FileModified events of a resumed session, and
    // finds the next free process number.
    size_t replay_stamps(int& next_process);

    HostDir workspace_;  // held open for the session's life: every worker binds it
    sandbox::NetworkMode network_mode_ = sandbox::NetworkMode::kNone;  // the sandbox's
    HostIdLease host_id_;  // root supervisors: the session's own host uid, held while it lives
    SandboxConfig sandbox_;
    GitIdentity git_identity_;
    std::vector<tools::ProtectedPath> protected_;
    SessionPaths paths_;
    std::unique_ptr<EventLog> log_;
    // --network allowlist: the proxy; after the log it records to, before what uses it.
    std::unique_ptr<SandboxNetwork> network_;
    std::shared_ptr<SessionMeters> meters_;  // the host's (SessionConfig::meters), or null
    std::unique_ptr<OutputBudget> budget_;   // before the spill store and the processes: outlives
    std::unique_ptr<SessionWorker> worker_;
    std::unique_ptr<ProcessManagerImpl> processes_;  // declared after worker_: stops first
    std::unique_ptr<Spill> spill_;
    std::unique_ptr<Checkpoints> checkpoints_;  // null when off; before the executor uses it
    tools::FileStamps stamps_;
    tools::FileLocks locks_;
    tools::ToolRegistry tools_;
    std::unique_ptr<policy::Policy> policy_;
    SessionGrants grants_;  // asks answered "for the session"
    bool structured_content_ = false;
    std::unique_ptr<Executor> executor_;  // last: it refers to every part above
};

}  // namespace stockade::runner
