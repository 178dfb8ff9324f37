// The executor's last guard on every result (TOOL_PROTOCOL §1.3): content must be valid UTF-8
// (it travels in JSON) and at most 64 KB; anything longer is cut middle-out with the standard
// marker and spilled in full, whatever the tool did.
#include <fmt/format.h>

#include "tools/text.h"
#include "tools/tool.h"
#include "tools/tool_support.h"

namespace stockade::tools {

void apply_backstop(ToolResult& result, ToolContext& ctx, std::string_view tool_name) {
    if (!is_valid_utf8(result.content)) {
        result.content = sanitize_utf8(result.content);
    }
    if (result.content.size() <= kBackstopBytes) {
        return;
    }
    // Its own file name, so it never overwrites a spill the tool made itself.
    const std::string spill = spill_text(ctx, fmt::format("{}-result", tool_name), result.content);
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
