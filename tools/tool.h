// A tool: its model-facing schema and description, and execute() over the Workspace seam.
// Tool logic (edit cascade, truncation, formatting, diffs, stamps) runs in the supervisor on
// bytes the worker read; only Workspace calls reach the sandbox (DESIGN.md §1).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "workspace/workspace.h"

namespace stockade::tools {

class FileStamps;
class FileLocks;
class ProcessManager;

// Progress of a long call (MCP notifications/progress when the request asked for them).
using ProgressFn = std::function<void(double done, std::optional<double> total, std::string)>;

// What the model sees (content, is_error) and what the client and the event log see
// (metadata: title, diff, additions, deletions, strategy, replacements, matches, files,
// truncation, duration_ms, ...). Over MCP the metadata travels in the result's _meta under
// kResultMetaKey, never in content, and in structuredContent only when the operator asks.
struct ToolResult {
    std::string content{};
    bool is_error = false;
    nlohmann::json metadata = nlohmann::json::object();
};

// Where oversized outputs go: <state>/tool-output/<session>/<tool>-<call>.txt, a directory
// that is mounted read-only into the sandbox at the same path. Returns that path.
class SpillStore {
public:
    virtual ~SpillStore() = default;
    virtual Result<std::string> spill(std::string_view tool, std::string_view call_id,
                                      std::string_view content) = 0;
};

// Durable domain events the tools emit (the runner writes them to the session's event log).
class ToolEvents {
public:
    virtual ~ToolEvents() = default;
    virtual void file_read(const std::string& path, const std::string& sha256, uint64_t size,
                           int64_t mtime_ns) = 0;
    virtual void file_modified(const std::string& path, const std::string& sha256, uint64_t size,
                               int64_t mtime_ns, int additions, int deletions, bool created) = 0;
};

// The key of the MCP result's _meta that holds ToolResult::metadata (docs/protocol.md §5).
inline constexpr std::string_view kResultMetaKey = "dev.stockade/result";

// A path the sandbox keeps read-only or hides, and why, in words for the model: the notes
// and errors of a refused write name it instead of a bare EROFS or EBUSY.
struct ProtectedPath {
    std::string path{};    // absolute, as seen inside the sandbox
    std::string reason{};  // "Stockade keeps .git/config read-only so that ..."
};

struct ToolContext {
    std::string session_id{};
    std::string call_id{};
    workspace::Workspace* ws = nullptr;
    FileStamps* stamps = nullptr;
    FileLocks* locks = nullptr;
    SpillStore* spill = nullptr;
    ToolEvents* events = nullptr;
    ProcessManager* processes = nullptr;                          // bash and process
    const std::vector<ProtectedPath>* protected_paths = nullptr;  // may be null
    std::stop_token cancel{};
    ProgressFn progress{};  // may be empty
    // Whether the policy lets the model read a file that a directory search (grep, glob)
    // found, by its absolute path: deny rules hold for what a search returns, not only for the
    // directory it was given. Empty: every file.
    std::function<bool(const std::string&)> may_read{};
};

struct ToolAnnotations {
    bool read_only = false;
    bool destructive = false;
    bool idempotent = false;
    bool open_world = false;
};

class Tool {
public:
    virtual ~Tool() = default;
    [[nodiscard]] virtual std::string_view name() const = 0;
    [[nodiscard]] virtual std::string_view title() const = 0;
    [[nodiscard]] virtual std::string_view description() const = 0;
    // JSON Schema of the arguments: type object, snake_case, additionalProperties false.
    [[nodiscard]] virtual nlohmann::json input_schema() const = 0;
    // JSON Schema of ToolResult::metadata: the MCP outputSchema when the metadata is also
    // sent as structuredContent (`serve --structured-content`).
    [[nodiscard]] virtual nlohmann::json output_schema() const = 0;
    [[nodiscard]] virtual ToolAnnotations annotations() const = 0;
    // Runs the tool and records metadata.duration_ms. Arguments were validated against
    // input_schema() by the caller (validate_arguments).
    ToolResult execute(const nlohmann::json& args, ToolContext& ctx);

private:
    virtual ToolResult run(const nlohmann::json& args, ToolContext& ctx) = 0;
};

// The five file tools, in tools/list order: read, write, edit, grep, glob.
std::vector<std::unique_ptr<Tool>> make_file_tools();

// Checks args against a tool's schema. On failure: model-facing repair prose, e.g.
//   Invalid input for tool "edit": parameter "old_string" is required. Please rewrite the
//   input so it satisfies the expected schema.
Status validate_arguments(const Tool& tool, const nlohmann::json& args);

// Every result passes here last: content above 64 KB is cut (UTF-8 safe) and spilled.
inline constexpr size_t kBackstopBytes = 64 * 1024;
void apply_backstop(ToolResult& result, ToolContext& ctx, std::string_view tool_name);

// The tool's entry in an MCP tools/list answer: name, title, description, inputSchema and
// annotations (readOnlyHint, destructiveHint, idempotentHint, openWorldHint).
nlohmann::json mcp_tool_entry(const Tool& tool);

}  // namespace stockade::tools
