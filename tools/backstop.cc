// The executor's last guard on every result (TOOL_PROTOCOL §1.3): content must be valid UTF-8
// (it travels in JSON), inert when a client prints it to a terminal, and at most 64 KB;
// anything longer is cut middle-out with the standard marker and spilled in full, whatever the
// tool did.
//
// Inert: control characters other than newline and tab are shown escaped (escape_controls in
// tools/text.h has the rule), in the content and in metadata.title (a client shows it on one
// line, so newline and tab are escaped there too). The rest of the metadata (paths, diffs) is
// data for the client, kept as it is.
//
// The spill holds the content as the tool made it (raw bytes, controls included), not the
// escaped text: a spill is a file the model reads back with read or grep, which escape what
// they show. Escaping adds and removes no line, so the marker's line counts hold for both.
#include <fmt/format.h>

#include "tools/text.h"
#include "tools/tool.h"
#include "tools/tool_support.h"

namespace stockade::tools {

void apply_backstop(ToolResult& result, ToolContext& ctx, std::string_view tool_name) {
    std::string raw;
    const bool changed = !is_valid_utf8(result.content) || has_control_chars(result.content);
    if (changed) {
        raw = std::move(result.content);
        result.content = escape_controls(raw);
    }
    if (result.metadata.is_object()) {
        if (auto title = result.metadata.find("title");
            title != result.metadata.end() && title->is_string()) {
            *title = escape_controls(title->get<std::string>(), LineBreaks::kEscape);
        }
    }
    if (result.content.size() <= kBackstopBytes) {
        return;
    }
    // Its own file name, so it never overwrites a spill the tool made itself.
    const std::string spill =
        spill_text(ctx, fmt::format("{}-result", tool_name), changed ? raw : result.content);
    const TruncateLimits limits{.max_lines = SIZE_MAX / 8,
                                .max_bytes = kBackstopBytes,
                                .head_lines = 3'000'000,
                                .tail_lines = 2'000'000};
    Truncated cut = truncate_middle_out(result.content, limits, spill);
    result.content = std::move(cut.text);
    nlohmann::json info = cut.info.to_json();
    if (result.metadata.is_object() && result.metadata.contains("truncation")) {
        result.metadata["truncation"]["backstop"] = std::move(info);
    } else {
        if (!result.metadata.is_object()) {
            result.metadata = nlohmann::json::object();
        }
        result.metadata["truncation"] = std::move(info);
    }
}

}  // namespace stockade::tools
