// glob (TOOL_PROTOCOL §6): files whose path matches a glob, newest first, at most 100, through
// `rg --files --glob` (so .gitignore and .stockadeignore apply), with node_modules, .git and
// dist left out unless the pattern names them, and the nearest existing extension suggested
// when nothing matched.
//
// rg lists with --null, so a file name holding a newline is still one name, and the listing
// shows each path with listed_name: a name with a newline or a control character is quoted
// ("escape\nPASS forged-line"), in the content and in the spill alike. rg failing (not
// started, killed, exit 2 for anything but paths it could not read) is an error, never "No
// files match".
#include <algorithm>
#include <array>
#include <map>

#include <fmt/format.h>

#include "common/path.h"
#include "policy/requests.h"
#include "tools/file_tools.h"
#include "tools/rg_support.h"
#include "tools/similar.h"
#include "tools/text.h"
#include "tools/tool_support.h"

namespace stockade::tools {
namespace {

constexpr size_t kMaxPaths = 100;
constexpr std::array<std::string_view, 3> kNoiseDirs = {"node_modules", ".git", "dist"};

constexpr std::string_view kDescription =
    "Find files by name pattern, e.g. \"**/*.ts\" or \"src/**/config.*\". Returns matching file "
    "paths ordered by most recently modified, at most 100. A pattern without a slash matches "
    "file names at any depth. Respects .gitignore and .stockadeignore; node_modules, .git and "
    "dist are skipped unless the pattern names them. Use this to discover file layout; use grep "
    "to search file contents.";

bool names(std::string_view pattern, std::string_view dir) {
    const auto parts = split(pattern, '/');
    return std::find(parts.begin(), parts.end(), dir) != parts.end();
}

// A component that starts with '.' (".github/**", "**/.env*") asks for hidden files.
bool wants_hidden(std::string_view pattern) {
    for (std::string_view part : path_components(pattern)) {
        if (part.size() > 1 && part.starts_with('.') && part != "..") {
            return true;
        }
    }
    return false;
}

// The extension of the pattern's last component, if it ends in a plain one ("*.tsx" → "tsx").
std::string pattern_extension(std::string_view pattern) {
    const auto parts = split(pattern, '/');
    if (parts.empty()) {
        return {};
    }
    const std::string_view last = parts.back();
    const size_t dot = last.rfind('.');
    if (dot == std::string_view::npos || dot + 1 == last.size()) {
        return {};
    }
    const std::string_view ext = last.substr(dot + 1);
    const bool plain = std::all_of(ext.begin(), ext.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-' || c == '+';
    });
    return plain ? std::string(ext) : std::string();
}

std::string file_extension(std::string_view path) {
    const size_t slash = path.rfind('/');
    const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
    const size_t dot = name.rfind('.');
    if (dot == std::string_view::npos || dot == 0 || dot + 1 == name.size()) {
        return {};
    }
    return std::string(name.substr(dot + 1));
}

struct GlobArgs {
    std::string pattern{};
    std::optional<std::string> path{};
};

// The directories a glob pattern starts with before its first wildcard ("src/lib/**/*.h" →
// "src/lib"): the narrowest directory the search can reach, for the policy.
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

class GlobTool final : public TypedTool<GlobArgs> {
public:
    GlobTool()
        : TypedTool(ToolSpec{.name = "glob",
                             .title = "Find files",
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
                 {"pattern",
                  {{"type", "string"},
                   {"description", "Glob pattern to match file paths against."}}},
                 {"path",
                  {{"type", "string"},
                   {"description", "Directory to search in. Defaults to the working directory."}}},
             }},
            {"required", {"pattern"}},
            {"additionalProperties", false},
        };
    }
    static nlohmann::json metadata_schema_json() {
        return metadata_schema({{"path", of_type("string")}, {"files", of_type("integer")}});
    }
    static ToolAnnotations hints() {
        return {.read_only = true, .destructive = false, .idempotent = true, .open_world = false};
    }

    [[nodiscard]] GlobArgs read_args(const nlohmann::json& json) const override {
        return GlobArgs{.pattern = arg_string(json, "pattern"), .path = opt_string(json, "path")};
    }

    [[nodiscard]] std::vector<policy::CapabilityRequest> capabilities(
        const GlobArgs& args, const policy::RequestContext& where) const override {
        std::string dir =
            policy::normalise_path(args.path.value_or(""), policy::request_base(where));
        if (!args.pattern.starts_with('/')) {
            dir = policy::normalise_path(literal_directories(args.pattern), dir);
        }
        return {policy::file_read_request("glob", dir, where, true)};
    }
    // rg --files under `dir`, filtered by `glob` when given; paths as the model sees them.
    static Result<workspace::RgOutcome> list_files(ToolContext& ctx,
                                                   const workspace::ResolvedPath& dir,
                                                   std::string_view pattern,
                                                   const std::optional<std::string>& glob) {
        workspace::RgRequest req;
        req.root = dir.root;
        req.args = {"--files", "--null"};
        for (std::string& a : rg_ignore_args(ctx, dir.root)) {
            req.args.push_back(std::move(a));
        }
        if (wants_hidden(pattern)) {
            req.args.emplace_back("--hidden");
        }
        if (glob) {
            req.args.push_back("--glob=" + *glob);
        }
        // Later globs take precedence in rg: the noise exclusions go last.
        for (std::string_view noise : kNoiseDirs) {
            if (!names(pattern, noise)) {
                req.args.push_back(fmt::format("--glob=!{}/", noise));
            }
        }
        req.args.emplace_back("--");
        req.args.push_back(rg_path_arg(dir));
        return ctx.ws->run_rg(req);
    }

    // The listed files as the model sees them (not yet quoted), those the policy lets it read;
    // newest first when `sorted`. `hidden` (may be null) counts the others.
    static std::vector<std::string> paths_of(ToolContext& ctx, workspace::Root root,
                                             const workspace::RgOutcome& out, bool sorted,
                                             size_t* hidden) {
        std::vector<std::string> paths;
        for (std::string_view path : rg_null_paths(out)) {
            std::string relative(strip_dot_slash(path));
            if (may_read(ctx, rg_display_path(ctx, root, relative))) {
                paths.push_back(std::move(relative));
            } else if (hidden != nullptr) {
                ++*hidden;
            }
        }
        if (sorted) {
            sort_newest_first(ctx, root, paths);
        }
        for (std::string& p : paths) {
            p = rg_display_path(ctx, root, p);
        }
        return paths;
    }

    ToolResult run(const GlobArgs& args, ToolContext& ctx) const override {
        std::string pattern = args.pattern;
        if (pattern.empty()) {
            return error_result(
                R"(pattern is empty. Give a glob such as "**/*.ts" or "src/**/config.*".)");
        }
        workspace::ResolvedPath dir = workspace_root(ctx);
        if (const auto& p = args.path; p && !p->empty()) {
            Result<workspace::ResolvedPath> resolved = resolve_tool_path(ctx, *p);
            if (!resolved) {
                return error_result(resolved.error().message);
            }
            dir = *resolved;
        }
        Result<workspace::FileInfo> info = ctx.ws->stat(dir.root, dir.relative);
        if (!info) {
            if (info.error().code == Errc::kNotFound) {
                return error_result(not_found_message(ctx, dir, "Directory"));
            }
            return error_result(io_failure("search", dir.display, info.error()));
        }
        if (info->type != workspace::FileType::kDirectory) {
            return error_result(fmt::format(
                "{} is a file, not a directory. glob searches a directory: give its parent as "
                "path, or omit path to search the whole workspace.",
                dir.display));
        }

        // An absolute pattern inside the workspace is taken from the workspace root.
        const std::string root_prefix = ctx.ws->root_path(dir.root) + "/";
        std::string glob;
        if (pattern.starts_with(root_prefix)) {
            glob = "/" + pattern.substr(root_prefix.size());
        } else {
            glob = anchor_glob(pattern, dir.relative);
        }

        const std::string where = listed_name(dir.display);
        const RgTask task{.tool = "glob",
                          .where = where,
                          .narrow = "a smaller directory as path or a more specific pattern",
                          .instead = "find PATH -name 'GLOB'"};
        Result<workspace::RgOutcome> out = list_files(ctx, dir, pattern, glob);
        if (!out) {
            return error_result(rg_start_failure_message(task, out.error(), ctx.processes));
        }
        if (const RgEnd end = rg_end(*out); end == RgEnd::kSignaled || end == RgEnd::kFailed) {
            return error_result(rg_failure_message(task, *out));
        }
        if (rg_fatal(*out) && out->out.empty()) {
            const std::string detail(trim(sanitize_utf8(utf8_prefix(out->err, 2000))));
            if (detail.find("glob") != std::string::npos) {
                return error_result(fmt::format(
                    "Invalid glob \"{}\". ripgrep says:\n{}\nFix the pattern, e.g. \"**/*.ts\" or "
                    "\"src/**/config.*\".",
                    pattern, detail));
            }
            return error_result(fmt::format(
                "glob failed: {}", detail.empty() ? "ripgrep exited with an error." : detail));
        }
        if (out->timed_out && out->out.empty()) {
            return error_result(fmt::format(
                "glob timed out listing {}. Search a smaller directory with path, or use a more "
                "specific pattern.",
                where));
        }
        size_t hidden = 0;
        std::vector<std::string> paths = paths_of(ctx, dir.root, *out, true, &hidden);
        const std::string hidden_note = hidden_files_note(hidden);
        if (paths.empty()) {
            return no_matches(ctx, dir, pattern,
                              search_notes(rg_unreadable_note(*out), hidden_note));
        }
        for (std::string& p : paths) {
            p = listed_name(p);
        }

        const bool complete = !out->truncated && !out->timed_out;
        const std::string total =
            (complete ? "" : "at least ") + count_of(paths.size(), "file", "files");
        const std::string header =
            fmt::format("{} {} \"{}\"{}:", total, paths.size() == 1 ? "matches" : "match", pattern,
                        paths.size() > 1 ? " (newest first)" : "");
        ToolResult r;
        r.metadata = {{"title", fmt::format("Glob {} \u00b7 {}", pattern, total)},
                      {"files", paths.size()},
                      {"path", dir.display}};
        if (paths.size() <= kMaxPaths) {
            r.content = fmt::format("{}\n{}", header, fmt::join(paths, "\n"));
            if (!hidden_note.empty()) {
                r.content += "\n" + hidden_note;
            }
            return r;
        }
        const std::string full = fmt::format("{}\n{}\n", header, fmt::join(paths, "\n"));
        const std::string spill = spill_text(ctx, "glob", full);
        r.content = fmt::format("{}\n{}\n", header,
                                fmt::join(paths.begin(), paths.begin() + kMaxPaths, "\n"));
        if (spill.empty()) {
            r.content += fmt::format("[Showing {} of {}. Narrow the pattern to see the rest.]",
                                     kMaxPaths, with_thousands(paths.size()));
        } else {
            r.content +=
                fmt::format("[Showing {} of {}. Full list: {} \u2014 or narrow the pattern.]",
                            kMaxPaths, with_thousands(paths.size()), spill);
        }
        if (!hidden_note.empty()) {
            r.content += "\n" + hidden_note;
        }
        TruncationInfo t;
        t.original_bytes = full.size();
        t.original_lines = paths.size();
        t.shown_head_lines = kMaxPaths;
        t.omitted_lines = paths.size() - kMaxPaths;
        t.spill_path = spill;
        r.metadata["truncation"] = t.to_json();
        return r;
    }

    static ToolResult no_matches(ToolContext& ctx, const workspace::ResolvedPath& dir,
                                 const std::string& pattern, const std::string& note) {
        std::string content =
            fmt::format("No files match \"{}\" under {}.", pattern, listed_name(dir.display));
        const std::string wanted = pattern_extension(pattern);
        std::string hint;
        if (!wanted.empty()) {
            if (auto all = list_files(ctx, dir, pattern, std::nullopt)) {
                std::map<std::string, size_t> by_ext;
                for (const std::string& p : paths_of(ctx, dir.root, *all, false, nullptr)) {
                    if (std::string ext = file_extension(p); !ext.empty() && is_plain_name(ext)) {
                        ++by_ext[ext];
                    }
                }
                // Closest spelling; among equals, the most common extension.
                const size_t limit = std::max<size_t>(1, std::min<size_t>(2, wanted.size() / 2));
                size_t best_distance = limit + 1;
                size_t best_count = 0;
                for (const auto& [ext, n] : by_ext) {
                    const size_t d = ext == wanted ? limit + 1 : levenshtein(wanted, ext, limit);
                    if (d > limit) {
                        continue;
                    }
                    if (d < best_distance || (d == best_distance && n > best_count)) {
                        best_distance = d;
                        best_count = n;
                        hint = ext;
                    }
                }
                if (!hint.empty()) {
                    content += fmt::format(" Nearest existing extension: .{} ({}).", hint,
                                           count_of(by_ext[hint], "file", "files"));
                }
            }
        }
        if (hint.empty()) {
            content += " Check the pattern, or search from a broader path.";
        }
        if (!note.empty()) {
            content += "\n" + note;
        }
        ToolResult r;
        r.content = std::move(content);
        r.metadata = {{"title", fmt::format("Glob {} \u00b7 no files", pattern)},
                      {"files", 0},
                      {"path", dir.display}};
        return r;
    }
};

}  // namespace

std::unique_ptr<Tool> make_glob_tool() {
    return std::make_unique<GlobTool>();
}

}  // namespace stockade::tools
