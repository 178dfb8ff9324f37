#include "tools/tool_support.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "tools/file_stamps.h"
#include "tools/process_output.h"
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

std::string parent_of(std::string_view relative) {
    const size_t slash = relative.rfind('/');
    return slash == std::string_view::npos ? std::string() : std::string(relative.substr(0, slash));
}

bool is_glob_meta(char c) {
    return c == '*' || c == '?' || c == '[' || c == ']' || c == '{' || c == '}' || c == '\\';
}

std::string escape_glob(std::string_view s) {
    std::string out;
    for (char c : s) {
        if (is_glob_meta(c)) {
            out += '\\';
        }
        out += c;
    }
    return out;
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
        const std::string parent = parent_of(path.relative);
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

Result<std::string> read_unchanged_since_stamp(ToolContext& ctx,
                                               const workspace::ResolvedPath& path,
                                               std::string_view verb) {
    const std::optional<FileStamp> known = ctx.stamps->get(path.display);
    if (!known) {
        return Error{Errc::kFailedPrecondition,
                     fmt::format("Refusing to {} {}: you have not read this file in this session. "
                                 "Read it first so you do not destroy existing content, then write "
                                 "or edit it.",
                                 verb, path.display)};
    }
    // One byte more than we saw tells a grown file apart without reading all of it.
    Result<workspace::ReadData> current = ctx.ws->read(path.root, path.relative, known->size + 1);
    if (!current) {
        return Error{current.error().code, io_failure("read", path.display, current.error())};
    }
    if (current->truncated ||
        ctx.stamps->check(path.display, current->bytes) != Freshness::kClean) {
        return Error{Errc::kFailedPrecondition,
                     fmt::format("Refusing to {} {}: the file changed on disk after you last read "
                                 "it (content hash mismatch). Someone else may be editing it. "
                                 "Re-read the file and reapply your change.",
                                 verb, path.display)};
    }
    return std::move(current->bytes);
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

std::vector<std::string> rg_ignore_args(ToolContext& ctx, workspace::Root root) {
    std::vector<std::string> args = {"--no-require-git", "--no-config"};
    if (root == workspace::Root::kWorkspace) {
        if (auto info = ctx.ws->stat(workspace::Root::kWorkspace, std::string(kIgnoreFile));
            info && info->type == workspace::FileType::kFile) {
            args.emplace_back("--ignore-file");
            args.emplace_back(kIgnoreFile);
        }
    }
    return args;
}

std::string rg_path_arg(const workspace::ResolvedPath& path) {
    return path.relative.empty() ? "." : path.relative;
}

bool rg_fatal(const workspace::RgOutcome& out) {
    if (out.exit_code != 2) {
        return false;
    }
    for (std::string_view line : split_lines(out.err)) {
        if (line.starts_with("error") || line.starts_with("regex parse error")) {
            return true;
        }
    }
    return false;
}

namespace {

// A line of rg's stderr about one path it could not read: "[rg: ]PATH: WHY (os error N)"
// (ripgrep 13, Debian's, prints no "rg: " prefix; later versions do).
bool rg_path_error(std::string_view line) {
    if (line.starts_with("rg: ")) {
        line.remove_prefix(4);
    }
    return !line.starts_with("error") && line.find(": ") != std::string_view::npos &&
           line.find("(os error ") != std::string_view::npos && line.ends_with(")");
}

}  // namespace

RgEnd rg_end(const workspace::RgOutcome& out) {
    if (out.timed_out) {
        return RgEnd::kTimedOut;
    }
    if (out.exit_code == 0 || out.exit_code == 1) {
        return RgEnd::kCompleted;
    }
    if (out.exit_code > 128 && out.exit_code <= 128 + 64) {
        return RgEnd::kSignaled;
    }
    if (out.exit_code != 2) {
        return RgEnd::kFailed;
    }
    if (rg_fatal(out)) {
        return RgEnd::kRefused;
    }
    bool any = false;
    for (std::string_view line : split_lines(out.err)) {
        if (trim(line).empty()) {
            continue;
        }
        if (!rg_path_error(line)) {
            return RgEnd::kFailed;
        }
        any = true;
    }
    return any ? RgEnd::kUnreadable : RgEnd::kFailed;
}

namespace {

// The first non-blank line of rg's stderr, cut to a sentence's length.
std::string first_err_line(const workspace::RgOutcome& out) {
    for (std::string_view line : split_lines(out.err)) {
        if (std::string_view t = trim(line); !t.empty()) {
            return truncate_chars(sanitize_utf8(t), 300, "\u2026");
        }
    }
    return {};
}

}  // namespace

std::string rg_failure_message(const RgTask& task, const workspace::RgOutcome& out) {
    if (rg_end(out) == RgEnd::kSignaled) {
        const int signal = out.exit_code - 128;
        std::string msg = fmt::format(
            "{} failed: ripgrep (rg) was killed by {} while searching {}, so its results are "
            "incomplete and none are shown.",
            task.tool, signal_name(signal), task.where);
        if (signal == SIGKILL) {
            msg += fmt::format(
                " The sandbox kills a process that goes over its memory limit: narrow the search "
                "with {}. If it happens again, use bash instead ({}).",
                task.narrow, task.instead);
        } else {
            msg += fmt::format(
                " Try again; if it happens again, use bash instead ({}) and tell "
                "the user.",
                task.instead);
        }
        return msg;
    }
    const std::string detail = first_err_line(out);
    return fmt::format(
        "{} failed: ripgrep (rg) exited with code {} while searching {}{}. Its results may be "
        "incomplete, so none are shown. Try again; if it happens again, use bash instead ({}) "
        "and tell the user.",
        task.tool, out.exit_code, task.where,
        detail.empty() ? std::string(" without saying why") : ": " + detail, task.instead);
}

std::string rg_start_failure_message(const RgTask& task, const Error& error, ProcessManager* pm) {
    if (error.code == Errc::kCancelled) {
        return std::string(kCancelledText);
    }
    if (error.code == Errc::kDeadlineExceeded) {
        return io_failure("search", task.where, error);
    }
    const std::string detail =
        error.sys_errno != 0 ? fmt::format(": {}", errno_string(error.sys_errno)) : std::string();
    std::string advice;
    switch (error.sys_errno) {
        case 0:  // the Workspace found no rg on the sandbox's PATH
        case ENOENT:
        case EACCES:
        case ENOEXEC:
            advice = fmt::format(
                "The sandbox image may lack rg: use bash instead ({}), and tell the user that {} "
                "needs ripgrep in the sandbox image.",
                task.instead, task.tool);
            break;
        case EAGAIN:
        case ENOMEM:
            advice = error.sys_errno == EAGAIN && pm != nullptr ? process_limit_message(*pm) : "";
            if (advice.empty()) {
                advice =
                    "The sandbox is at its limit of processes or memory: stop background "
                    "processes you no longer need (process list shows them), then try again.";
            }
            break;
        default:
            advice = fmt::format(
                "Try again; if it happens again, use bash instead ({}) and tell the user.",
                task.instead);
            break;
    }
    return fmt::format(
        "{} could not search {}: ripgrep (rg) could not be started in the sandbox{}, so nothing "
        "was searched. {}",
        task.tool, task.where, detail, advice);
}

std::string rg_unreadable_note(const workspace::RgOutcome& out) {
    if (rg_end(out) != RgEnd::kUnreadable) {
        return {};
    }
    size_t paths = 0;
    for (std::string_view line : split_lines(out.err)) {
        if (!trim(line).empty()) {
            ++paths;
        }
    }
    const std::string first = first_err_line(out);
    std::string_view shown = first;
    if (shown.starts_with("rg: ")) {
        shown.remove_prefix(4);
    }
    shown = strip_dot_slash(shown);
    if (paths == 1) {
        return fmt::format("Note: ripgrep could not read 1 path, so it was not searched: {}.",
                           shown);
    }
    return fmt::format(
        "Note: ripgrep could not read {} paths, so they were not searched; the first: {}.",
        with_thousands(paths), shown);
}

void stamp_read(ToolContext& ctx, const workspace::ResolvedPath& path, std::string_view bytes,
                int64_t mtime_ns) {
    const FileStamp s = ctx.stamps->stamp(path.display, bytes, mtime_ns);
    if (ctx.events != nullptr) {
        // Not fsync'd on its own: a read lost in a crash only means the agent reads again.
        ctx.events->record("FileRead",
                           {{"path", path.display},
                            {"sha256", s.sha256},
                            {"size", s.size},
                            {"mtime_ns", s.mtime_ns}},
                           false);
    }
}

Result<Committed> commit_file(ToolContext& ctx, const workspace::ResolvedPath& path,
                              std::string_view old_bytes, const std::string& new_bytes,
                              bool created) {
    if (ctx.cancel.stop_requested()) {
        return Error{Errc::kCancelled, std::string(kCancelledText)};
    }
    Committed out;
    out.diff = unified_diff(old_bytes, new_bytes, path.relative, {.created = created});
    workspace::WriteRequest req;
    req.root = path.root;
    req.path = path.relative;
    req.bytes = new_bytes;
    req.make_parents = created;
    Result<workspace::WriteOutcome> written = ctx.ws->write(req);
    if (!written) {
        return Error{written.error().code, io_failure("write", path.display, written.error())};
    }
    const FileStamp s = ctx.stamps->stamp(path.display, new_bytes, written->info.mtime_ns);
    if (ctx.events != nullptr) {
        ctx.events->record("FileModified",
                           {{"path", path.display},
                            {"sha256", s.sha256},
                            {"size", s.size},
                            {"mtime_ns", s.mtime_ns},
                            {"additions", out.diff.additions},
                            {"deletions", out.diff.deletions},
                            {"created", created}},
                           true);
    }
    return out;
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

std::string hidden_files_note(size_t hidden) {
    if (hidden == 0) {
        return {};
    }
    return fmt::format("Note: {} that matched {} not shown: the policy does not let you read {}.",
                       count_of(hidden, "file", "files"), hidden == 1 ? "is" : "are",
                       hidden == 1 ? "it" : "them");
}

std::string search_notes(const std::string& first, const std::string& second) {
    if (first.empty() || second.empty()) {
        return first + second;
    }
    return first + "\n" + second;
}

std::vector<std::string_view> rg_null_paths(const workspace::RgOutcome& out) {
    std::vector<std::string_view> paths;
    const std::string_view text = out.out;
    for (size_t start = 0; start < text.size();) {
        const size_t nul = text.find('\0', start);
        if (nul == std::string_view::npos) {
            if (!out.truncated) {
                paths.push_back(text.substr(start));  // not rg's way, but not cut either
            }
            break;
        }
        if (nul > start) {
            paths.push_back(text.substr(start, nul - start));
        }
        start = nul + 1;
    }
    return paths;
}

std::string_view strip_dot_slash(std::string_view printed) {
    while (printed.starts_with("./")) {
        printed.remove_prefix(2);
    }
    return printed;
}

void sort_newest_first(ToolContext& ctx, workspace::Root root, std::vector<std::string>& paths,
                       size_t max_dirs) {
    std::map<std::string, std::vector<size_t>> by_dir;
    for (size_t i = 0; i < paths.size(); ++i) {
        by_dir[parent_of(paths[i])].push_back(i);
        if (by_dir.size() > max_dirs) {
            return;
        }
    }
    std::vector<int64_t> mtime(paths.size(), 0);
    for (const auto& [dir, members] : by_dir) {
        Result<std::vector<workspace::DirEntry>> entries = ctx.ws->list(root, dir, 1'000'000);
        if (!entries) {
            continue;
        }
        std::unordered_map<std::string_view, int64_t> times;
        for (const workspace::DirEntry& e : *entries) {
            times.emplace(e.name, e.mtime_ns);
        }
        for (size_t i : members) {
            const std::string_view path = paths[i];
            const size_t slash = path.rfind('/');
            const std::string_view name =
                slash == std::string_view::npos ? path : path.substr(slash + 1);
            if (auto it = times.find(name); it != times.end()) {
                mtime[i] = it->second;
            }
        }
    }
    std::vector<size_t> order(paths.size());
    for (size_t i = 0; i < order.size(); ++i) {
        order[i] = i;
    }
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        if (mtime[a] != mtime[b]) {
            return mtime[a] > mtime[b];
        }
        return paths[a] < paths[b];
    });
    std::vector<std::string> sorted;
    sorted.reserve(paths.size());
    for (size_t i : order) {
        sorted.push_back(std::move(paths[i]));
    }
    paths = std::move(sorted);
}

std::string rg_display_path(ToolContext& ctx, workspace::Root root, std::string_view printed) {
    printed = strip_dot_slash(printed);
    if (root == workspace::Root::kSpill) {
        return fmt::format("{}/{}", ctx.ws->root_path(workspace::Root::kSpill), printed);
    }
    return std::string(printed);
}

std::string anchor_glob(std::string_view pattern, std::string_view dir) {
    while (pattern.starts_with("./")) {
        pattern.remove_prefix(2);
    }
    std::string_view body = pattern;
    while (body.ends_with('/')) {
        body.remove_suffix(1);
    }
    if (body.find('/') == std::string_view::npos || dir.empty()) {
        return std::string(pattern);
    }
    if (pattern.starts_with(std::string(dir) + "/")) {
        return std::string(pattern);  // already written from the root
    }
    if (pattern.starts_with('/')) {
        return escape_glob(dir) + std::string(pattern);
    }
    return fmt::format("{}/{}", escape_glob(dir), pattern);
}

std::vector<std::string> workspace_files(ToolContext& ctx, size_t max) {
    std::vector<std::string> files;
    workspace::RgRequest req;
    req.root = workspace::Root::kWorkspace;
    req.args = {"--files", "--null"};
    for (std::string& a : rg_ignore_args(ctx, workspace::Root::kWorkspace)) {
        req.args.push_back(std::move(a));
    }
    req.args.emplace_back("--");
    req.args.emplace_back(".");
    Result<workspace::RgOutcome> out = ctx.ws->run_rg(req);
    if (!out) {
        return files;
    }
    for (std::string_view path : rg_null_paths(*out)) {
        if (files.size() == max) {
            break;
        }
        files.push_back(rg_display_path(ctx, workspace::Root::kWorkspace, path));
    }
    return files;
}

std::string spill_text(ToolContext& ctx, std::string_view tool, std::string_view content) {
    if (ctx.spill == nullptr) {
        return {};
    }
    Result<std::string> path = ctx.spill->spill(tool, ctx.call_id, content);
    return path ? *path : std::string();
}

}  // namespace stockade::tools
