// ripgrep for the search tools (grep, glob, and the near-miss suggestions of read): its
// arguments, how a run ended, the model-facing failures and notes, and the paths it printed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "tools/tool.h"
#include "workspace/workspace.h"

namespace stockade::tools {

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

}  // namespace stockade::tools
