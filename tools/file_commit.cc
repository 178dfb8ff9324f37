#include "tools/file_commit.h"

#include <fmt/format.h>

#include "tools/file_stamps.h"
#include "tools/tool_support.h"

namespace stockade::tools {

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
                              std::string_view old_bytes, std::string new_bytes, bool created) {
    if (ctx.cancel.stop_requested()) {
        return Error{Errc::kCancelled, std::string(kCancelledText)};
    }
    Committed out;
    out.diff = unified_diff(old_bytes, new_bytes, path.relative, {.created = created});
    workspace::WriteRequest req;
    req.root = path.root;
    req.path = path.relative;
    req.bytes = std::move(new_bytes);
    req.make_parents = created;
    Result<workspace::WriteOutcome> written = ctx.ws->write(req);
    if (!written) {
        return Error{written.error().code, io_failure("write", path.display, written.error())};
    }
    out.content = std::move(req.bytes);
    const FileStamp s = ctx.stamps->stamp(path.display, out.content, written->info.mtime_ns);
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

}  // namespace stockade::tools
