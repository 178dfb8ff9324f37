// The write/edit commit sequence and the read-before-write rule (TOOL_PROTOCOL §3.2): what a
// file tool does around the bytes it reads and writes — check the stamp, diff, write
// atomically, stamp again, record the event.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "tools/diff.h"
#include "tools/tool.h"
#include "workspace/workspace.h"

namespace stockade::tools {

// Read-before-write and external-modification check shared by write and edit (TOOL_PROTOCOL
// §3.2): the file's current bytes when the agent read it this session and it has not changed
// since; else the model-facing refusal ("Refusing to <verb> <path>: ...") as the error.
// `prepare`, when given, runs on the bytes while they are hashed for the check (on another
// thread for a large file): what it computes is the caller's to drop when the check fails, and
// nothing may be written before this returns.
Result<std::string> read_unchanged_since_stamp(
    ToolContext& ctx, const workspace::ResolvedPath& path, std::string_view verb,
    const std::function<void(std::string_view)>& prepare = {});

// Stamps the bytes the agent read (the read-before-write rule) and records FileRead.
void stamp_read(ToolContext& ctx, const workspace::ResolvedPath& path, std::string_view bytes,
                int64_t mtime_ns);

// What write and edit do once they know the new bytes: the diff against the old ones, the
// atomic write, the new stamp, and the FileModified event (durable). Errors are the
// model-facing sentence (a cancelled call, a failed write).
struct Committed {
    DiffResult diff{};
    std::string content{};  // the new bytes, handed back: they travel to the worker without a copy
};
Result<Committed> commit_file(ToolContext& ctx, const workspace::ResolvedPath& path,
                              std::string_view old_bytes, std::string new_bytes, bool created);

}  // namespace stockade::tools
