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

// The path a write or edit may change: resolved, not in the read-only spill directory, in a
// session with a file registry. The error's message is the model-facing text.
Result<workspace::ResolvedPath> resolve_writable_path(ToolContext& ctx, std::string_view input,
                                                      std::string_view tool);

// Whether a search result may be shown (ToolContext::may_read; true when that is unset).
bool may_read(const ToolContext& ctx, const std::string& display_path);
// ---- Spill -------------------------------------------------------------------------------

// Spills `content` and returns its path, or "" if there is no spill store or it failed.
std::string spill_text(ToolContext& ctx, std::string_view tool, std::string_view content);

}  // namespace stockade::tools
