#include "tools/tool_support.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "common/path.h"
#include "tools/file_stamps.h"
#include "tools/process_output.h"
#include "tools/rg_support.h"
#include "tools/similar.h"
#include "tools/text.h"

namespace stockade::tools {
namespace {

const nlohmann::json* find_arg(const nlohmann::json& args, std::string_view key) {
    if (!args.is_object()) {
        return nullptr;
    }
    const auto it = args.find(std::string(key));
    if (it == args.end() || it->is_null()) {
        return nullptr;
    }
    return &*it;
}

}  // namespace

std::string arg_string(const nlohmann::json& args, std::string_view key) {
    return opt_string(args, key).value_or(std::string());
}

std::optional<std::string> opt_string(const nlohmann::json& args, std::string_view key) {
    const nlohmann::json* v = find_arg(args, key);
    if (v == nullptr || !v->is_string()) {
        return std::nullopt;
    }
    return v->get<std::string>();
}

std::optional<int64_t> opt_int(const nlohmann::json& args, std::string_view key) {
    const nlohmann::json* v = find_arg(args, key);
    if (v == nullptr) {
        return std::nullopt;
    }
    if (v->is_number_integer()) {
        return v->get<int64_t>();
    }
    if (v->is_number_unsigned()) {
        return static_cast<int64_t>(std::min<uint64_t>(v->get<uint64_t>(), INT64_MAX));
    }
    if (v->is_number_float()) {
        const double d = v->get<double>();
        if (std::isfinite(d) && std::trunc(d) == d && std::fabs(d) < 9e18) {
            return static_cast<int64_t>(d);
        }
    }
    return std::nullopt;
}

bool opt_bool(const nlohmann::json& args, std::string_view key, bool fallback) {
    const nlohmann::json* v = find_arg(args, key);
    return v != nullptr && v->is_boolean() ? v->get<bool>() : fallback;
}

ToolResult error_result(std::string content, nlohmann::json metadata) {
    ToolResult r;
    r.content = std::move(content);
    r.is_error = true;
    r.metadata = std::move(metadata);
    return r;
}

const ProtectedPath* protected_path_of(const ToolContext& ctx, std::string_view path) {
    if (ctx.protected_paths == nullptr) {
        return nullptr;
    }
    for (const ProtectedPath& p : *ctx.protected_paths) {
        if (path == p.path || (path.size() > p.path.size() && path.starts_with(p.path) &&
                               path[p.path.size()] == '/')) {
            return &p;
        }
    }
    return nullptr;
}

std::string protected_paths_note(const ToolContext& ctx, std::string_view output) {
    if (ctx.protected_paths == nullptr || ctx.protected_paths->empty()) {
        return "";
    }
    constexpr std::string_view kRefusals[] = {"Read-only file system", "Device or resource busy",
                                              "Permission denied", "Operation not permitted"};
    const std::string root =
        ctx.ws != nullptr ? ctx.ws->root_path(workspace::Root::kWorkspace) : "";
    std::string note;
    for (const ProtectedPath& p : *ctx.protected_paths) {
        // Commands print the path as they were given it: absolute, or from the workspace root.
        std::string relative;
        if (!root.empty() && p.path.size() > root.size() + 1 && p.path.starts_with(root + "/")) {
            relative = p.path.substr(root.size() + 1);
        }
        size_t start = 0;
        bool refused = false;
        while (!refused && start < output.size()) {
            size_t end = output.find('\n', start);
            if (end == std::string_view::npos) {
                end = output.size();
            }
            const std::string_view line = output.substr(start, end - start);
            start = end + 1;
            const bool names = line.find(p.path) != std::string_view::npos ||
                               (!relative.empty() && line.find(relative) != std::string_view::npos);
            refused = names && std::any_of(std::begin(kRefusals), std::end(kRefusals),
                                           [&](std::string_view r) {
                                               return line.find(r) != std::string_view::npos;
                                           });
        }
        if (refused) {
            note +=
                fmt::format("{}Note: {} is protected in this sandbox: {}", note.empty() ? "" : "\n",
                            relative.empty() ? p.path : relative, p.reason);
        }
    }
    return note;
}

std::vector<std::string> command_env() {
    return {"TERM=dumb", "PAGER=cat", "GIT_PAGER=cat", "GIT_TERMINAL_PROMPT=0",
            "PYTHONUNBUFFERED=1"};
}

nlohmann::json of_type(std::string_view type) {
    return {{"type", type}};
}

nlohmann::json nullable(std::string_view type) {
    return {{"type", nlohmann::json::array({type, "null"})}};
}

nlohmann::json metadata_schema(nlohmann::json properties) {
    properties["title"] = of_type("string");
    properties["duration_ms"] = of_type("integer");
    properties["truncation"] = of_type("object");
    return {
        {"type", "object"}, {"properties", std::move(properties)}, {"required", {"duration_ms"}}};
}

Result<workspace::ResolvedPath> resolve_tool_path(ToolContext& ctx, std::string_view input) {
    const std::string ws_root = ctx.ws->root_path(workspace::Root::kWorkspace);
    const std::string spill_root = ctx.ws->root_path(workspace::Root::kSpill);
    Result<workspace::ResolvedPath> r = workspace::resolve_path(input, ws_root, spill_root);
    if (r || r.error().code != Errc::kPermissionDenied || !input.starts_with('/')) {
        return r;
    }
    // "/src/main.cc" meant as relative to the workspace?
    const std::string_view relative = trim_left(input.substr(1));
    if (relative.empty()) {
        return r;
    }
    Result<workspace::ResolvedPath> alt = workspace::resolve_path(relative, ws_root, spill_root);
    if (alt && !alt->relative.empty() && ctx.ws->stat(alt->root, alt->relative)) {
        return Error{r.error().code,
                     fmt::format("{} Maybe you meant {}?", r.error().message, alt->display)};
    }
    return r;
}

workspace::ResolvedPath workspace_root(ToolContext& ctx) {
    Result<workspace::ResolvedPath> r =
        workspace::resolve_path("", ctx.ws->root_path(workspace::Root::kWorkspace),
                                ctx.ws->root_path(workspace::Root::kSpill));
    if (r) {
        return *r;
    }
    return {.root = workspace::Root::kWorkspace,
            .relative = "",
            .display = ctx.ws->root_path(workspace::Root::kWorkspace)};
}

std::string short_path(const workspace::ResolvedPath& path) {
    if (path.root == workspace::Root::kSpill) {
        return path.display;
    }
    return path.relative.empty() ? "." : path.relative;
}

std::string not_found_message(ToolContext& ctx, const workspace::ResolvedPath& path,
                              std::string_view noun, std::string_view next_step) {
    std::vector<std::string> suggestions;
    if (path.root == workspace::Root::kWorkspace && !path.relative.empty()) {
        std::set<std::string> seen;
        std::vector<std::string> candidates;
        auto add = [&](std::string candidate) {
            if (seen.insert(candidate).second) {
                candidates.push_back(std::move(candidate));
            }
        };
        // Entries next to the missing one, hidden and ignored ones included.
        const std::string parent(parent_of(path.relative));
        if (auto entries = ctx.ws->list(workspace::Root::kWorkspace, parent, 2000)) {
            for (const workspace::DirEntry& e : *entries) {
                add(parent.empty() ? e.name : parent + "/" + e.name);
            }
        }
        // Every indexed file, and the directories they are in.
        for (std::string& file : workspace_files(ctx, 200'000)) {
            for (size_t slash = file.find('/'); slash != std::string::npos;
                 slash = file.find('/', slash + 1)) {
                add(file.substr(0, slash));
            }
            add(std::move(file));
        }
        suggestions = suggest_paths(path.relative, candidates, 3);
    }
    std::string msg = fmt::format("{} not found: {}.", noun, listed_name(path.display));
    if (!suggestions.empty()) {
        for (std::string& s : suggestions) {
            s = listed_name(s);
        }
        msg += fmt::format(" Did you mean one of these? {}", fmt::join(suggestions, ", "));
    } else {
        msg += " Check the path, or use glob to find the file.";
    }
    if (!next_step.empty()) {
        msg += suggestions.empty() ? " " : ". ";
        msg += next_step;
    }
    return msg;
}

std::string io_failure(std::string_view verb, std::string_view display, const Error& error) {
    const std::string detail =
        error.sys_errno != 0 ? fmt::format(" ({})", errno_string(error.sys_errno)) : std::string();
    switch (error.code) {
        case Errc::kNotFound:
            return fmt::format(
                "Cannot {} {}: it or one of its parent directories does not exist{}.", verb,
                display, detail);
        case Errc::kPermissionDenied:
        case Errc::kPolicyDenied:
            if (error.sys_errno == EXDEV) {
                // The worker resolves paths beneath the workspace and refuses links out of it.
                return fmt::format(
                    "Cannot {} {}: the path goes through a symbolic link that leads outside the "
                    "workspace, and links are only followed while they stay inside it. Use the "
                    "file's real path inside the workspace instead.",
                    verb, display);
            }
            return fmt::format(
                "Cannot {} {}: permission denied{}. Choose a path you are allowed to {} inside the "
                "workspace.",
                verb, display, detail, verb);
        case Errc::kResourceExhausted:
            return fmt::format(
                "Cannot {} {}: out of space or over a size limit{}. Free some space or make the "
                "content smaller.",
                verb, display, detail);
        case Errc::kDeadlineExceeded:
            return fmt::format("Cannot {} {}: the workspace did not answer in time. Try again.",
                               verb, display);
        case Errc::kCancelled:
            return std::string(kCancelledText);
        case Errc::kInvalidArgument:
        case Errc::kAlreadyExists:
        case Errc::kFailedPrecondition:
            return fmt::format(
                "Cannot {} {}: the path cannot be used here{}. Use a plain path to a "
                "file inside the workspace.",
                verb, display, detail);
        case Errc::kUnavailable:
        case Errc::kInternal:
            break;
    }
    return fmt::format(
        "Cannot {} {}: the workspace reported an error{}. Try again; if it persists, "
        "report it to the user.",
        verb, display, detail);
}

Result<workspace::ResolvedPath> resolve_writable_path(ToolContext& ctx, std::string_view input,
                                                      std::string_view tool) {
    ASSIGN_OR_RETURN(workspace::ResolvedPath path, resolve_tool_path(ctx, input));
    if (path.root == workspace::Root::kSpill) {
        return Error{Errc::kPermissionDenied, read_only_spill_message(ctx, path)};
    }
    if (const ProtectedPath* p = protected_path_of(ctx, path.display)) {
        return Error{Errc::kPermissionDenied,
                     fmt::format("Cannot write {}: it is protected in this sandbox: {}",
                                 path.display, p->reason)};
    }
    if (ctx.stamps == nullptr || ctx.locks == nullptr) {
        return Error{Errc::kUnavailable,
                     fmt::format("{} is not available in this session (no file registry).", tool)};
    }
    return path;
}

std::string read_only_spill_message(ToolContext& ctx, const workspace::ResolvedPath& path) {
    return fmt::format(
        "{} is in the read-only directory of saved tool outputs ({}); it cannot be changed. "
        "Write to a path inside the workspace ({}) instead.",
        path.display, ctx.ws->root_path(workspace::Root::kSpill),
        ctx.ws->root_path(workspace::Root::kWorkspace));
}

bool may_read(const ToolContext& ctx, const std::string& display_path) {
    if (!ctx.may_read) {
        return true;
    }
    // Workspace files are shown relative to its root; the hook takes absolute paths.
    return ctx.may_read(
        display_path.starts_with('/')
            ? display_path
            : fmt::format("{}/{}", ctx.ws->root_path(workspace::Root::kWorkspace), display_path));
}

std::string spill_text(ToolContext& ctx, std::string_view tool, std::string_view content) {
    if (ctx.spill == nullptr) {
        return {};
    }
    Result<std::string> path = ctx.spill->spill(tool, ctx.call_id, content);
    return path ? *path : std::string();
}

}  // namespace stockade::tools
