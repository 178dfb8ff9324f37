#include "policy/tool_requests.h"

#include <fmt/format.h>

#include "policy/bash_analysis.h"

namespace stockade::policy {
namespace {

std::string base_dir(const RequestContext& ctx) {
    const std::string root = normalise_path(ctx.workspace_root, "/");
    return ctx.cwd.empty() ? root : normalise_path(ctx.cwd, root);
}

// The directories a glob pattern starts with before its first wildcard ("src/lib/**/*.h" →
// "src/lib"): the narrowest directory the search can reach.
std::string_view literal_directories(std::string_view pattern) {
    size_t end = 0;
    size_t start = 0;
    while (true) {
        const size_t slash = pattern.find('/', start);
        if (slash == std::string_view::npos) {
            break;
        }
        const std::string_view part = pattern.substr(start, slash - start);
        if (part.find_first_of("*?[{\\") != std::string_view::npos) {
            break;
        }
        end = slash;
        start = slash + 1;
    }
    return pattern.substr(0, end);
}

Result<std::string> string_arg(const nlohmann::json& args, std::string_view tool, const char* name,
                               bool required) {
    const auto it = args.is_object() ? args.find(name) : args.end();
    if (it == args.end() || it->is_null()) {
        if (required) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("{}: the argument \"{}\" is required", tool, name)};
        }
        return std::string();
    }
    if (!it->is_string()) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("{}: the argument \"{}\" must be a string", tool, name)};
    }
    return it->get<std::string>();
}

}  // namespace

CapabilityRequest file_read_request(std::string_view tool, std::string_view path,
                                    const RequestContext& ctx, bool directory) {
    return {.kind = CapabilityKind::kFileRead,
            .tool = std::string(tool),
            .path = normalise_path(path, base_dir(ctx)),
            .directory = directory};
}

std::vector<CapabilityRequest> file_write_requests(std::string_view tool, std::string_view path,
                                                   const RequestContext& ctx) {
    std::vector<CapabilityRequest> out;
    std::string resolved = normalise_path(path, base_dir(ctx));
    RequestContext normalised = ctx;
    normalised.workspace_root = normalise_path(ctx.workspace_root, "/");
    const bool inside = inside_project(resolved, normalised);
    out.push_back(
        {.kind = CapabilityKind::kFileWrite, .tool = std::string(tool), .path = resolved});
    if (!inside) {
        out.push_back({.kind = CapabilityKind::kFileWriteOutsideProject,
                       .tool = std::string(tool),
                       .path = std::move(resolved),
                       .reason = "writes outside the workspace"});
    }
    return out;
}

std::vector<CapabilityRequest> process_requests(std::string_view action, std::string_view command,
                                                const RequestContext& ctx) {
    if (action == "start") {
        return bash_requests(command, ctx, "process");
    }
    return {CapabilityRequest{
        .kind = CapabilityKind::kTool, .tool = "process", .command = std::string(action)}};
}

Result<std::vector<CapabilityRequest>> tool_requests(std::string_view tool,
                                                     const nlohmann::json& args,
                                                     const RequestContext& ctx) {
    if (tool == "read" || tool == "write" || tool == "edit") {
        ASSIGN_OR_RETURN(std::string path, string_arg(args, tool, "file_path", true));
        if (tool == "read") {
            return std::vector<CapabilityRequest>{file_read_request(tool, path, ctx)};
        }
        return file_write_requests(tool, path, ctx);
    }
    if (tool == "grep" || tool == "glob") {
        ASSIGN_OR_RETURN(std::string path, string_arg(args, tool, "path", false));
        std::string dir = normalise_path(path, base_dir(ctx));
        if (tool == "glob") {
            ASSIGN_OR_RETURN(std::string pattern, string_arg(args, tool, "pattern", true));
            if (!pattern.starts_with('/')) {
                dir = normalise_path(literal_directories(pattern), dir);
            }
        }
        return std::vector<CapabilityRequest>{file_read_request(tool, dir, ctx, true)};
    }
    if (tool == "bash") {
        ASSIGN_OR_RETURN(std::string command, string_arg(args, tool, "command", true));
        ASSIGN_OR_RETURN(std::string workdir, string_arg(args, tool, "workdir", false));
        RequestContext where = ctx;
        if (!workdir.empty()) {
            where.cwd = normalise_path(workdir, base_dir(ctx));
        }
        return bash_requests(command, where, "bash");
    }
    if (tool == "process") {
        ASSIGN_OR_RETURN(std::string action, string_arg(args, tool, "action", true));
        ASSIGN_OR_RETURN(std::string command, string_arg(args, tool, "command", action == "start"));
        return process_requests(action, command, ctx);
    }
    return Error{Errc::kInvalidArgument, fmt::format("unknown tool \"{}\"", tool)};
}

}  // namespace stockade::policy
