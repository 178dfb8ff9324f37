#include "tools/file_commit.h"

#include <future>
#include <system_error>

#include <fmt/format.h>

#include "common/crypto.h"
#include "tools/file_stamps.h"
#include "tools/tool_support.h"

namespace stockade::tools {
namespace {

// From this size a file's SHA-256 (5 ms for 10 MB) is computed on a thread of its own, beside
// the work on the same bytes (the edit, the diff, the worker's write and fsync); below it, a
// thread would cost more than it hides.
constexpr size_t kHashAsideBytes = size_t{1} << 20;

// sha256_hex(bytes), started now on another thread for a large buffer, or computed by get()
// for a small one. `bytes` must stay alive and unchanged until get() (or the destructor,
// which waits) returns.
std::future<std::string> sha256_aside(std::string_view bytes) {
    auto hash = [bytes] {
        return sha256_hex(bytes);
    };
    if (bytes.size() >= kHashAsideBytes) {
        try {
            return std::async(std::launch::async, hash);
        } catch (const std::system_error&) {
            // No thread to be had: hashed on get() instead.
        }
    }
    return std::async(std::launch::deferred, hash);
}

Error changed_on_disk(const workspace::ResolvedPath& path, std::string_view verb) {
    return Error{Errc::kFailedPrecondition,
                 fmt::format("Refusing to {} {}: the file changed on disk after you last read "
                             "it (content hash mismatch). Someone else may be editing it. "
                             "Re-read the file and reapply your change.",
                             verb, path.display)};
}

}  // namespace

Result<std::string> read_unchanged_since_stamp(
    ToolContext& ctx, const workspace::ResolvedPath& path, std::string_view verb,
    const std::function<void(std::string_view)>& prepare) {
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
    // The size tells most changes apart without hashing; the hash decides.
    if (current->truncated || current->bytes.size() != known->size) {
        return changed_on_disk(path, verb);
    }
    std::future<std::string> digest = sha256_aside(current->bytes);
    if (prepare) {
        prepare(current->bytes);
    }
    if (ctx.stamps->check(path.display, current->bytes.size(), digest.get()) != Freshness::kClean) {
        return changed_on_disk(path, verb);
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
    workspace::WriteRequest req;
    req.root = path.root;
    req.path = path.relative;
    req.bytes = std::move(new_bytes);
    req.make_parents = created;
    // The new stamp's digest is computed while the diff is made and the worker writes and
    // syncs the file: all of them only read the bytes.
    std::future<std::string> digest = sha256_aside(req.bytes);
    out.diff = unified_diff(old_bytes, req.bytes, path.relative, {.created = created});
    Result<workspace::WriteOutcome> written = ctx.ws->write(req);
    std::string sha256 = digest.get();
    if (!written) {
        return Error{written.error().code, io_failure("write", path.display, written.error())};
    }
    out.content = std::move(req.bytes);
    const FileStamp s =
        ctx.stamps->stamp(path.display, FileStamp{.sha256 = std::move(sha256),
                                                  .size = out.content.size(),
                                                  .mtime_ns = written->info.mtime_ns});
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
