// stockade: the CLI. Each verb is a file of its own (run_command.cc, doctor_command.cc).
#include <unistd.h>

#include <string>
#include <string_view>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "common/log.h"
#include "common/version.h"
#include "runner/cli/doctor_command.h"
#include "runner/cli/exit_codes.h"
#include "runner/cli/http_serve.h"
#include "runner/cli/image_build.h"
#include "runner/cli/image_command.h"
#include "runner/cli/log_command.h"
#include "runner/cli/policy_command.h"
#include "runner/cli/rewind_command.h"
#include "runner/cli/run_command.h"
#include "runner/cli/serve_command.h"
#include "runner/cli/sessions_command.h"
#include "runner/session/session_worker.h"
#include "runner/worker/worker_main.h"
#include "workspace/diagnostics.h"

namespace {

using stockade::runner::kExitUsage;

// --ro, --rw and --env: what of the host a sandbox sees, for run, serve and call alike.
void add_mount_options(CLI::App& app, stockade::runner::RunOptions& o) {
    app.add_option("--ro", o.ro,
                   "Extra host path mounted read-only at the same path, e.g. a toolchain such as "
                   "~/.cargo (repeatable; a directory of it on your PATH joins the sandbox's)");
    app.add_option("--rw", o.rw,
                   "Extra host path mounted read-write at the same path (repeatable)");
    app.add_option("--env", o.env,
                   "Pass NAME from this environment, or set NAME=VALUE (repeatable; everything "
                   "else is dropped)");
    app.add_flag("--package-config", o.package_config,
                 "Give the sandbox your npm, pip and cargo configuration (~/.npmrc, pip.conf, "
                 "~/.cargo/config.toml) read-only, with their credentials left out");
}

// --image and --image-store, for run, serve and call alike.
void add_image_options(CLI::App& app, stockade::runner::RunOptions& o) {
    app.add_option("--image", o.image,
                   "The sandbox's root: host (the host's /usr, read-only), or an image of the "
                   "store, NAME or NAME@sha256:… (see `stockade image list`)")
        ->capture_default_str();
    app.add_option("--image-store", o.image_store,
                   "The image store (default: $STOCKADE_IMAGE_STORE, else the state "
                   "directory's images/)");
}

// --network and --resolve, for run, serve and call alike.
void add_network_options(CLI::App& app, stockade::runner::RunOptions& o) {
    app.add_option("--network", o.network,
                   "none (an empty network namespace, loopback up), allowlist (only through "
                   "Stockade's proxy, to the hosts the rules allow) or host")
        ->capture_default_str();
    app.add_option("--resolve", o.resolve,
                   "--network allowlist: connect NAME[:PORT] to ADDRESS[:PORT] instead of "
                   "resolving it; the only way to reach a private or loopback address "
                   "(repeatable)");
    app.add_option("--network-connections", o.network_connections,
                   "--network allowlist: connections open at once through the proxy (default "
                   "256; more are refused)");
    app.add_option("--network-rate", o.network_rate,
                   "--network allowlist: bytes per second through the proxy, all connections "
                   "together, e.g. 10M (default: no bound)");
}

void add_run_options(CLI::App& run, stockade::runner::RunOptions& o) {
    run.add_option("--workspace", o.workspace,
                   "Project directory, mounted read-write at the same path (default: the current "
                   "directory)");
    add_mount_options(run, o);
    run.add_option("--mask", o.masked_paths,
                   "Hide a path of the workspace or a bind: an empty, unreadable file or directory "
                   "over it (repeatable; needs --isolation full or namespaces)");
    run.add_option("--read-only", o.read_only_paths,
                   "Make a path of the workspace or a bind read-only (repeatable; needs "
                   "--isolation full or namespaces)");
    run.add_flag("--writable-git", o.writable_git,
                 "Let the command change .git/config and .git/hooks (read-only by default: a "
                 "hook planted there would run with your next git command, outside the sandbox)");
    add_network_options(run, o);
    run.add_option("--policy", o.network_policy.files,
                   "--network allowlist: a settings file whose network rules apply "
                   "(sandbox.network.allowedDomains, network.access(...); repeatable)");
    run.add_option("--allow", o.network_policy.allow,
                   "--network allowlist: an allow rule, e.g. 'network.access(*.npmjs.org)' "
                   "(repeatable)");
    run.add_option("--deny", o.network_policy.deny,
                   "--network allowlist: a deny rule, e.g. 'network.access(evil.example)' "
                   "(repeatable)");
    run.add_option("--allow-preset", o.network_policy.allow_presets,
                   "--network allowlist: allow a named list of hosts, e.g. registries (the "
                   "package registries and code hosts; repeatable)");
    run.add_flag("--no-user-settings", o.network_policy.no_user_settings,
                 "--network allowlist: ignore the user's settings "
                 "($XDG_CONFIG_HOME/stockade/settings.json, ~/.config/stockade/settings.json)");
    run.add_option("--memory", o.memory, "Memory limit, e.g. 512M or 2G (swap included)");
    run.add_option("--pids", o.pids, "Maximum number of processes and threads");
    run.add_option("--cpu", o.cpu, "CPU limit in CPUs, e.g. 0.5 or 2");
    run.add_option("--tmp-size", o.tmp_size, "Size of /tmp (default 1G)");
    run.add_option("--timeout", o.timeout,
                   "Kill the sandbox after this long, e.g. 30 or 1.5m (exit status 124)");
    run.add_option("--isolation", o.isolation, "auto, full, namespaces, landlock or none")
        ->capture_default_str();
    add_image_options(run, o);
    run.add_option("--cwd", o.cwd, "Working directory inside the sandbox");
    run.add_option("--host-uid", o.host_uid,
                   "Root callers: host uid the sandbox user maps to (default 1879048192)");
    run.add_option("--host-gid", o.host_gid,
                   "Root callers: host gid the sandbox user maps to (default 1879048192)");
    run.add_option("command", o.command, "The command and its arguments, after --");
    run.positionals_at_end();
    run.footer(
        "Exit status: the command's own, 128+N if signal N killed it, 124 on --timeout, 125 if\n"
        "the sandbox could not be built, 126/127 if the command cannot be executed / is not\n"
        "found, 77 if the isolation level asked for is not available, 2 for a usage error.");
}

void add_sandbox_options(CLI::App& app, stockade::runner::RunOptions& o) {
    add_network_options(app, o);
    add_image_options(app, o);
    app.add_option("--isolation", o.isolation, "auto, full, namespaces, landlock or none")
        ->capture_default_str();
    app.add_option("--memory", o.memory, "Memory limit of the session's sandbox, e.g. 2G");
    app.add_option("--pids", o.pids, "Maximum number of processes in the session's sandbox");
    app.add_option("--cpu", o.cpu, "CPU limit in CPUs, e.g. 0.5 or 2");
    app.add_option("--tmp-size", o.tmp_size, "Size of the sandbox's /tmp (default 1G)");
    add_mount_options(app, o);
    app.add_option("--host-uid", o.host_uid,
                   "Root callers: host uid (and gid, unless --host-gid) of the session's sandbox "
                   "user (default: one of its own per session, from 1879048193)");
    app.add_option("--host-gid", o.host_gid,
                   "Root callers: host gid of the session's sandbox user");
    app.add_option("--host-uid-range", o.host_uid_range,
                   "Root callers: the host uids sessions get one each of, FIRST-LAST (default "
                   "1879048193-1879113728); give each supervisor of a host its own range, or "
                   "share one: leases are per id, through /run/stockade/host-ids");
    app.add_option("--git-identity", o.git_identity,
                   "\"Name <email>\" for commits made in the sandbox (default: user.name and "
                   "user.email of your git config)");
    app.add_option("--checkpoints", o.checkpoints,
                   "on (default) or off: after each call that may change the workspace, record "
                   "what changed, so that stockade rewind can put it back (docs/rewind.md)");
    app.add_option("--checkpoint-quota", o.checkpoint_quota,
                   "What a session's checkpoints keep on disk; the oldest are dropped first "
                   "(default 512M)");
    app.add_option("--checkpoint-file-cap", o.checkpoint_file_cap,
                   "Files larger than this are recorded by their size and times only and cannot "
                   "be rewound (default 8M, at most 8M)");
}

void add_policy_options(CLI::App& app, stockade::runner::PolicyFlags& p) {
    app.add_option("--policy", p.files,
                   "A settings file with permission rules (repeatable; Claude Code's "
                   ".claude/settings.json works as it is)");
    app.add_option("--mode", p.mode,
                   "local (an ask prompts the user), ci (an ask is a deny, no network) or hosted");
    app.add_option("--preset", p.preset,
                   "What no rule decides: read-only, workspace-write (default) or "
                   "danger-full-access");
    app.add_option("--allow", p.allow, "An allow rule, e.g. 'Bash(npm run test:*)' (repeatable)");
    app.add_option("--ask", p.ask, "An ask rule (repeatable)");
    app.add_option("--deny", p.deny, "A deny rule, e.g. 'Read(./.env)' (repeatable)");
    app.add_option("--allow-preset", p.allow_presets,
                   "Allow the hosts of a network preset: registries (npm, PyPI, crates.io, Go, "
                   "Debian, GitHub) (repeatable)");
    app.add_option("--ask-fallback", p.ask_fallback,
                   "When the client cannot ask the user (no elicitation): deny (default) or allow");
    app.add_flag("--no-user-settings", p.no_user_settings,
                 "Ignore ~/.config/stockade/settings.json");
}

// The workspace module's diagnostics (workspace/diagnostics.h), where the supervisor runs it:
// into the "workspace" logger, at that logger's level (SPDLOG_LEVEL), in its format.
void route_workspace_diagnostics() {
    using stockade::workspace::Severity;
    const spdlog::level::level_enum level = stockade::log::get("workspace")->level();
    const Severity least = level <= spdlog::level::debug  ? Severity::kDebug
                           : level <= spdlog::level::warn ? Severity::kWarning
                                                          : Severity::kError;
    stockade::workspace::set_diagnostics_sink(
        [](Severity severity, std::string_view message) {
            const spdlog::level::level_enum as = severity == Severity::kDebug ? spdlog::level::debug
                                                 : severity == Severity::kWarning
                                                     ? spdlog::level::warn
                                                     : spdlog::level::err;
            stockade::log::get("workspace")->log(as, "{}", message);
        },
        least);
}

}  // namespace

int main(int argc, char** argv) {
    // The session worker, where it is this binary (builds without an embedded worker, hosts
    // without executable memfds: runner/session/worker_binary.h).
    if (int status = 0; stockade::worker::run_worker_if_asked(argc, argv, &status)) {
        return status;
    }
    stockade::log::init();
    route_workspace_diagnostics();
    CLI::App app{"Stockade: a sandboxed tool runner for AI coding agents", "stockade"};
    app.set_version_flag("--version", "stockade " + std::string(stockade::kVersion));
    app.require_subcommand(1);
    // Global, before or after the verb (fallthrough: a verb hands the options it lacks up).
    std::string log_format;
    app.add_option("--log-format", log_format,
                   "Logs on stderr: text (default) or json, one object per line (overrides "
                   "$STOCKADE_LOG_FORMAT)")
        ->check(CLI::IsMember({"text", "json"}));
    app.fallthrough();

    stockade::runner::RunOptions run_options;
    CLI::App* run = app.add_subcommand(
        "run", "Run a command in a sandbox: stockade run [options] -- CMD [ARGS...]");
    add_run_options(*run, run_options);
    CLI::App* doctor = app.add_subcommand("doctor", "Check what isolation this host can give");
    std::string doctor_tenants;
    doctor->add_option("--tenants", doctor_tenants,
                       "A tenants file of serve --http: what isolation, uids and limits each "
                       "tenant's sessions will get here");

    stockade::runner::ServeOptions serve_options;
    CLI::App* serve = app.add_subcommand(
        "serve", "Serve MCP on stdin/stdout: every tool call runs in the session's sandbox");
    serve->add_option("--workspace", serve_options.workspace,
                      "Project directory (default: the current directory)");
    serve->add_option("--state-dir", serve_options.state_dir,
                      "Where sessions keep their event log and spilled output (default: "
                      "$STOCKADE_STATE_DIR, $XDG_STATE_HOME/stockade or ~/.local/state/stockade)");
    serve->add_option("--resume", serve_options.resume,
                      "Continue a session: its file stamps are rebuilt from its event log");
    serve->add_option("--process-log-cap", serve_options.process_log_cap,
                      "Per-process output log size; output past it is not kept on disk "
                      "(default 8G)");
    serve->add_option("--output-budget", serve_options.output_budget,
                      "What the session keeps on disk of spilled results and process logs "
                      "together, never more; the oldest are pruned first, and a log that would go "
                      "past it keeps its start and what of its tail still fits (default 512M)");
    serve->add_flag("--structured-content", serve_options.structured_content,
                    "Also send each result's metadata as structuredContent, with an outputSchema "
                    "per tool (off by default: Claude Code and Codex then show the model the "
                    "metadata instead of the output; it is always in the result's _meta)");
    add_policy_options(*serve, serve_options.policy);
    add_sandbox_options(*serve, serve_options.sandbox);
    serve->add_option("--http", serve_options.http,
                      "Serve MCP over Streamable HTTP on ADDRESS:PORT or unix:/PATH instead of "
                      "stdio: many sessions, each in its own sandbox (docs/http.md)");
    serve->add_option("--tenants", serve_options.tenants,
                      "With --http: the tenants file (JSON or .toml): token hashes, workspace "
                      "root, policy, uid range and limits of each tenant");
    serve->add_option("--token-file", serve_options.token_file,
                      "With --http and no --tenants: SHA-256 hashes of the accepted bearer "
                      "tokens, one per line (stockade token hash)");
    serve->add_option("--admin-token-file", serve_options.admin_token_file,
                      "With --http: hashes of the operator's tokens, for /metrics and "
                      "/admin/sessions (and, with --pod, /admin/bind and /admin/pod)");
    serve->add_option("--oauth", serve_options.oauth,
                      "With --http and --tenants: be an OAuth 2.1 resource server. FILE (JSON "
                      "or .toml) names the authorization server (issuer), this server's URL "
                      "(resource), the JWKS file to check access tokens with, the scope they "
                      "need and the claim that names their tenant; tenants then list no "
                      "token_sha256 (docs/http.md#oauth-resource-server)");
    serve->add_flag("--no-auth", serve_options.no_auth,
                    "With --http on a loopback address or unix socket: accept requests without "
                    "a token (tests, local use)");
    serve->add_option("--allowed-host", serve_options.allowed_hosts,
                      "With --http on loopback: another Host value to answer to (repeatable)");
    serve->add_option("--allowed-origin", serve_options.allowed_origins,
                      "With --http: an Origin (https://app.example.com) browsers may call from "
                      "(repeatable)");
    serve->add_option("--max-sessions", serve_options.max_sessions,
                      "With --http and no --tenants: sessions open at once (default 64)");
    serve->add_option("--drain", serve_options.drain,
                      "With --http: seconds running calls may finish after SIGTERM (default 30); "
                      "with --pod, seconds from SIGTERM to exit, calls included (default 20): "
                      "keep it below the pod's terminationGracePeriodSeconds");
    serve->add_flag("--pod", serve_options.pod,
                    "With --http: a Kubernetes pod of a warm pool (agent-sandbox), started with "
                    "no tenant and bound once to one, given as in a tenants file, by POST "
                    "/admin/bind (needs --admin-token-file) or --bind-file; /mcp answers 503 "
                    "until then. The tenant's token may come in Stockade-Token: TOKEN, as the "
                    "router strips Authorization (docs/http.md)");
    serve->add_option("--bind-file", serve_options.bind_file,
                      "With --pod: a file (a mounted Secret or ConfigMap) read every second; "
                      "once it holds a binding, {\"tenant\": {...}, \"expires\": \"...\"}, "
                      "the pod is bound to it");
    serve->add_option("--pod-idle-ttl", serve_options.pod_idle_ttl,
                      "With --pod: a bound pod with no session and no request for this long "
                      "exits (90s, 30m, 2h; default 30m); it also exits at its binding's "
                      "expires");

    stockade::runner::CallOptions call_options;
    CLI::App* call = app.add_subcommand(
        "call",
        "Run one tool call from the shell: stockade call read '{\"file_path\": \"README.md\"}'");
    call->add_option("tool", call_options.tool, "read, write, edit, grep, glob, bash or process")
        ->required();
    call->add_option("arguments", call_options.arguments, "The arguments, a JSON object")
        ->required();
    call->add_option("--workspace", call_options.workspace,
                     "Project directory (default: the current directory)");
    call->add_option("--state-dir", call_options.state_dir, "State directory (as for serve)");
    call->add_option("--resume", call_options.resume,
                     "Run the call in an earlier session (its file stamps, as for serve)");
    call->add_flag("--json", call_options.json,
                   "Print the whole result (content, _meta, isError) as JSON");
    call->add_option("--process-log-cap", call_options.process_log_cap,
                     "Per-process output log size (as for serve)");
    call->add_option("--output-budget", call_options.output_budget,
                     "What the session keeps of spilled results and logs (as for serve)");
    add_policy_options(*call, call_options.policy);
    add_sandbox_options(*call, call_options.sandbox);

    stockade::runner::RewindOptions rewind_options;
    CLI::App* rewind = app.add_subcommand(
        "rewind",
        "Put a session's workspace back as it was just before one of its calls: stockade "
        "rewind SESSION --to CALL (docs/rewind.md)");
    rewind->add_option("session", rewind_options.session, "The session's id (stockade log)")
        ->required();
    rewind
        ->add_option(
            "--to", rewind_options.to,
            "The call: the workspace is restored as it was just before it; or @N, as checkpoint N "
            "recorded it (stockade log shows them)")
        ->required();
    rewind->add_flag("--dry-run", rewind_options.dry_run,
                     "Say what would be restored, removed or left, and change nothing");
    rewind->add_flag("--force", rewind_options.force,
                     "Also overwrite files changed outside the session since its last "
                     "checkpoint (listed and left alone otherwise)");
    rewind->add_flag("--json", rewind_options.json, "Print the report as JSON");
    rewind->add_option("--state-dir", rewind_options.state_dir, "State directory (as for serve)");
    rewind->add_option("--workspace", rewind_options.sandbox.workspace,
                       "The session's workspace (default: the one its log names)");
    add_policy_options(*rewind, rewind_options.policy);
    add_sandbox_options(*rewind, rewind_options.sandbox);

    CLI::App* token = app.add_subcommand("token", "Tokens of serve --http");
    token->require_subcommand(1);
    CLI::App* token_hash = token->add_subcommand(
        "hash",
        "Print the SHA-256 of the token read from stdin, for --token-file or a tenants "
        "file's token_sha256");

    stockade::runner::LogOptions log_options;
    CLI::App* log_verb = app.add_subcommand(
        "log",
        "What sessions did: stockade log lists the sessions of the state directory; stockade "
        "log SESSION prints one's event log as a timeline (calls, decisions, files changed, "
        "processes, network refusals)");
    log_verb->add_option(
        "session", log_options.session,
        "The session: its id (s-…), its MCP session id (serve --http), or a prefix "
        "of either that only it has");
    log_verb->add_option("--state-dir", log_options.state_dir,
                         "The state directory serve used (default: $STOCKADE_STATE_DIR, "
                         "$XDG_STATE_HOME/stockade or ~/.local/state/stockade)");
    log_verb->add_flag("--json", log_options.json,
                       "The list as a JSON array of {id, tenant, mcp_session, workspace, started, "
                       "last_activity, calls, running, resumable, skipped_lines, problem}; a "
                       "session's events as JSON lines, one object per line as in events.jsonl");
    log_verb->add_flag(
        "-f,--follow", log_options.follow,
        "Keep printing the events appended to the session's log until it ends (or ^C)");
    log_verb->add_option(
        "--since", log_options.since,
        "Only events from then on: a duration back from now (90s, 10m, 2h, 1d, 1h30m) "
        "or a time (2026-11-30T12:00:00Z, 2026-11-30T13:00:00+01:00, 2026-11-30)");

    CLI::App* sessions =
        app.add_subcommand("sessions", "The sessions of a serve --http: list them, end some");
    sessions->require_subcommand(1);
    stockade::runner::SessionsOptions sessions_options;
    for (CLI::App* verb :
         {sessions->add_subcommand("list",
                                   "List the sessions: id, tenant, event log id, age, idle time, "
                                   "calls made and running"),
          sessions->add_subcommand("kill", "End sessions: stockade sessions kill ID...")}) {
        verb->add_option("--server", sessions_options.server,
                         "serve --http's address: http://HOST:PORT or unix:/PATH (default: "
                         "$STOCKADE_SERVER, else http://127.0.0.1:8787)");
        verb->add_option("--admin-token-file", sessions_options.admin_token_file,
                         "A file whose first line is the admin token, the one whose hash is in "
                         "serve's --admin-token-file (default: $STOCKADE_ADMIN_TOKEN)");
    }
    CLI::App* sessions_list = sessions->get_subcommand("list");
    sessions_list->add_flag("--json", sessions_options.json,
                            "Print the server's JSON as it is: {\"sessions\": [{id, tenant, "
                            "log_id, age_seconds, idle_seconds, calls, calls_made}]} (calls: "
                            "running or waiting)");
    CLI::App* sessions_kill = sessions->get_subcommand("kill");
    sessions_kill->add_option("ids", sessions_options.ids, "The ids of the sessions to end")
        ->required();

    CLI::App* image = app.add_subcommand(
        "image",
        "The image store: import, pull and build images, list, inspect and remove them "
        "(docs/images.md)");
    image->require_subcommand(1);
    stockade::runner::ImageOptions image_options;
    CLI::App* image_import = image->add_subcommand(
        "import",
        "Import an OCI image layout (a directory or a tar of one), a docker-archive tar or a "
        "root file system tar: stockade image import FILE|DIR --name NAME");
    image_import
        ->add_option("input", image_options.input,
                     "The file or directory (DIR:REF "
                     "picks one image of a layout)")
        ->required();
    image_import->add_option("--name", image_options.name,
                             "The image's name in the store, e.g. debian:12");
    image_import->add_option("--max-size", image_options.max_size,
                             "Refuse an image holding more than this uncompressed, e.g. 64M "
                             "or 8G (default 8G)");
    image_import->add_option("--max-entries", image_options.max_entries,
                             "Refuse an image with more archive entries than this (default "
                             "1000000)");
    image_import->add_flag("--json", image_options.json, "Print the imported image as JSON");
    CLI::App* image_pull = image->add_subcommand(
        "pull", "Pull an image from a registry: stockade image pull debian:12 [--name NAME]");
    image_pull
        ->add_option("reference", image_options.input,
                     "REGISTRY/REPOSITORY[:TAG][@sha256:…]; docker.io when no registry is "
                     "given; a digest pins it (a mismatch is refused)")
        ->required();
    image_pull->add_option("--name", image_options.name,
                           "The image's name in the store (default: the reference as given)");
    image_pull->add_option("--authfile", image_options.authfile,
                           "Credentials, a containers auth.json or docker config.json (default: "
                           "$REGISTRY_AUTH_FILE, else $XDG_RUNTIME_DIR/containers/auth.json, "
                           "else ~/.docker/config.json)");
    image_pull->add_option("--ca-file", image_options.ca_file,
                           "A PEM of CA certificates to trust besides the system's");
    image_pull->add_option("--insecure-registry", image_options.insecure_registries,
                           "HOST:PORT reached over plain HTTP; loopback addresses only "
                           "(repeatable)");
    image_pull->add_option("--max-size", image_options.max_size,
                           "Refuse an image holding more than this uncompressed (default 8G)");
    image_pull->add_flag("--json", image_options.json, "Print the pulled image as JSON");
    CLI::App* image_list = image->add_subcommand("list", "List the images");
    image_list->add_flag("--json", image_options.json,
                         "Print a JSON array of {name, digest, size, entries, source, created, "
                         "os_release}");
    CLI::App* image_inspect = image->add_subcommand("inspect", "Show one image");
    image_inspect->add_option("name", image_options.name, "NAME, NAME@sha256:… or sha256:…")
        ->required();
    image_inspect->add_flag("--json", image_options.json, "Print it as a JSON object");
    CLI::App* image_rm = image->add_subcommand("rm", "Remove an image's name");
    image_rm->add_option("name", image_options.name, "NAME")->required();
    CLI::App* image_gc = image->add_subcommand(
        "gc", "Delete the trees and blobs no name points at and no running session uses");
    image_gc->add_flag("--json", image_options.json, "Print what was removed as JSON");
    stockade::runner::ImageBuildOptions build_options;
    CLI::App* image_build = image->add_subcommand(
        "build",
        "Build an image: a Debian root made by mmdebstrap (--suite), or an image of the store "
        "(--from), then a recipe's steps, each in a sandbox: stockade image build NAME --suite "
        "bookworm --include python3,git");
    image_build->add_option("name", build_options.name, "The image's name in the store")
        ->required();
    image_build->add_option("--recipe", build_options.recipe,
                            "A recipe file (TOML: suite or image, packages, run, allow; "
                            "docs/images.md); the flags below add to it or replace its values");
    image_build->add_option("--suite", build_options.suite,
                            "Start from a Debian root of this suite, e.g. bookworm (mmdebstrap)");
    image_build->add_option("--from", build_options.base,
                            "Start from this image of the store instead, NAME or sha256:…");
    image_build
        ->add_option("--include", build_options.include,
                     "Debian packages to install, comma-separated")
        ->delimiter(',')
        ->allow_extra_args(false);
    image_build->add_option("--mirror", build_options.mirror,
                            "The Debian mirror (default: mmdebstrap's, deb.debian.org)");
    image_build->add_option("--variant", build_options.variant,
                            "mmdebstrap's --variant (default minbase)");
    image_build
        ->add_option("--run", build_options.run,
                     "A step: a shell command run as root in a sandbox over the image "
                     "(repeatable; after the recipe's)")
        ->allow_extra_args(false);
    image_build
        ->add_option("--allow", build_options.allow,
                     "A host the steps may reach besides the registries preset, "
                     "HOST[:PORT] (repeatable)")
        ->allow_extra_args(false);
    image_build
        ->add_option("--resolve", build_options.resolve,
                     "NAME[:PORT]=ADDRESS[:PORT]: where the steps' proxy connects for "
                     "NAME (a mirror at a private address), as run's --resolve")
        ->allow_extra_args(false);
    image_build->add_option("--source-date-epoch", build_options.source_date_epoch,
                            "Clamp every file's time to this (default: $SOURCE_DATE_EPOCH, else "
                            "2024-01-01): the same inputs give the same digest");
    image_build->add_flag("--json", build_options.json, "Print the built image as JSON");
    image_build->add_option("--image-store", build_options.store,
                            "The image store (default: $STOCKADE_IMAGE_STORE, else the state "
                            "directory's images/)");
    for (CLI::App* verb :
         {image_import, image_pull, image_list, image_inspect, image_rm, image_gc}) {
        verb->add_option("--image-store", image_options.store,
                         "The image store (default: $STOCKADE_IMAGE_STORE, else the state "
                         "directory's images/)");
    }

    CLI::App* policy = app.add_subcommand("policy", "Check settings files; explain a decision");
    policy->require_subcommand(1);
    stockade::runner::PolicyCheckOptions check_options;
    CLI::App* check = policy->add_subcommand(
        "check", "Validate settings files: every problem, then exit 0 (valid) or 1");
    check->add_option("files", check_options.files, "Settings files")->required();
    check->add_option("--workspace", check_options.workspace,
                      "Workspace that ./x rules refer to (default: the current directory)");
    stockade::runner::PolicyExplainOptions explain_options;
    CLI::App* explain = policy->add_subcommand(
        "explain",
        "How the policy decides one call: stockade policy explain bash '{\"command\": \"curl "
        "x\"}'; or one connection: stockade policy explain network pypi.org:443");
    explain
        ->add_option("tool", explain_options.tool,
                     "read, write, edit, grep, glob, bash or process; or network")
        ->required();
    explain
        ->add_option("arguments", explain_options.arguments,
                     "The call's arguments, a JSON object; for network, HOST[:PORT]")
        ->required();
    explain->add_option("--workspace", explain_options.workspace,
                        "Project directory (default: the current directory)");
    explain->add_flag("--json", explain_options.json, "Print the explanation as JSON");
    add_policy_options(*explain, explain_options.policy);

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::string where = "stockade";
        for (CLI::App* verb :
             {run,           doctor,        serve,         call,         rewind,
              policy,        check,         explain,       token,        sessions,
              sessions_list, sessions_kill, image,         image_import, image_pull,
              image_build,   image_list,    image_inspect, image_rm,     image_gc}) {
            if (verb->parsed()) {
                where += " " + verb->get_name();
            }
        }
        if (log_verb->parsed()) {
            where += " log";
        }
        fmt::print(stderr, "{}: {}. Run '{} --help' for usage.\n", where, e.what(), where);
        return kExitUsage;
    }
    if (auto format = stockade::log::parse_format(log_format)) {
        stockade::log::set_format(*format);
    }
    if (run->parsed()) {
        return stockade::runner::run_command(run_options);
    }
    if (doctor->parsed()) {
        return doctor_tenants.empty() ? stockade::runner::doctor_command()
                                      : stockade::runner::doctor_tenants_command(doctor_tenants);
    }
    if (serve->parsed()) {
        return serve_options.http.empty() ? stockade::runner::serve_command(serve_options)
                                          : stockade::runner::http_serve_command(serve_options);
    }
    if (call->parsed()) {
        return stockade::runner::call_command(call_options);
    }
    if (rewind->parsed()) {
        return stockade::runner::rewind_command(rewind_options);
    }
    if (log_verb->parsed()) {
        return stockade::runner::log_command(log_options);
    }
    if (token_hash->parsed()) {
        return stockade::runner::token_hash_command();
    }
    if (sessions_list->parsed()) {
        return stockade::runner::sessions_list_command(sessions_options);
    }
    if (sessions_kill->parsed()) {
        return stockade::runner::sessions_kill_command(sessions_options);
    }
    if (image_import->parsed()) {
        return stockade::runner::image_import_command(image_options);
    }
    if (image_pull->parsed()) {
        return stockade::runner::image_pull_command(image_options);
    }
    if (image_build->parsed()) {
        return stockade::runner::image_build_command(build_options);
    }
    if (image_list->parsed()) {
        return stockade::runner::image_list_command(image_options);
    }
    if (image_inspect->parsed()) {
        return stockade::runner::image_inspect_command(image_options);
    }
    if (image_rm->parsed()) {
        return stockade::runner::image_rm_command(image_options);
    }
    if (image_gc->parsed()) {
        return stockade::runner::image_gc_command(image_options);
    }
    if (check->parsed()) {
        return stockade::runner::policy_check_command(check_options);
    }
    if (explain->parsed()) {
        return stockade::runner::policy_explain_command(explain_options);
    }
    return kExitUsage;
}
