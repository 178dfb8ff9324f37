// read (TOOL_PROTOCOL §2): a page of a file as `LINE→CONTENT`, a directory listing two levels
// deep, or a one-line description of a binary file. Stamps the file on success.
//
// Control characters in a page are shown escaped (escape_controls, tools/text.h): ESC as \x1b,
// a lone CR (one not ending a line) as \x0d, C1 controls as \u009b, so a file cannot drive the
// terminal of a client that prints the result. The page is escaped here, before its 50 KB are
// counted, and a page that shows such escapes says how to quote them to edit. A CR that ends a
// line is a line ending, never shown (a CRLF file is read as LF; in a file of mixed endings each
// line's own CR is dropped). File names in headers and listings are shown with listed_name.
#include <algorithm>

#include <fmt/format.h>

#include "policy/requests.h"
#include "tools/binary_sniff.h"
#include "tools/file_commit.h"
#include "tools/file_stamps.h"
#include "tools/file_tools.h"
#include "tools/text.h"
#include "tools/tool_support.h"

namespace stockade::tools {
namespace {

constexpr size_t kDefaultLimit = 2000;
constexpr size_t kMaxLineChars = 2000;
constexpr size_t kMaxPageBytes = size_t{50} * 1024;
constexpr std::string_view kLineTruncated = "\u2026 [line truncated]";
constexpr size_t kMaxTopEntries = 200;
constexpr size_t kMaxNestedEntries = 20;
constexpr size_t kListCap = 1000;
constexpr std::string_view kEscapedNote =
    "(Control characters in these lines are shown as escapes such as \\x1b or \\u009b. To "
    "match them in edit's old_string, write the characters themselves (in JSON: \\u001b), not "
    "the escapes.)";

constexpr std::string_view kDescription =
    "Read a file from the workspace. Returns the file content with line numbers, in the format "
    "'LINE_NUMBER\u2192CONTENT'. By default reads up to 2000 lines from the beginning. For larger "
    "files, use offset and limit to page through content \u2014 the output tells you the total "
    "line count and how to continue. Prefer reading only the region you need on large files. "
    "Binary files are detected and described instead of dumped. If the path is a directory, its "
    "entries are listed. File paths must be absolute (inside the workspace) or relative to the "
    "workspace root. Outputs that other tools saved to a file can be read at the path they give.";

bool is_noise_dir(std::string_view name) {
    return name == "node_modules" || name == ".git" || name == "dist";
}

bool is_hidden(std::string_view name) {
    return name.starts_with('.');
}

std::string entry_label(const workspace::DirEntry& e) {
    const std::string name = listed_name(e.name);
    switch (e.type) {
        case workspace::FileType::kDirectory:
            return name + "/";
        case workspace::FileType::kSymlink:
            return name + " (symlink)";
        case workspace::FileType::kFile:
        case workspace::FileType::kOther:
            break;
    }
    return name;
}

std::string counts(size_t visible, size_t hidden, bool more) {
    std::string s = count_of(visible, "entry", "entries");
    if (more) {
        s = "more than " + s;
    }
    if (hidden > 0) {
        s += fmt::format(" + {} hidden", with_thousands(hidden));
    }
    return s;
}

std::string join_path(std::string_view dir, std::string_view name) {
    return dir.empty() ? std::string(name) : fmt::format("{}/{}", dir, name);
}

struct ReadArgs {
    std::string file_path{};
    std::optional<int64_t> offset{};
    std::optional<int64_t> limit{};
};

class ReadTool final : public TypedTool<ReadArgs> {
public:
    ReadTool()
        : TypedTool(ToolSpec{.name = "read",
                             .title = "Read file",
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
                   {"description", "Path to the file to read (absolute preferred)."}}},
                 {"offset",
                  {{"type", "integer"},
                   {"description",
                    "1-based line number to start reading from. Omit to start at line 1."}}},
                 {"limit",
                  {{"type", "integer"},
                   {"description",
                    "Maximum number of lines to return. Omit for the default of 2000."}}},
             }},
            {"required", {"file_path"}},
            {"additionalProperties", false},
        };
    }
    static nlohmann::json metadata_schema_json() {
        return metadata_schema({{"path", of_type("string")},
                                {"lines", of_type("integer")},
                                {"first_line", of_type("integer")},
                                {"last_line", of_type("integer")},
                                {"total_lines", of_type("integer")},
                                {"entries", of_type("integer")},
                                {"binary", of_type("boolean")}});
    }
    static ToolAnnotations hints() {
        return {.read_only = true, .destructive = false, .idempotent = true, .open_world = false};
    }

    [[nodiscard]] ReadArgs read_args(const nlohmann::json& json) const override {
        return ReadArgs{.file_path = arg_string(json, "file_path"),
                        .offset = opt_int(json, "offset"),
                        .limit = opt_int(json, "limit")};
    }

    [[nodiscard]] std::vector<policy::CapabilityRequest> capabilities(
        const ReadArgs& args, const policy::RequestContext& where) const override {
        return {policy::file_read_request("read", args.file_path, where)};
    }
    ToolResult run(const ReadArgs& args, ToolContext& ctx) const override {
        Result<workspace::ResolvedPath> resolved = resolve_tool_path(ctx, args.file_path);
        if (!resolved) {
            return error_result(resolved.error().message);
        }
        const workspace::ResolvedPath& path = *resolved;
        const std::string shown = listed_name(path.display);
        const std::optional<int64_t> offset_arg = args.offset;
        const std::optional<int64_t> limit_arg = args.limit;
        if (offset_arg && *offset_arg < 0) {
            return error_result(fmt::format(
                "offset is {}, but it is a 1-based line number. Use offset=1 for the first line.",
                *offset_arg));
        }
        if (limit_arg && *limit_arg < 1) {
            return error_result(fmt::format(
                "limit is {}, but it must be at least 1 (the number of lines to return). Omit it "
                "for the default of 2000.",
                *limit_arg));
        }
        const size_t offset = offset_arg && *offset_arg > 0 ? static_cast<size_t>(*offset_arg) : 1;
        const size_t limit = limit_arg ? static_cast<size_t>(*limit_arg) : kDefaultLimit;

        // One exchange with the workspace for a file; only what read refuses (a directory, a
        // device, socket or pipe) costs a stat to say what it is.
        Result<workspace::ReadData> data = ctx.ws->read(path.root, path.relative, kMaxFileBytes);
        if (!data) {
            if (data.error().code == Errc::kNotFound) {
                return error_result(not_found_message(ctx, path));
            }
            if (data.error().code == Errc::kFailedPrecondition) {
                Result<workspace::FileInfo> info = ctx.ws->stat(path.root, path.relative);
                if (info && info->type == workspace::FileType::kDirectory) {
                    return list_directory(ctx, path);
                }
                if (info && info->type == workspace::FileType::kOther) {
                    return error_result(fmt::format(
                        "{} is not a regular file (it is a device, socket or pipe); read only "
                        "opens files and directories.",
                        shown));
                }
            }
            return error_result(io_failure("read", shown, data.error()));
        }
        const bool paging = offset_arg.has_value() || limit_arg.has_value();
        if (data->truncated && !paging) {
            return error_result(fmt::format(
                "{} is too large to read at once ({}; the limit is {}). Use grep to search its "
                "content, or read a region with offset and limit.",
                shown, format_size(data->info.size), format_size(kMaxFileBytes)));
        }
        const std::string& bytes = data->bytes;
        if (auto kind = sniff_binary(path.relative, bytes)) {
            ToolResult r;
            r.content = fmt::format(
                "{} is a binary file ({}, {}); its content is not shown. Use bash with a tool "
                "such as file, xxd or strings if you need to inspect it.",
                shown, *kind, format_size(data->info.size));
            r.metadata = {
                {"title", fmt::format("Read {} \u00b7 binary \u00b7 {}",
                                      listed_name(short_path(path)), format_size(data->info.size))},
                {"path", path.display},
                {"binary", true}};
            return r;
        }

        const bool whole = !data->truncated;
        const TextShape shape = detect_shape(bytes);
        std::string normalized;
        const std::string_view text = normalize_text(bytes, shape, normalized);
        const std::vector<std::string_view> lines = split_lines(text);
        const size_t total = lines.size();

        if (total == 0) {
            stamp(ctx, path, bytes, data->info);
            ToolResult r;
            r.content = fmt::format("{}\n(The file is empty.)", shown);
            r.metadata = {
                {"title", fmt::format("Read {} \u00b7 empty", listed_name(short_path(path)))},
                {"path", path.display},
                {"lines", 0},
                {"total_lines", 0}};
            return r;
        }
        if (offset > total) {
            if (!whole) {
                return error_result(fmt::format(
                    "Offset {} is beyond the first {} of {} ({}), which is as far as read can "
                    "page (lines 1\u2013{}). Use grep to find the text you need in the rest of "
                    "the file.",
                    offset, format_size(kMaxFileBytes), shown, format_size(data->info.size),
                    total));
            }
            return error_result(
                fmt::format("Offset {} is beyond the end of the file ({}). Use offset \u2264 {}.",
                            offset, count_of(total, "line", "lines"), total));
        }

        std::string body;
        body.reserve(std::min(kMaxPageBytes, text.size() + total * 10));
        bool escaped = false;
        size_t last = offset - 1;  // 1-based number of the last line shown
        while (last < total && last - (offset - 1) < limit) {
            std::string_view line = lines[last];
            if (line.ends_with('\r')) {
                line.remove_suffix(1);
            }
            const size_t before = body.size();
            if (before != 0) {
                body += '\n';
            }
            bool controls = false;
            // Most lines are valid UTF-8, short and free of controls: shown as they are.
            if (line.size() <= kMaxLineChars && !has_control_chars(line) && is_valid_utf8(line)) {
                append_numbered_line(body, last + 1, line);
            } else {
                const std::string cut =
                    truncate_chars(sanitize_utf8(line), kMaxLineChars, kLineTruncated);
                controls = has_control_chars(cut);
                append_numbered_line(body, last + 1, escape_controls(cut));
            }
            if (before != 0 && body.size() > kMaxPageBytes) {
                body.resize(before);
                break;
            }
            escaped = escaped || controls;
            ++last;
        }

        std::string content = fmt::format("{}\n{}", shown, body);
        if (last < total) {
            content += fmt::format("\n(Showing lines {}\u2013{} of {}. Use offset={} to continue.)",
                                   offset, last, total, last + 1);
        } else if (!whole) {
            content += fmt::format(
                "\n(Showing lines {}\u2013{}: the end of the first {} of this {} file. Use grep to "
                "search the rest.)",
                offset, last, format_size(kMaxFileBytes), format_size(data->info.size));
        }
        if (escaped) {
            content += "\n";
            content += kEscapedNote;
        }
        if (whole) {
            stamp(ctx, path, bytes, data->info);
        }

        ToolResult r;
        r.content = std::move(content);
        r.metadata = {
            {"title", fmt::format("Read {} \u00b7 lines {}\u2013{} of {}",
                                  listed_name(short_path(path)), offset, last, total)},
            {"path", path.display},
            {"lines", last - offset + 1},
            {"first_line", offset},
            {"last_line", last},
            {"total_lines", total},
        };
        return r;
    }

    static void stamp(ToolContext& ctx, const workspace::ResolvedPath& path,
                      const std::string& bytes, const workspace::FileInfo& info) {
        if (ctx.stamps == nullptr) {
            return;
        }
        stamp_read(ctx, path, bytes, info.mtime_ns);
    }

    static ToolResult list_directory(ToolContext& ctx, const workspace::ResolvedPath& path) {
        const std::string dir_shown = listed_name(path.display);
        Result<std::vector<workspace::DirEntry>> entries =
            ctx.ws->list(path.root, path.relative, kListCap + 1);
        if (!entries) {
            return error_result(io_failure("list", dir_shown, entries.error()));
        }
        const bool more = entries->size() > kListCap;
        if (more) {
            entries->resize(kListCap);
        }
        size_t hidden = 0;
        std::vector<const workspace::DirEntry*> visible;
        for (const workspace::DirEntry& e : *entries) {
            if (is_hidden(e.name)) {
                ++hidden;
            } else {
                visible.push_back(&e);
            }
        }
        bool any_hidden = hidden > 0;

        std::string body;
        size_t shown = 0;
        for (const workspace::DirEntry* e : visible) {
            if (shown == kMaxTopEntries) {
                body += fmt::format("\u2026 and {} more\n", with_thousands(visible.size() - shown));
                break;
            }
            ++shown;
            if (e->type != workspace::FileType::kDirectory) {
                body += entry_label(*e) + "\n";
                continue;
            }
            if (is_noise_dir(e->name)) {
                body += fmt::format("{}/ (not expanded)\n", listed_name(e->name));
                continue;
            }
            const std::string child = join_path(path.relative, e->name);
            Result<std::vector<workspace::DirEntry>> sub =
                ctx.ws->list(path.root, child, kListCap + 1);
            if (!sub) {
                body += fmt::format("{}/ (cannot be listed)\n", listed_name(e->name));
                continue;
            }
            const bool sub_more = sub->size() > kListCap;
            if (sub_more) {
                sub->resize(kListCap);
            }
            size_t sub_hidden = 0;
            std::vector<const workspace::DirEntry*> sub_visible;
            for (const workspace::DirEntry& s : *sub) {
                if (is_hidden(s.name)) {
                    ++sub_hidden;
                } else {
                    sub_visible.push_back(&s);
                }
            }
            any_hidden = any_hidden || sub_hidden > 0;
            if (sub_visible.empty() && sub_hidden == 0) {
                body += fmt::format("{}/ (empty)\n", listed_name(e->name));
                continue;
            }
            body += fmt::format("{}/ ({})\n", listed_name(e->name),
                                counts(sub_visible.size(), sub_hidden, sub_more));
            for (size_t i = 0; i < sub_visible.size(); ++i) {
                if (i == kMaxNestedEntries) {
                    body += fmt::format("  \u2026 and {} more\n",
                                        with_thousands(sub_visible.size() - i));
                    break;
                }
                body += "  " + entry_label(*sub_visible[i]) + "\n";
            }
        }

        std::string content;
        if (visible.empty() && hidden == 0) {
            content = fmt::format("Directory {} is empty.", dir_shown);
        } else {
            content = fmt::format("Directory {} ({}):\n{}", dir_shown,
                                  counts(visible.size(), hidden, more), body);
            if (any_hidden) {
                content +=
                    "(Hidden entries, whose names start with \".\", are counted but not "
                    "listed.)\n";
            }
            content += "Read a file to see its content, or use glob to find files deeper down.";
        }
        ToolResult r;
        r.content = std::move(content);
        r.metadata = {{"title", fmt::format("Read {} \u00b7 directory \u00b7 {}",
                                            listed_name(short_path(path)),
                                            count_of(visible.size() + hidden, "entry", "entries"))},
                      {"path", path.display},
                      {"entries", visible.size() + hidden}};
        return r;
    }
};

}  // namespace

std::unique_ptr<Tool> make_read_tool() {
    return std::make_unique<ReadTool>();
}

}  // namespace stockade::tools
