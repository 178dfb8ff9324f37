#include "policy/capability.h"

#include "common/path.h"

namespace stockade::policy {

const char* capability_kind_name(CapabilityKind kind) noexcept {
    switch (kind) {
        case CapabilityKind::kFileRead:
            return "file.read";
        case CapabilityKind::kFileWrite:
            return "file.write";
        case CapabilityKind::kFileWriteOutsideProject:
            return "file.write.outsideProject";
        case CapabilityKind::kProcessExecute:
            return "process.execute";
        case CapabilityKind::kNetworkAccess:
            return "network.access";
        case CapabilityKind::kGitModify:
            return "git.modify";
        case CapabilityKind::kTool:
            return "tool";
    }
    return "unknown";
}

std::string normalise_path(std::string_view path, std::string_view base) {
    std::vector<std::string_view> parts;
    if (path.empty() || path.front() != '/') {
        append_normalised_components(base, parts);
    }
    append_normalised_components(path, parts);
    return join_absolute(parts);
}

bool path_within(std::string_view path, std::string_view root) {
    if (root.empty()) {
        return false;
    }
    if (root == "/") {
        return !path.empty() && path.front() == '/';
    }
    return path.starts_with(root) && (path.size() == root.size() || path[root.size()] == '/');
}

bool inside_project(std::string_view path, const RequestContext& ctx) {
    if (path_within(path, ctx.workspace_root)) {
        return true;
    }
    for (const std::string& root : ctx.scratch_roots) {
        if (path_within(path, root)) {
            return true;
        }
    }
    return false;
}

}  // namespace stockade::policy
