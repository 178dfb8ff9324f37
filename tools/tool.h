// A tool: its spec (name, model-facing description, schema, annotations), its arguments read
// into a typed call, the capabilities a call asks of the policy, and execute() over the
// Workspace seam.
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

#include "common/event_sink.h"
#include "common/result.h"
#include "policy/capability.h"
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
    EventSink* events = nullptr;          // FileRead, FileModified (may be null)
    ProcessManager* processes = nullptr;  // bash and process
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

// What a tool is, declared once: tools/list shows it, the executor checks arguments against
// its schema, and the annotations say whether a call may change files.
struct ToolSpec {
    std::string name{};         // "read"
    std::string title{};        // "Read file"
    std::string description{};  // model-facing
    // JSON Schema of the arguments: type object, snake_case, additionalProperties false.
    nlohmann::json input_schema = nlohmann::json::object();
    // JSON Schema of ToolResult::metadata: the MCP outputSchema when the metadata is also sent
    // as structuredContent (`serve --structured-content`).
    nlohmann::json output_schema = nlohmann::json::object();
    ToolAnnotations annotations{};
    // Its paths are files it opens itself through the Workspace (read, write, edit, grep,
    // glob): the executor resolves them through symlinks before the policy decides.
    bool opens_files = false;
};

// One call of a tool, its arguments read once into the tool's own typed form (DESIGN.md §3:
// stage 1 made it; the executor asks it for stage 2 and runs it in stage 5).
class ToolCall {
public:
    virtual ~ToolCall() = default;
    // Stage 2 (pure): what the call asks of the policy, its paths resolved lexically against
    // `where` (the workspace, the cwd).
    [[nodiscard]] virtual std::vector<policy::CapabilityRequest> capabilities(
        const policy::RequestContext& where) const = 0;
    // What the call is about to do that cannot be undone ("deletes files recursively"), for
    // the policy's explanation and the result; empty for most calls.
    [[nodiscard]] virtual std::vector<std::string> warnings() const { return {}; }
    // Stage 5: runs it, and records metadata.duration_ms.
    virtual ToolResult execute(ToolContext& ctx) = 0;
};

class Tool {
public:
    virtual ~Tool() = default;
    Tool(const Tool&) = delete;
    Tool& operator=(const Tool&) = delete;

    [[nodiscard]] const ToolSpec& spec() const noexcept { return spec_; }
    [[nodiscard]] std::string_view name() const noexcept { return spec_.name; }
    [[nodiscard]] std::string_view title() const noexcept { return spec_.title; }
    [[nodiscard]] std::string_view description() const noexcept { return spec_.description; }
    [[nodiscard]] const nlohmann::json& input_schema() const noexcept { return spec_.input_schema; }
    [[nodiscard]] const nlohmann::json& output_schema() const noexcept {
        return spec_.output_schema;
    }
    [[nodiscard]] ToolAnnotations annotations() const noexcept { return spec_.annotations; }

    // Stage 1: checks `args` against the schema (kInvalidArgument with the model-facing repair
    // prose of validate_arguments) and reads them into a call.
    [[nodiscard]] Result<std::unique_ptr<ToolCall>> parse(const nlohmann::json& args) const;
    // parse + execute, no policy: for tests and for callers that decided already. A parse
    // failure is an error result with its prose.
    ToolResult execute(const nlohmann::json& args, ToolContext& ctx) const;

protected:
    explicit Tool(ToolSpec spec) : spec_(std::move(spec)) {}

private:
    // Reads arguments that passed the schema check.
    [[nodiscard]] virtual std::unique_ptr<ToolCall> make_call(const nlohmann::json& args) const = 0;

    ToolSpec spec_;
};

// Runs `run`, and records how long it took in the result's metadata.duration_ms.
ToolResult timed(const std::function<ToolResult()>& run);

// A tool whose arguments are the struct `Args`: it reads them, says what they ask of the policy,
// and runs them. Stateless: one object serves every call, from any thread.
template <class Args>
class TypedTool : public Tool {
protected:
    using Tool::Tool;

    // From arguments that passed the schema check: the types are right, required ones present.
    [[nodiscard]] virtual Args read_args(const nlohmann::json& args) const = 0;
    [[nodiscard]] virtual std::vector<policy::CapabilityRequest> capabilities(
        const Args& args, const policy::RequestContext& where) const = 0;
    [[nodiscard]] virtual std::vector<std::string> warnings(const Args& /*args*/) const {
        return {};
    }
    virtual ToolResult run(const Args& args, ToolContext& ctx) const = 0;

private:
    class Call final : public ToolCall {
    public:
        Call(const TypedTool& tool, Args args) : tool_(tool), args_(std::move(args)) {}
        [[nodiscard]] std::vector<policy::CapabilityRequest> capabilities(
            const policy::RequestContext& where) const override {
            return tool_.capabilities(args_, where);
        }
        [[nodiscard]] std::vector<std::string> warnings() const override {
            return tool_.warnings(args_);
        }
        ToolResult execute(ToolContext& ctx) override {
            return timed([&] { return tool_.run(args_, ctx); });
        }

    private:
        const TypedTool& tool_;
        Args args_;
    };

    [[nodiscard]] std::unique_ptr<ToolCall> make_call(const nlohmann::json& args) const override {
        return std::make_unique<Call>(*this, read_args(args));
    }
};

// The five file tools, in tools/list order: read, write, edit, grep, glob.
std::vector<std::unique_ptr<Tool>> make_file_tools();

// Every tool, in tools/list order (read, write, edit, grep, glob, bash, process), found by name.
// Stateless tools: one registry serves every session and thread.
class ToolRegistry {
public:
    ToolRegistry();
    [[nodiscard]] const Tool* find(std::string_view name) const;
    [[nodiscard]] const std::vector<std::unique_ptr<Tool>>& all() const noexcept { return tools_; }

private:
    std::vector<std::unique_ptr<Tool>> tools_;
};

// Checks args against a tool's schema. On failure: model-facing repair prose, e.g.
//   Invalid input for tool "edit": parameter "old_string" is required. Please rewrite the
//   input so it satisfies the expected schema.
Status validate_arguments(const ToolSpec& spec, const nlohmann::json& args);

// Every result passes here last: content above 64 KB is cut (UTF-8 safe) and spilled.
inline constexpr size_t kBackstopBytes = 64 * 1024;
void apply_backstop(ToolResult& result, ToolContext& ctx, std::string_view tool_name);

}  // namespace stockade::tools
