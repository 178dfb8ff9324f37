// workspace::resolve_path: lexical normalisation of a model-supplied path against the roots.
// No syscalls: the worker resolves the normalised relative path beneath the root's descriptor,
// where symlinks are handled. This only decides which root a path names and rejects paths that
// name neither.
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "common/path.h"
#include "workspace/workspace.h"

namespace stockade::workspace {
namespace {

// Splits an absolute path into components, applying "." and ".." (".." at "/" stays at "/").
std::vector<std::string_view> normalise_components(std::string_view path) {
    std::vector<std::string_view> parts;
    append_normalised_components(path, parts);
    return parts;
}

std::string join_relative(const std::vector<std::string_view>& parts, size_t from) {
    std::string out;
    for (size_t i = from; i < parts.size(); ++i) {
        if (!out.empty()) {
            out += '/';
        }
        out += parts[i];
    }
    return out;
}

// True when `parts` lies at or beneath `root`.
bool is_beneath(const std::vector<std::string_view>& parts,
                const std::vector<std::string_view>& root) {
    if (parts.size() < root.size()) {
        return false;
    }
    for (size_t i = 0; i < root.size(); ++i) {
        if (parts[i] != root[i]) {
            return false;
        }
    }
    return true;
}

}  // namespace

Result<ResolvedPath> resolve_path(std::string_view input, const std::string& workspace_root,
                                  const std::string& spill_root) {
    if (input.find('\0') != std::string_view::npos) {
        return Error{Errc::kInvalidArgument,
                     "The path contains a NUL byte. Give a plain file path inside the workspace."};
    }
    const std::string root_display = join_absolute(normalise_components(workspace_root));
    const std::string joined =
        input.starts_with('/') ? std::string(input) : fmt::format("{}/{}", root_display, input);
    const std::vector<std::string_view> parts = normalise_components(joined);
    const std::string display = join_absolute(parts);

    const std::vector<std::string_view> ws_parts = normalise_components(workspace_root);
    std::vector<std::string_view> spill_parts;
    if (!spill_root.empty()) {
        spill_parts = normalise_components(spill_root);
    }
    // The more specific root wins if one lies inside the other.
    const bool in_spill = !spill_root.empty() && is_beneath(parts, spill_parts);
    const bool in_ws = is_beneath(parts, ws_parts);
    if (in_spill && (!in_ws || spill_parts.size() > ws_parts.size())) {
        return ResolvedPath{.root = Root::kSpill,
                            .relative = join_relative(parts, spill_parts.size()),
                            .display = display};
    }
    if (in_ws) {
        return ResolvedPath{.root = Root::kWorkspace,
                            .relative = join_relative(parts, ws_parts.size()),
                            .display = display};
    }
    return Error{Errc::kPermissionDenied,
                 fmt::format("{} is outside the workspace ({}). Use a path inside it.", display,
                             root_display)};
}

}  // namespace stockade::workspace
