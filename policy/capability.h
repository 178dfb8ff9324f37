// Capability requests: what one tool call asks the policy for (DESIGN.md §3, step 2). A call
// produces one request per thing it would do: a file read or write, a command to execute, a
// network access or a change to git history that its command implies. The policy decides each
// request; the call gets the strictest of those decisions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stockade::policy {

enum class CapabilityKind : uint8_t {
    kFileRead,                 // "file.read": read, grep, glob, and readers in bash commands
    kFileWrite,                // "file.write": write, edit, and writes in bash commands
    kFileWriteOutsideProject,  // "file.write.outsideProject": a write beyond the workspace
    kProcessExecute,           // "process.execute": one simple command of bash / process start
    kNetworkAccess,            // "network.access": derived from a command (curl, git push, ...)
    kGitModify,                // "git.modify": a command that changes git history or state
    kTool,                     // "tool": a use of a tool that needs nothing else (process list)
};
inline constexpr size_t kCapabilityKindCount = 7;

// "file.read", "network.access", ...: the names rules and explanations use.
const char* capability_kind_name(CapabilityKind kind) noexcept;

// One thing a call asks to do. Only the fields of its kind are set.
struct CapabilityRequest {
    CapabilityKind kind = CapabilityKind::kTool;
    std::string
        tool{};  // our tool name: "read", "write", "edit", "grep", "glob", "bash", "process"
    // file.*: absolute and lexically normalised ("." and ".." applied, no trailing slash).
    std::string path{};
    bool directory = false;  // file.read of a search root (grep, glob)
    // process.execute: the simple command with leading assignments and wrappers (env, timeout,
    // sudo, ...) stripped, words joined by single spaces; and the same as written.
    std::string command{};
    std::string full_command{};
    bool opaque = false;         // the command could not be parsed: `command` is the whole text
    bool builtins_only = false;  // the command runs no program, only shell builtins (`cd x`)
    std::string host{};          // network.access: lower-case host name or IP literal, if known
    // network.access: the port connected to; 0: not known (a command's analysis, before it
    // runs). The allowlist proxy always sets it.
    uint16_t port = 0;
    std::string subcommand{};  // git.modify: "commit", "push", ...
    std::string reason{};      // why a derived request exists: "`curl` reaches the network"

    friend bool operator==(const CapabilityRequest&, const CapabilityRequest&) = default;
};

// Where a call runs, to resolve the paths it names.
struct RequestContext {
    std::string workspace_root{};  // absolute
    std::string cwd{};             // absolute; empty: the workspace root
    std::string home{};            // for "~" in commands; empty: "~" paths are not resolved
    // Writes beneath these are not "outside the project": the sandbox's private /tmp.
    std::vector<std::string> scratch_roots{"/tmp"};
    // The commands run in a network namespace of their own (`--network none`): its loopback
    // (127.0.0.0/8, ::1, localhost) reaches only the session's own servers, so connecting
    // there is not network access. False with the host's network, whose loopback is the host's.
    bool private_loopback = false;
};

// `path` joined onto `base` unless it is absolute, with "." and ".." applied lexically (".."
// at "/" stays at "/"), repeated slashes collapsed and no trailing slash. `base` must be
// absolute.
std::string normalise_path(std::string_view path, std::string_view base);
// True when normalised absolute `path` is `root` or lies beneath it.
bool path_within(std::string_view path, std::string_view root);
// True when a write to `path` stays inside the workspace or a scratch root.
bool inside_project(std::string_view path, const RequestContext& ctx);

}  // namespace stockade::policy
