// write (TOOL_PROTOCOL §3): create a file or replace all of it. An existing file must have been
// read this session and be unchanged on disk since (FileStamps); its line endings and BOM are
// kept; the Workspace writes atomically and keeps the mode.
#include <fmt/format.h>

#include "policy/requests.h"
#include "tools/diff.h"
#include "tools/file_commit.h"
#include "tools/file_locks.h"
#include "tools/file_stamps.h"
#include "tools/file_tools.h"
#include "tools/text.h"
#include "tools/tool_support.h"

namespace stockade::tools {
namespace {

constexpr std::string_view kDescription =
    "Write a complete file to the workspace, creating it (and parent directories) if needed, or "
    "fully replacing its content if it exists. To modify part of an existing file, use the edit "
    "tool instead \u2014 write replaces the whole file. You must have read an existing file with "
    "the read tool during this session before overwriting it; if the file changed on disk since "
    "you read it, the write is refused and you must re-read first. An existing file keeps its "
    "line endings (CRLF stays CRLF) and its UTF-8 byte order mark.";

// The model writes "\n"; a CRLF file stays CRLF and a file with a BOM keeps it.
std::string conform(std::string_view content, const TextShape& old_shape) {
    TextShape shape;
    shape.crlf = old_shape.crlf;
    shape.bom = old_shape.bom && !content.starts_with(kUtf8Bom);
    return restore_shape(old_shape.crlf ? crlf_to_lf(content) : std::string(content), shape);
}

struct WriteArgs {
    std::string file_path{};
    std::string content{};
};

class WriteTool final : public TypedTool<WriteArgs> {
public:
    WriteTool()
        : TypedTool(ToolSpec{.name = "write",
                             .title = "Write file",
                             .description = std::string(kDescription),
                             .input_schema = input_schema_json(),
                             .output_schema = metadata_schema_json(),
                             .annotations = hints(),
                             .opens_files = true}) {}

private:
    static nlohmann::json input_schema_json() {
        return {
            {"type", "object"},
            {"properties",
             {
                 {"file_path",
                  {{"type", "string"},
                   {"description", "Path of the file to write (absolute preferred)."}}},
                 {"content",
                  {{"type", "string"}, {"description", "The complete new content of the file."}}},
             }},
            {"required", {"file_path", "content"}},
            {"additionalProperties", false},
        };
    }
    static nlohmann::json metadata_schema_json() {
        return metadata_schema({{"path", of_type("string")},
                                {"diff", of_type("string")},
                                {"additions", of_type("integer")},
                                {"deletions", of_type("integer")},
                                {"created", of_type("boolean")},
                                {"lines", of_type("integer")}});
    }
    static ToolAnnotations hints() {
        return {.read_only = false, .destructive = true, .idempotent = true, .open_world = false};
    }

    [[nodiscard]] WriteArgs read_args(const nlohmann::json& json) const override {
        return WriteArgs{.file_path = arg_string(json, "file_path"),
                         .content = arg_string(json, "content")};
    }

    [[nodiscard]] std::vector<policy::CapabilityRequest> capabilities(
        const WriteArgs& args, const policy::RequestContext& where) const override {
        return policy::file_write_requests("write", args.file_path, where);
    }
    ToolResult run(const WriteArgs& args, ToolContext& ctx) const override {
        Result<workspace::ResolvedPath> resolved =
            resolve_writable_path(ctx, args.file_path, "write");
        if (!resolved) {
            return error_result(resolved.error().message);
        }
        const workspace::ResolvedPath& path = *resolved;
        const std::string& content = args.content;

        const FileLocks::Guard guard = ctx.locks->lock(path.display);
        std::string old_bytes;
        std::string new_bytes = content;
        bool existed = false;
        Result<workspace::FileInfo> info = ctx.ws->stat(path.root, path.relative);
        if (info) {
            if (info->type == workspace::FileType::kDirectory) {
                return error_result(fmt::format(
                    "{} is a directory, not a file. Give the path of a file to write, for "
                    "example {}/NAME.",
                    path.display, path.display));
            }
            if (info->type == workspace::FileType::kOther) {
                return error_result(fmt::format(
                    "{} is not a regular file (it is a device, socket or pipe); write only "
                    "writes regular files.",
                    path.display));
            }
            existed = true;
            Result<std::string> current = read_unchanged_since_stamp(ctx, path, "overwrite");
            if (!current) {
                return error_result(current.error().message);
            }
            old_bytes = std::move(current).value();
            new_bytes = conform(content, detect_shape(old_bytes));
        } else if (info.error().code != Errc::kNotFound) {
            return error_result(io_failure("write", path.display, info.error()));
        }

        Result<Committed> committed =
            commit_file(ctx, path, old_bytes, std::move(new_bytes), !existed);
        if (!committed) {
            return error_result(committed.error().message);
        }
        const DiffResult& diff = committed->diff;

        const size_t new_lines = count_lines(committed->content);
        ToolResult r;
        if (existed) {
            r.content = fmt::format("Replaced {} (was {}, now {}).", path.display,
                                    count_of(count_lines(old_bytes), "line", "lines"),
                                    count_of(new_lines, "line", "lines"));
        } else {
            r.content =
                fmt::format("Wrote {} ({}).", path.display, count_of(new_lines, "line", "lines"));
        }
        r.metadata = {
            {"title", existed ? fmt::format("Write {} \u00b7 +{} \u2212{}", short_path(path),
                                            diff.additions, diff.deletions)
                              : fmt::format("Write {} \u00b7 new file \u00b7 {}", short_path(path),
                                            count_of(new_lines, "line", "lines"))},
            {"path", path.display},
            {"diff", diff.text},
            {"additions", diff.additions},
            {"deletions", diff.deletions},
            {"created", !existed},
            {"lines", new_lines},
        };
        return r;
    }
};

}  // namespace

std::unique_ptr<Tool> make_write_tool() {
    return std::make_unique<WriteTool>();
}

}  // namespace stockade::tools
