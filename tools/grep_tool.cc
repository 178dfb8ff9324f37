// grep (TOOL_PROTOCOL §5): ripgrep over the workspace (--json, smart case, .gitignore and
// .stockadeignore honoured, newest files first), at most 100 matching lines of at most 250
// characters, the full result spilled when cut, and a near-miss hint when nothing matched.
//
// Invalid patterns: rg compiles the pattern before it opens any file, so the search run itself
// is the probe. Exit code 2 with "regex parse error" on stderr and no results becomes the
// model-facing invalid-regex message (rg's own explanation included); nothing else is searched.
//
// rg failing is an error, never "No matches": not started (run_rg's error), killed by a signal,
// or exit 2 for anything but files it could not read (RgEnd in tools/tool_support.h). Files it
// could not read (masked by a deny rule, say) leave the rest searched; a result without matches
// then says which.
//
// File headers are shown with listed_name (a name holding a newline or a control character is
// quoted), in the content and in the spill alike: the quoting keeps the listing's structure.
// Matched lines keep their bytes; the backstop escapes their control characters for the model,
// and the spill keeps them raw.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "common/crypto.h"
#include "policy/requests.h"
#include "tools/file_tools.h"
#include "tools/rg_support.h"
#include "tools/text.h"
#include "tools/tool_support.h"

namespace stockade::tools {
namespace {

constexpr size_t kMaxMatches = 100;
constexpr size_t kMaxLineChars = 250;
constexpr size_t kMaxSpillLineChars = 2000;
constexpr size_t kMaxProbeLiteral = 64;

constexpr std::string_view kDescription =
    "Fast content search across the repository using ripgrep. pattern is a regular expression "
    "(Rust regex syntax; escape literal dots, parens, brackets). The search is case-insensitive "
    "unless the pattern contains an upper-case letter. Results are grouped by file as "
    "'line_number: line text', files ordered by most recently modified. At most 100 matching "
    "lines are returned \u2014 if truncated, narrow the pattern or scope with path/include. "
    "Respects .gitignore and .stockadeignore. Use this to locate code; use read to view full "
    "context around a match.";

struct FileMatches {
    std::string path;
    std::vector<std::pair<uint64_t, std::string>> lines;
};

struct Parsed {
    std::vector<FileMatches> files;
    size_t matches = 0;
    size_t hidden = 0;  // files with matches the policy does not let the model read
    std::vector<std::string> submatches;  // the matched text of each line's first match
};

// rg's {"text": …} or {"bytes": base64} data.
std::string rg_data(const nlohmann::json& j) {
    if (!j.is_object()) {
        return {};
    }
    if (auto it = j.find("text"); it != j.end() && it->is_string()) {
        return it->get<std::string>();
    }
    if (auto it = j.find("bytes"); it != j.end() && it->is_string()) {
        return base64_decode(it->get<std::string>()).value_or(std::string());
    }
    return {};
}

// Matches grouped by file; newest file first when `sorted`.
Parsed parse_rg_json(ToolContext& ctx, workspace::Root root, const workspace::RgOutcome& out,
                     bool sorted) {
    Parsed p;
    std::map<std::string, size_t> index;
    std::map<std::string, bool> readable;  // by rg's path: whether the policy shows it
    for (std::string_view line : split_lines(out.out)) {
        nlohmann::json msg = nlohmann::json::parse(line, nullptr, false);
        if (msg.is_discarded() || !msg.is_object() || msg.value("type", "") != "match") {
            continue;  // begin/end/summary/context, or a line cut at the output cap
        }
        const nlohmann::json& data = msg["data"];
        if (!data.is_object()) {
            continue;
        }
        const std::string path(strip_dot_slash(rg_data(data.value("path", nlohmann::json()))));
        std::string text = rg_data(data.value("lines", nlohmann::json()));
        while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
            text.pop_back();
        }
        const uint64_t number = data.value("line_number", uint64_t{0});
        auto [shown, first_time] = readable.emplace(path, true);
        if (first_time) {
            shown->second = may_read(ctx, rg_display_path(ctx, root, path));
            p.hidden += shown->second ? 0U : 1U;
        }
        if (!shown->second) {
            continue;
        }
        auto [it, added] = index.emplace(path, p.files.size());
        if (added) {
            p.files.push_back({path, {}});
        }
        p.files[it->second].lines.emplace_back(number, std::move(text));
        ++p.matches;
        if (auto sub = data.find("submatches");
            sub != data.end() && sub->is_array() && !sub->empty()) {
            p.submatches.push_back(rg_data((*sub)[0].value("match", nlohmann::json())));
        }
    }
    // Files newest first, then shown as the model sees them.
    std::vector<std::string> order;
    for (const FileMatches& f : p.files) {
        order.push_back(f.path);
    }
    if (sorted) {
        sort_newest_first(ctx, root, order);
    }
    std::vector<FileMatches> files;
    files.reserve(p.files.size());
    for (const std::string& path : order) {
        files.push_back(std::move(p.files[index[path]]));
        files.back().path = rg_display_path(ctx, root, path);
    }
    p.files = std::move(files);
    return p;
}

std::string render(const Parsed& p, size_t max_matches, size_t max_chars) {
    std::string out;
    size_t shown = 0;
    for (const FileMatches& f : p.files) {
        if (shown == max_matches) {
            break;
        }
        out += listed_name(f.path);
        out += '\n';
        for (const auto& [number, text] : f.lines) {
            if (shown == max_matches) {
                break;
            }
            out += fmt::format("  {}: {}\n", number,
                               truncate_chars(sanitize_utf8(text), max_chars, "\u2026"));
            ++shown;
        }
    }
    if (!out.empty()) {
        out.pop_back();
    }
    return out;
}

bool is_literal(std::string_view pattern) {
    return std::none_of(pattern.begin(), pattern.end(), [](char c) {
        return std::string_view("\\.+*?()|[]{}^$").find(c) != std::string_view::npos;
    });
}

bool has_upper(std::string_view s) {
    return std::any_of(s.begin(), s.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
}

// A regex matching every string one edit (deletion, transposition, substitution, insertion)
// away from the literal `word`; deletions come first so the closest spelling wins.
std::string edit_distance_one(std::string_view word) {
    std::vector<std::string> alts;
    for (size_t i = 0; i < word.size(); ++i) {
        alts.push_back(std::string(word.substr(0, i)) + std::string(word.substr(i + 1)));
    }
    for (size_t i = 0; i + 1 < word.size(); ++i) {
        std::string t(word);
        std::swap(t[i], t[i + 1]);
        alts.push_back(t);
    }
    for (size_t i = 0; i < word.size(); ++i) {
        alts.push_back(std::string(word.substr(0, i)) + "." + std::string(word.substr(i + 1)));
    }
    for (size_t i = 0; i <= word.size(); ++i) {
        alts.push_back(std::string(word.substr(0, i)) + "." + std::string(word.substr(i)));
    }
    return fmt::format("{}", fmt::join(alts, "|"));
}

std::string most_common(const std::vector<std::string>& texts, std::string_view exclude) {
    std::map<std::string, size_t> count;
    for (const std::string& t : texts) {
        if (!t.empty() && t != exclude) {
            ++count[t];
        }
    }
    std::string best;
    size_t best_n = 0;
    for (const auto& [t, n] : count) {
        if (n > best_n) {
            best = t;
            best_n = n;
        }
    }
    return best;
}

struct GrepArgs {
    std::string pattern{};
    std::optional<std::string> path{};
    std::optional<std::string> include{};
};

class GrepTool final : public TypedTool<GrepArgs> {
public:
    GrepTool()
        : TypedTool(ToolSpec{.name = "grep",
                             .title = "Search file contents",
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
                  {{"type", "string"}, {"description", "Regular expression to search for."}}},
                 {"path",
                  {{"type", "string"},
                   {"description",
                    "Directory or file to search in. Defaults to the working directory."}}},
                 {"include",
                  {{"type", "string"},
                   {"description",
                    R"(Glob filter for file names, e.g. "*.ts" or "src/**/*.py".)"}}},
             }},
            {"required", {"pattern"}},
            {"additionalProperties", false},
        };
    }
    static nlohmann::json metadata_schema_json() {
        return metadata_schema({{"path", of_type("string")},
                                {"matches", of_type("integer")},
                                {"files", of_type("integer")}});
    }
    static ToolAnnotations hints() {
        return {.read_only = true, .destructive = false, .idempotent = true, .open_world = false};
    }

    [[nodiscard]] GrepArgs read_args(const nlohmann::json& json) const override {
        return GrepArgs{.pattern = arg_string(json, "pattern"),
                        .path = opt_string(json, "path"),
                        .include = opt_string(json, "include")};
    }

    [[nodiscard]] std::vector<policy::CapabilityRequest> capabilities(
        const GrepArgs& args, const policy::RequestContext& where) const override {
        return {policy::file_read_request("grep", args.path.value_or(""), where, true)};
    }
    struct Scope {
        workspace::ResolvedPath path;
        std::optional<std::string> include;
    };

    static std::vector<std::string> scope_args(ToolContext& ctx, const Scope& scope) {
        std::vector<std::string> args = rg_ignore_args(ctx, scope.path.root);
        if (scope.include) {
            const std::string dir = scope.path.relative;
            args.push_back("--glob=" + anchor_glob(*scope.include, dir));
        }
        return args;
    }

    static Result<workspace::RgOutcome> search(ToolContext& ctx, const Scope& scope,
                                               std::vector<std::string> mode,
                                               const std::string& regex) {
        workspace::RgRequest req;
        req.root = scope.path.root;
        req.args = {"--json"};
        for (std::string& a : mode) {
            req.args.push_back(std::move(a));
        }
        for (std::string& a : scope_args(ctx, scope)) {
            req.args.push_back(std::move(a));
        }
        req.args.insert(req.args.end(), {"-e", regex, "--", rg_path_arg(scope.path)});
        return ctx.ws->run_rg(req);
    }

    ToolResult run(const GrepArgs& args, ToolContext& ctx) const override {
        const std::string& pattern = args.pattern;
        if (pattern.empty()) {
            return error_result("pattern is empty. Give a regular expression to search for.");
        }
        Scope scope{.path = workspace_root(ctx), .include = args.include};
        if (scope.include && scope.include->empty()) {
            scope.include.reset();
        }
        if (const auto& p = args.path; p && !p->empty()) {
            Result<workspace::ResolvedPath> resolved = resolve_tool_path(ctx, *p);
            if (!resolved) {
                return error_result(resolved.error().message);
            }
            scope.path = *resolved;
        }
        Result<workspace::FileInfo> info = ctx.ws->stat(scope.path.root, scope.path.relative);
        if (!info) {
            if (info.error().code == Errc::kNotFound) {
                return error_result(not_found_message(ctx, scope.path, "Path"));
            }
            return error_result(io_failure("search", scope.path.display, info.error()));
        }

        const std::string where = listed_name(scope.path.display);
        const RgTask task{.tool = "grep",
                          .where = where,
                          .narrow = "a more specific path or include filter",
                          .instead = "grep -rn -e PATTERN PATH"};
        Result<workspace::RgOutcome> out = search(ctx, scope, {"--smart-case"}, pattern);
        if (!out) {
            return error_result(rg_start_failure_message(task, out.error(), ctx.processes));
        }
        if (const RgEnd end = rg_end(*out); end == RgEnd::kSignaled || end == RgEnd::kFailed) {
            return error_result(rg_failure_message(task, *out));
        }
        const Parsed parsed = parse_rg_json(ctx, scope.path.root, *out, true);
        if (parsed.matches == 0) {
            if (out->timed_out) {
                return error_result(fmt::format(
                    "grep timed out searching {}. Narrow the search with a more specific path or "
                    "include filter.",
                    where));
            }
            if (rg_fatal(*out)) {
                return error_result(rg_error(out->err, pattern, scope.include));
            }
            return no_matches(
                ctx, scope, pattern,
                search_notes(rg_unreadable_note(*out), hidden_files_note(parsed.hidden)));
        }

        const bool complete = !out->truncated && !out->timed_out;
        const std::string at_least = complete ? "" : "at least ";
        const std::string hidden = hidden_files_note(parsed.hidden);
        const std::string summary =
            fmt::format("{} in {}", count_of(parsed.matches, "match", "matches"),
                        count_of(parsed.files.size(), "file", "files"));
        ToolResult r;
        r.metadata = {
            {"title", fmt::format("Search \"{}\" \u00b7 {}{}", pattern, at_least, summary)},
            {"matches", parsed.matches},
            {"files", parsed.files.size()},
            {"path", scope.path.display},
        };
        if (parsed.matches <= kMaxMatches) {
            r.content = fmt::format("{}{} for \"{}\":\n\n{}", at_least, summary, pattern,
                                    render(parsed, kMaxMatches, kMaxLineChars));
            if (!complete) {
                r.content +=
                    "\n[The search stopped early (output or time limit); narrow the "
                    "pattern, path, or include filter to see everything.]";
            }
            if (!hidden.empty()) {
                r.content += "\n" + hidden;
            }
            return r;
        }

        const std::string full = fmt::format("{}{} for \"{}\":\n\n{}\n", at_least, summary, pattern,
                                             render(parsed, SIZE_MAX, kMaxSpillLineChars));
        const std::string spill = spill_text(ctx, "grep", full);
        r.content =
            fmt::format("Showing first {} of {}{} matching lines (in {}{}) for \"{}\":\n\n{}\n",
                        kMaxMatches, at_least, with_thousands(parsed.matches), at_least,
                        count_of(parsed.files.size(), "file", "files"), pattern,
                        render(parsed, kMaxMatches, kMaxLineChars));
        if (spill.empty()) {
            r.content +=
                "[Results truncated. Use a more specific pattern, path, or include filter.]";
        } else {
            r.content += fmt::format(
                "[Results truncated. Full results: {} \u2014 or use a more specific pattern, path, "
                "or include filter.]",
                spill);
        }
        if (!hidden.empty()) {
            r.content += "\n" + hidden;
        }
        TruncationInfo t;
        t.original_bytes = full.size();
        t.original_lines = parsed.matches;
        t.shown_head_lines = kMaxMatches;
        t.omitted_lines = parsed.matches - kMaxMatches;
        t.spill_path = spill;
        r.metadata["truncation"] = t.to_json();
        return r;
    }

    static std::string rg_error(const std::string& err, std::string_view pattern,
                                const std::optional<std::string>& include) {
        const std::string detail(trim(sanitize_utf8(utf8_prefix(err, 2000))));
        if (detail.find("regex parse error") != std::string::npos ||
            detail.find("error parsing regex") != std::string::npos) {
            return fmt::format(
                "Invalid regex \"{}\" (Rust regex syntax). ripgrep says:\n{}\nFix the pattern: "
                "escape literal characters such as . ( ) [ ] {{ }} * + ? | with a backslash.",
                pattern, detail);
        }
        if (include && detail.find("glob") != std::string::npos) {
            return fmt::format(
                "Invalid include glob \"{}\". ripgrep says:\n{}\nFix the glob, e.g. "
                "\"*.ts\" or \"src/**/*.py\".",
                *include, detail);
        }
        return fmt::format("grep failed: {}",
                           detail.empty() ? "ripgrep exited with an error." : detail);
    }

    static ToolResult no_matches(ToolContext& ctx, const Scope& scope, const std::string& pattern,
                                 const std::string& note) {
        const std::string hint = near_miss(ctx, scope, pattern);
        const std::string shown = listed_name(scope.path.display);
        const std::string where =
            scope.include ? fmt::format("{} (files matching \"{}\")", shown, *scope.include)
                          : shown;
        ToolResult r;
        if (hint.empty()) {
            r.content =
                fmt::format("No matches for \"{}\" in {}. Check the regex or broaden the scope.",
                            pattern, where);
        } else {
            r.content = fmt::format(
                "No matches for \"{}\" in {}. Check the regex (did you mean \"{}\"?) or broaden "
                "the "
                "scope.",
                pattern, where, hint);
        }
        if (!note.empty()) {
            r.content += "\n" + note;
        }
        r.metadata = {{"title", fmt::format("Search \"{}\" \u00b7 no matches", pattern)},
                      {"matches", 0},
                      {"files", 0},
                      {"path", scope.path.display}};
        return r;
    }

    // A spelling that would have matched: the pattern ignoring case, then (for a plain word)
    // one edit away. Empty when neither finds anything.
    static std::string near_miss(ToolContext& ctx, const Scope& scope, const std::string& pattern) {
        const bool literal = is_literal(pattern);
        if (has_upper(pattern)) {
            if (auto out = search(ctx, scope, {"--ignore-case", "--max-count=1"}, pattern)) {
                const Parsed p = parse_rg_json(ctx, scope.path.root, *out, false);
                if (p.matches > 0) {
                    if (!literal) {
                        return "(?i)" + pattern;
                    }
                    const std::string text = most_common(p.submatches, pattern);
                    if (!text.empty()) {
                        return sanitize_utf8(text);
                    }
                }
            }
        }
        if (!literal || pattern.size() < 4 || pattern.size() > kMaxProbeLiteral) {
            return {};
        }
        if (auto out = search(ctx, scope, {"--ignore-case", "--max-count=1"},
                              edit_distance_one(pattern))) {
            const Parsed p = parse_rg_json(ctx, scope.path.root, *out, false);
            return sanitize_utf8(most_common(p.submatches, pattern));
        }
        return {};
    }
};

}  // namespace

std::unique_ptr<Tool> make_grep_tool() {
    return std::make_unique<GrepTool>();
}

}  // namespace stockade::tools
