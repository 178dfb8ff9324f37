#include "policy/requests.h"

namespace stockade::policy {

std::string request_base(const RequestContext& ctx) {
    const std::string root = normalise_path(ctx.workspace_root, "/");
    return ctx.cwd.empty() ? root : normalise_path(ctx.cwd, root);
}

CapabilityRequest file_read_request(std::string_view tool, std::string_view path,
                                    const RequestContext& ctx, bool directory) {
    return {.kind = CapabilityKind::kFileRead,
            .tool = std::string(tool),
            .path = normalise_path(path, request_base(ctx)),
            .directory = directory};
}

std::vector<CapabilityRequest> file_write_requests(std::string_view tool, std::string_view path,
                                                   const RequestContext& ctx) {
    std::vector<CapabilityRequest> out;
    std::string resolved = normalise_path(path, request_base(ctx));
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

}  // namespace stockade::policy
