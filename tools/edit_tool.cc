// edit (TOOL_PROTOCOL §4): replace old_string with new_string in one file through the edit
// cascade, under the file's lock, after the read-before-edit and external-modification checks;
// answers with a numbered snippet of the edited region (±4 lines) so the model can verify.
#include <algorithm>

#include <fmt/format.h>

#include "policy/requests.h"
#include "tools/diff.h"
#include "tools/edit_cascade.h"
#include "tools/file_commit.h"
#include "tools/file_locks.h"
#include "tools/file_stamps.h"
#include "tools/file_tools.h"
#include "tools/text.h"
#include "tools/tool_support.h"

namespace stockade::tools {
namespace {

constexpr size_t kSnippetContext = 4;
constexpr size_t kMaxSnippetLines = 60;
constexpr size_t kMaxLineChars = 2000;
constexpr size_t kMaxListedLines = 10;

constexpr std::string_view kDescription =
    "Replace an exact string in a file. Provide the text to find in old_string and its "
    "replacement in new_string. old_string must uniquely identify one location: include 3\u20135 "
    "lines of surrounding context exactly as it appears in the file, including whitespace and "
    "indentation. If old_string matches multiple locations the edit fails and reports the line "
    "numbers \u2014 add more context and retry, or set replace_all to true to change every exact "
    "occurrence (useful for renames). The tool tolerates minor whitespace drift but will refuse "
    "ambiguous or disproportionate fuzzy matches. You must read the file during this session "
    "before editing it. On success you get a snippet of the edited region \u2014 review it "
    "instead of re-reading the file.";

// How a loose strategy matched, for the ambiguity sentence.
std::string_view loose_match_phrase(Strategy s) {
    switch (s) {
        case Strategy::kExact:
        case Strategy::kMultiOccurrence:
            return "";
        case Strategy::kLineTrimmed:
        case Strategy::kIndentationFlexible:
            return "when lines are compared trimmed";
        case Strategy::kWhitespaceNormalized:
            return "when whitespace is normalized";
        case Strategy::kEscapeNormalized:
            return "once its escape sequences are unescaped";
        case Strategy::kTrimmedBoundary:
            return "once its surrounding whitespace is trimmed";
        case Strategy::kBlockAnchor:
            return "by its first and last lines";
        case Strategy::kContextAware:
            return "by its context lines";
    }
    return "";
}

std::string line_list(const std::vector<size_t>& lines) {
    std::vector<std::string> parts;
    for (size_t i = 0; i < lines.size() && i < kMaxListedLines; ++i) {
        parts.push_back(std::to_string(lines[i]));
    }
    std::string s =
        fmt::format("{} {}", lines.size() == 1 ? "line" : "lines", fmt::join(parts, ", "));
    if (lines.size() > kMaxListedLines) {
        s += fmt::format(", \u2026 ({} more)", lines.size() - kMaxListedLines);
    }
    return s;
}

std::string line_range(size_t first, size_t last) {
    return first == last ? fmt::format("line {}", first)
                         : fmt::format("lines {}\u2013{}", first, last);
}

// A line with its leading whitespace made visible ("·" a space, "\t" a tab), the rest quoted
// as quote() does.
std::string visible_indentation(std::string_view line) {
    const std::string_view ind = indentation(line);
    std::string out = "\"";
    for (char c : ind) {
        out += c == '\t' ? "\\t" : "\u00b7";
    }
    return out + quote(line.substr(ind.size())).substr(1);
}

std::string failure_message(const EditFailure& f, std::string_view display, bool replace_all) {
    switch (f.kind) {
        case EditFailureKind::kEmptyOldString:
            return "No replacement was performed: old_string is empty. To replace the whole file, "
                   "use the write tool; to change part of it, put the exact text to replace, with "
                   "a few lines of context, in old_string.";
        case EditFailureKind::kIdentical:
            return "old_string and new_string are identical \u2014 there is nothing to change.";
        case EditFailureKind::kNotFound: {
            std::string msg = fmt::format(
                "No replacement was performed: old_string was not found in {}.\n", display);
            if (f.near_miss) {
                const NearMiss& m = *f.near_miss;
                msg += fmt::format(
                    "Closest near-miss is at {} (differs {}on line {}: expected {}, file has {}). "
                    "Read that region and provide old_string exactly as it appears in the file.",
                    line_range(m.first_line, m.last_line),
                    m.whitespace_only ? "in whitespace " : "", m.line, quote(m.expected),
                    quote(m.actual));
            } else {
                msg +=
                    "Read the file to see its current content, then provide old_string exactly "
                    "as it appears in the file.";
            }
            if (replace_all) {
                msg += " With replace_all, old_string must match exactly.";
            }
            return msg;
        }
        case EditFailureKind::kAmbiguous: {
            if (f.strategy == Strategy::kExact) {
                return fmt::format(
                    "No replacement was performed: old_string matches {} locations in {} ({}). Add "
                    "more surrounding lines to old_string so it uniquely identifies one location, "
                    "or set replace_all to true to change all {}.",
                    f.locations, display, line_list(f.lines), f.locations);
            }
            return fmt::format(
                "No replacement was performed: old_string is not in {} exactly, and it matches {} "
                "locations {} ({}). Add more surrounding lines to old_string, copied exactly as "
                "they appear in the file, so it uniquely identifies one location.",
                display, f.locations, loose_match_phrase(f.strategy), line_list(f.lines));
        }
        case EditFailureKind::kDisproportionate:
            return fmt::format(
                "No replacement was performed: the closest match for old_string in {} ({}) is {} "
                "characters long, far more than old_string's {}, so it cannot be trusted. Re-read "
                "that region and provide its full exact text in old_string.",
                display, line_range(f.first_line, f.last_line), with_thousands(f.candidate_chars),
                with_thousands(f.old_chars));
        case EditFailureKind::kNoChange:
            return fmt::format(
                "No replacement was performed: the text matched in {} ({}, {}) already reads "
                "exactly as new_string, so there is nothing to change. Check that new_string "
                "holds the change you intended.",
                display, line_range(f.first_line, f.last_line), strategy_phrase(f.strategy));
        case EditFailureKind::kIndentation: {
            const IndentationHint hint = f.indentation.value_or(IndentationHint{});
            const std::string shown =
                hint.in_new_string ? fmt::format("new_string has {}, the file's line {} has {}",
                                                 visible_indentation(hint.model_line), hint.line,
                                                 visible_indentation(hint.file_line))
                                   : fmt::format("line {}: old_string has {}, the file has {}",
                                                 hint.line, visible_indentation(hint.model_line),
                                                 visible_indentation(hint.file_line));
            return fmt::format(
                "No replacement was performed: old_string matches {} of {} {}, but new_string "
                "cannot be re-indented to the file's indentation ({}; \u00b7 is a space). Copy "
                "old_string with the file's indentation exactly and indent new_string the same "
                "way.",
                line_range(f.first_line, f.last_line), display, loose_match_phrase(f.strategy),
                shown);
        }
    }
    return "No replacement was performed.";
}

// The bytes from `at` that hold `count` lines (with their breaks), or up to the end.
size_t window_bytes(std::string_view text, size_t at, size_t count) {
    size_t end = at;
    for (; count > 0 && end < text.size(); --count) {
        const size_t nl = text.find('\n', end);
        end = nl == std::string_view::npos ? text.size() : nl + 1;
    }
    return end - at;
}

std::string snippet(const std::string& bytes, size_t first_line, size_t last_line) {
    std::string normalized;
    const std::string_view text = normalize_text(bytes, detect_shape(bytes), normalized);
    if (text.empty()) {
        return "The file is now empty.";
    }
    const size_t from = first_line > kSnippetContext ? first_line - kSnippetContext : 1;
    // Only the lines up to the region's end are looked at: the file may be 10 MB around a
    // one-line edit.
    size_t at = 0;
    for (size_t n = 1; n < from && at != std::string_view::npos; ++n) {
        at = text.find('\n', at);
        at = at == std::string_view::npos ? at : at + 1;
    }
    // min(last_line + kSnippetContext, the file's lines): the lines before `at` are from - 1,
    // and at most the region's are counted after it.
    const size_t region_end =
        at == std::string_view::npos
            ? std::min(last_line + kSnippetContext, count_lines(text))
            : from - 1 +
                  count_lines(text.substr(
                      at, window_bytes(text, at, last_line + kSnippetContext - from + 1)));
    const size_t to = std::min(region_end, from + kMaxSnippetLines - 1);
    const std::vector<std::string_view> lines =
        at == std::string_view::npos
            ? std::vector<std::string_view>{}
            : split_lines(text.substr(at, window_bytes(text, at, to - from + 1)));
    std::string out = fmt::format("Snippet of the edited region ({}):", line_range(from, to));
    for (size_t n = from; n <= to && n - from < lines.size(); ++n) {
        std::string_view line = lines[n - from];
        if (line.ends_with('\r')) {
            line.remove_suffix(1);
        }
        out += '\n';
        out += number_line(
            n, truncate_chars(sanitize_utf8(line), kMaxLineChars, "\u2026 [line truncated]"));
    }
    if (to < region_end) {
        out += fmt::format(
            "\n(Snippet cut at {} lines; the edited region continues to line {}. "
            "Read the file to review the rest.)",
            kMaxSnippetLines, std::min(last_line, region_end));
    }
    return out;
}

struct EditArgs {
    std::string file_path{};
    std::string old_string{};
    std::string new_string{};
    bool replace_all = false;
};

class EditTool final : public TypedTool<EditArgs> {
public:
    EditTool()
        : TypedTool(ToolSpec{.name = "edit",
                             .title = "Edit file",
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
                   {"description", "Path of the file to edit (absolute preferred)."}}},
                 {"old_string",
                  {{"type", "string"},
                   {"description",
                    "The exact existing text to replace, with enough surrounding context to be "
                    "unique in the file."}}},
                 {"new_string",
                  {{"type", "string"},
                   {"description", "The replacement text. Must differ from old_string."}}},
                 {"replace_all",
                  {{"type", "boolean"},
                   {"description",
                    "Replace every exact occurrence of old_string instead of requiring "
                    "uniqueness. Default false."}}},
             }},
            {"required", {"file_path", "old_string", "new_string"}},
            {"additionalProperties", false},
        };
    }
    static nlohmann::json metadata_schema_json() {
        return metadata_schema({{"path", of_type("string")},
                                {"diff", of_type("string")},
                                {"additions", of_type("integer")},
                                {"deletions", of_type("integer")},
                                {"strategy", of_type("string")},
                                {"replacements", of_type("integer")},
                                {"reindented", of_type("boolean")}});
    }
    static ToolAnnotations hints() {
        return {.read_only = false, .destructive = true, .idempotent = false, .open_world = false};
    }

    [[nodiscard]] EditArgs read_args(const nlohmann::json& json) const override {
        return EditArgs{.file_path = arg_string(json, "file_path"),
                        .old_string = arg_string(json, "old_string"),
                        .new_string = arg_string(json, "new_string"),
                        .replace_all = opt_bool(json, "replace_all", false)};
    }

    [[nodiscard]] std::vector<policy::CapabilityRequest> capabilities(
        const EditArgs& args, const policy::RequestContext& where) const override {
        return policy::file_write_requests("edit", args.file_path, where);
    }
    ToolResult run(const EditArgs& args, ToolContext& ctx) const override {
        Result<workspace::ResolvedPath> resolved =
            resolve_writable_path(ctx, args.file_path, "edit");
        if (!resolved) {
            return error_result(resolved.error().message);
        }
        const workspace::ResolvedPath& path = *resolved;
        const std::string& old_string = args.old_string;
        const std::string& new_string = args.new_string;
        const bool replace_all = args.replace_all;

        const FileLocks::Guard guard = ctx.locks->lock(path.display);
        Result<workspace::FileInfo> info = ctx.ws->stat(path.root, path.relative);
        if (!info) {
            if (info.error().code == Errc::kNotFound) {
                return error_result(not_found_message(ctx, path, "File",
                                                      "To create a new file, use the write tool."));
            }
            return error_result(io_failure("read", path.display, info.error()));
        }
        if (info->type == workspace::FileType::kDirectory) {
            return error_result(fmt::format(
                "{} is a directory; edit changes one file. Give the path of a file inside it.",
                path.display));
        }
        if (old_string.empty()) {
            return error_result(failure_message({.kind = EditFailureKind::kEmptyOldString},
                                                path.display, replace_all));
        }
        if (old_string == new_string) {
            return error_result(
                failure_message({.kind = EditFailureKind::kIdentical}, path.display, replace_all));
        }
        // The edit is worked out while the bytes are hashed for the read-before-edit check;
        // it is dropped if they changed.
        EditOutcome outcome;
        Result<std::string> current =
            read_unchanged_since_stamp(ctx, path, "edit", [&](std::string_view bytes) {
                outcome = apply_edit({.file = bytes,
                                      .old_string = old_string,
                                      .new_string = new_string,
                                      .replace_all = replace_all});
            });
        if (!current) {
            return error_result(current.error().message);
        }
        if (const auto* failure = std::get_if<EditFailure>(&outcome)) {
            nlohmann::json meta = {{"path", path.display}};
            if (failure->kind == EditFailureKind::kAmbiguous) {
                meta["matches"] = failure->locations;
            }
            return error_result(failure_message(*failure, path.display, replace_all), meta);
        }
        auto& applied = std::get<EditApplied>(outcome);
        Result<Committed> committed =
            commit_file(ctx, path, *current, std::move(applied.content), false);
        if (!committed) {
            return error_result(committed.error().message);
        }
        const DiffResult& diff = committed->diff;

        std::string how;
        if (applied.strategy == Strategy::kMultiOccurrence) {
            how = count_of(applied.replacements, "replacement", "replacements");
        } else {
            how =
                fmt::format("{}, {}", count_of(applied.replacements, "replacement", "replacements"),
                            strategy_phrase(applied.strategy));
            if (applied.reindented) {
                how += "; new_string re-indented to the file's indentation";
            }
        }
        ToolResult r;
        r.content = fmt::format(
            "Edited {} ({}).\n{}\nReview the changes. Edit the file again if the result is not "
            "what you intended.",
            path.display, how,
            snippet(committed->content, applied.new_first_line, applied.new_last_line));
        r.metadata = {
            {"title", fmt::format("Edit {} \u00b7 +{} \u2212{}", short_path(path), diff.additions,
                                  diff.deletions)},
            {"path", path.display},
            {"diff", diff.text},
            {"additions", diff.additions},
            {"deletions", diff.deletions},
            {"strategy", strategy_name(applied.strategy)},
            {"replacements", applied.replacements},
            {"reindented", applied.reindented},
        };
        return r;
    }
};

}  // namespace

std::unique_ptr<Tool> make_edit_tool() {
    return std::make_unique<EditTool>();
}

}  // namespace stockade::tools
