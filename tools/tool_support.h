// What the five file tools share: argument access, path resolution with the model-facing
// hints, not-found suggestions, the ripgrep arguments every search uses, spilling, and the
// model-facing sentence for a failed Workspace call.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "tools/diff.h"
#include "tools/tool.h"
#include "workspace/workspace.h"

namespace stockade::tools {

inline constexpr uint64_t kMaxFileBytes = 10ULL << 20;  // read refuses (and pages within) this

// ---- Arguments (already checked by validate_arguments; null counts as omitted) ----------

std::string arg_string(const nlohmann::json& args, std::string_view key);
std::optional<std::string> opt_string(const nlohmann::json& args, std::string_view key);
std::optional<int64_t> opt_int(const nlohmann::json& args, std::string_view key);
bool opt_bool(const nlohmann::json& args, std::string_view key, bool fallback);

// ---- Results -----------------------------------------------------------------------------

ToolResult error_result(std::string content, nlohmann::json metadata = nlohmann::json::object());

// The protected path (ToolContext::protected_paths) that `path` (absolute) is or lies in.
const ProtectedPath* protected_path_of(const ToolContext& ctx, std::string_view path);

// For a command's output: a note for each protected path that the output shows a write to
// failing ("Read-only file system", "Device or resource busy", "Permission denied", ...),
// saying it is protected and why. Empty when there is none.
std::string protected_paths_note(const ToolContext& ctx, std::string_view output);

// The variables every command of bash and process gets on top of the sandbox's environment:
// no pager or terminal prompt to wait on (TERM=dumb, PAGER=cat, GIT_PAGER=cat,
// GIT_TERMINAL_PROMPT=0), and output that is not held back in a buffer while it runs
// (PYTHONUNBUFFERED=1), since a command may move to the background and be read live.
std::vector<std::string> command_env();

// A tool's output_schema(): an object with `properties` (JSON Schema of each metadata field)
// plus what every result carries: duration_ms (required), title and truncation.
nlohmann::json metadata_schema(nlohmann::json properties);
// JSON Schema snippets for metadata fields: {"type": "<type>"} and {"type": ["<type>", "null"]}.
nlohmann::json of_type(std::string_view type);
nlohmann::json nullable(std::string_view type);

class Stopwatch {
public:
    [[nodiscard]] int64_t ms() const {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - start_)
            .count();
    }

private:
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

inline constexpr std::string_view kCancelledText = "[Tool execution cancelled by user]";

// ---- Paths -------------------------------------------------------------------------------

// resolve_path against the context's roots. For an absolute path outside the workspace that
// exists when read as relative to it, the error adds "Maybe you meant <that path>?".
Result<workspace::ResolvedPath> resolve_tool_path(ToolContext& ctx, std::string_view input);
// The workspace root itself.
workspace::ResolvedPath workspace_root(ToolContext& ctx);
// For titles and listings: workspace-relative ("." for the root); absolute for spill files.
std::string short_path(const workspace::ResolvedPath& path);
// "<noun> not found: PATH. Did you mean one of these? a, b" (up to 3 suggestions from the
// parent directory's listing and rg --files), or a plain sentence with a next step. PATH and
// the suggestions are shown as listed_name shows them (quoted when not plain).
std::string not_found_message(ToolContext& ctx, const workspace::ResolvedPath& path,
                              std::string_view noun = "File", std::string_view next_step = {});
// "Cannot write PATH: permission denied. …" for a failed Workspace call.
std::string io_failure(std::string_view verb, std::string_view display, const Error& error);
// The spill directory cannot be changed.
std::string read_only_spill_message(ToolContext& ctx, const workspace::ResolvedPath& path);

// Read-before-write and external-modification check shared by write and edit (TOOL_PROTOCOL
// §3.2): the file's current bytes when the agent read it this session and it has not changed
// since; else the model-facing refusal ("Refusing to <verb> <path>: ...") as the error.
Result<std::string> read_unchanged_since_stamp(ToolContext& ctx,
                                               const workspace::ResolvedPath& path,
                                               std::string_view verb);

// Stamps the bytes the agent read (the read-before-write rule) and records FileRead.
void stamp_read(ToolContext& ctx, const workspace::ResolvedPath& path, std::string_view bytes,
                int64_t mtime_ns);

// What write and edit do once they know the new bytes: the diff against the old ones, the
// atomic write, the new stamp, and the FileModified event (durable). Errors are the
// model-facing sentence (a cancelled call, a failed write).
struct Committed {
    DiffResult diff{};
};
Result<Committed> commit_file(ToolContext& ctx, const workspace::ResolvedPath& path,
                              std::string_view old_bytes, const std::string& new_bytes,
                              bool created);

// The path a write or edit may change: resolved, not in the read-only spill directory, in a
// session with a file registry. The error's message is the model-facing text.
Result<workspace::ResolvedPath> resolve_writable_path(ToolContext& ctx, std::string_view input,
                                                      std::string_view tool);

// ---- ripgrep -----------------------------------------------------------------------------

inline constexpr std::string_view kIgnoreFile = ".stockadeignore";

// Ignore handling shared by grep and glob: .gitignore even outside a git repository, and
// .stockadeignore (workspace root) when it exists.
std::vector<std::string> rg_ignore_args(ToolContext& ctx, workspace::Root root);
// The search path argument: "." for the root, else the relative path.
std::string rg_path_arg(const workspace::ResolvedPath& path);
// A path printed by rg (relative to the root, maybe "./"-prefixed) as the model should see it.
std::string rg_display_path(ToolContext& ctx, workspace::Root root, std::string_view printed);
// Makes a glob written relative to the search directory `dir` match from the root, as rg's
// --glob does; a pattern without '/' matches file names at any depth and is left alone.
std::string anchor_glob(std::string_view pattern, std::string_view dir);
// Sorts root-relative file paths newest first (ties by path). rg's --sort orders siblings
// during its walk, not the whole result, so the mtimes come from one listing per directory.
// With more than `max_dirs` directories involved, the order is left as it is.
void sort_newest_first(ToolContext& ctx, workspace::Root root, std::vector<std::string>& paths,
                       size_t max_dirs = 5000);
// rg exits 2 both when it could not run (bad pattern or glob: stderr lines start with
// "error" or "regex parse error") and when only some files could not be read ("rg: path:
// Permission denied"); only the former means the search did not happen.
bool rg_fatal(const workspace::RgOutcome& out);

// How an rg run ended. rg itself exits 0 (found), 1 (nothing found) or 2 (errors); the
// Workspace reports a kill by signal N as 128 + N and the timeout as -1 (RgOutcome).
enum class RgEnd : uint8_t {
    kCompleted,   // 0 or 1
    kUnreadable,  // 2, and every stderr line names one path rg could not read: the rest was
                  // searched (masked files of a deny rule are such paths)
    kRefused,     // 2 and rg_fatal: rg refused the pattern or a glob before searching
    kTimedOut,
    kSignaled,  // killed by a signal (the sandbox's memory limit kills with SIGKILL)
    kFailed,    // 2 for any other reason (or no reason given), or any other exit code
};
RgEnd rg_end(const workspace::RgOutcome& out);

// What grep and glob tell the model when rg failed; each says what happened and what to do.
struct RgTask {
    std::string_view tool;     // "grep"
    std::string_view where;    // the path searched, as the model sees it
    std::string_view narrow;   // how to search less: "a more specific path or include filter"
    std::string_view instead;  // a bash command that does the same: "grep -rn -e PATTERN PATH"
};
// For kSignaled and kFailed: the search did not finish, and its results are not shown.
//   grep failed: ripgrep (rg) was killed by SIGKILL while searching /work/proj, so its
//   results are incomplete and none are shown. ...
std::string rg_failure_message(const RgTask& task, const workspace::RgOutcome& out);
// For an rg that could not be started at all (the error of Workspace::run_rg), with advice by
// its errno: rg missing from the image (none, ENOENT, EACCES, ENOEXEC), the sandbox at its
// process or memory limit (EAGAIN, ENOMEM), or anything else.
//   grep could not search /work/proj: ripgrep (rg) could not be started in the sandbox: ENOENT
//   (No such file or directory), so nothing was searched. The sandbox image may lack rg: ...
// `pm` (may be null) names what holds the sandbox's processes when rg could not be forked.
std::string rg_start_failure_message(const RgTask& task, const Error& error, ProcessManager* pm);
// For kUnreadable: one sentence naming how many paths rg could not read and the first of
// them; empty for any other end.
std::string rg_unreadable_note(const workspace::RgOutcome& out);
// Whether a search result may be shown (ToolContext::may_read; true when that is unset).
bool may_read(const ToolContext& ctx, const std::string& display_path);
// "Note: 2 files that matched are not shown: the policy does not let you read them."; "" for 0.
std::string hidden_files_note(size_t hidden);
// Both notes of a search, one per line ("" when there is neither).
std::string search_notes(const std::string& first, const std::string& second);
// The paths rg printed with --null (each ended by a NUL byte, so a name may hold a newline);
// a last one cut by the output cap is left out.
std::vector<std::string_view> rg_null_paths(const workspace::RgOutcome& out);
// A path as rg printed it, without "./".
std::string_view strip_dot_slash(std::string_view printed);
// Up to `max` workspace files (rg --files --null, so that a name holding a newline stays one
// name), for near-miss suggestions.
std::vector<std::string> workspace_files(ToolContext& ctx, size_t max);

// ---- Spill -------------------------------------------------------------------------------

// Spills `content` and returns its path, or "" if there is no spill store or it failed.
std::string spill_text(ToolContext& ctx, std::string_view tool, std::string_view content);

}  // namespace stockade::tools
