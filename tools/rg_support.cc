#include "tools/rg_support.h"

#include <algorithm>
#include <csignal>

#include <fmt/format.h>

#include "common/path.h"
#include "tools/process_output.h"
#include "tools/text.h"
#include "tools/tool_support.h"

namespace stockade::tools {
namespace {

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

void sort_newest_first(ToolContext& ctx, workspace::Root root, std::vector<std::string>& paths,
                       size_t max_dirs) {
    std::map<std::string, std::vector<size_t>> by_dir;
    for (size_t i = 0; i < paths.size(); ++i) {
        by_dir[std::string(parent_of(paths[i]))].push_back(i);
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

}  // namespace stockade::tools
