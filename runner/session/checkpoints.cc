#include "runner/session/checkpoints.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#define OPENSSL_SUPPRESS_DEPRECATED
#include <fmt/format.h>
#include <openssl/sha.h>

#include "common/crypto.h"
#include "common/log.h"
#include "common/syscall.h"
#include "common/utf8.h"
#include "runner/session/event_log.h"
#include "runner/session/git_index.h"
#include "workspace/channel.h"
#include "workspace/open_beneath.h"

namespace stockade::runner {

namespace {

using nlohmann::json;
using workspace::FileType;

constexpr size_t kMaxListed = 50;  // paths of each kind an event names
constexpr uint64_t kMaxLogBytes = uint64_t{1} << 30;
constexpr size_t kMaxWalkRounds = 10'000;
// Paths in scope a session's checkpoints follow: what a worker reports past it (a tree that
// large, or a hostile worker) turns the walk into an error rather than the supervisor's memory.
constexpr size_t kMaxTrackedPaths = 2'000'000;
constexpr uint64_t kRestoreBatchBytes = uint64_t{8} << 20;
constexpr auto kGitTimeout = std::chrono::seconds(120);

bool is_hex_id(const std::string& s, size_t length) {
    return s.size() == length && std::all_of(s.begin(), s.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

std::string_view kind_name(CheckpointKind kind) {
    switch (kind) {
        case CheckpointKind::kBaseline:
            return "baseline";
        case CheckpointKind::kCall:
            return "call";
        case CheckpointKind::kRewind:
            return "rewind";
    }
    return "call";
}

std::optional<CheckpointKind> kind_from(std::string_view name) {
    for (CheckpointKind k :
         {CheckpointKind::kBaseline, CheckpointKind::kCall, CheckpointKind::kRewind}) {
        if (name == kind_name(k)) {
            return k;
        }
    }
    return std::nullopt;
}

json file_to_json(const CheckpointFile& f) {
    json j = {{"t", workspace::channel::file_type_name(f.type)}, {"m", f.mode}, {"s", f.size}};
    if (!f.blob.empty()) {
        j["b"] = f.blob;
    }
    if (!f.sha256.empty()) {
        j["h"] = f.sha256;
    }
    if (!f.target.empty()) {
        j["l"] = f.target;
    }
    if (f.too_large) {
        j["big"] = true;
        j["mt"] = f.mtime_ns;
        j["i"] = f.ino;
    }
    if (f.seeded) {
        j["g"] = true;
    }
    return j;
}

Result<CheckpointFile> file_from_json(const json& j) {
    auto bad = [](std::string_view why) {
        return Error{Errc::kInvalidArgument, fmt::format("checkpoint entry: {}", why)};
    };
    if (!j.is_object()) {
        return bad("not an object");
    }
    CheckpointFile f;
    const std::string t = j.value("t", "");
    if (t == "file") {
        f.type = FileType::kFile;
    } else if (t == "directory") {
        f.type = FileType::kDirectory;
    } else if (t == "symlink") {
        f.type = FileType::kSymlink;
    } else {
        return bad("unknown type");
    }
    if (!j.contains("m") || !j["m"].is_number_unsigned() || j["m"].get<uint64_t>() > 07777) {
        return bad("bad mode");
    }
    f.mode = static_cast<uint32_t>(j["m"].get<uint64_t>());
    f.size = j.value("s", uint64_t{0});
    f.blob = j.value("b", "");
    f.sha256 = j.value("h", "");
    f.target = j.value("l", "");
    f.too_large = j.value("big", false);
    f.mtime_ns = j.value("mt", int64_t{0});
    f.ino = j.value("i", uint64_t{0});
    f.seeded = j.value("g", false);
    if ((!f.blob.empty() && !is_hex_id(f.blob, 40)) ||
        (!f.sha256.empty() && !is_hex_id(f.sha256, 64))) {
        return bad("bad object id");
    }
    return f;
}

// git's timestamps and sizes are 32 bits wide; a seed says what git would compare.
bool exec_bit(uint32_t mode) {
    return (mode & 0100U) != 0;
}

}  // namespace

std::string git_blob_id(std::string_view bytes) {
    const std::string header = fmt::format("blob {}", bytes.size());
    SHA_CTX ctx;
    SHA1_Init(&ctx);
    SHA1_Update(&ctx, header.data(), header.size() + 1);  // with its NUL
    SHA1_Update(&ctx, bytes.data(), bytes.size());
    std::array<unsigned char, SHA_DIGEST_LENGTH> digest{};
    SHA1_Final(digest.data(), &ctx);
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(40);
    for (unsigned char c : digest) {
        out.push_back(kHex[c >> 4U]);
        out.push_back(kHex[c & 0xFU]);
    }
    return out;
}

bool same_file(const CheckpointFile& a, const CheckpointFile& b) {
    if (a.type != b.type) {
        return false;
    }
    switch (a.type) {
        case FileType::kDirectory:
            return a.mode == b.mode;
        case FileType::kSymlink:
            return a.blob == b.blob;
        case FileType::kFile:
        case FileType::kOther:
            break;
    }
    const bool mode_same =
        a.seeded || b.seeded ? exec_bit(a.mode) == exec_bit(b.mode) : a.mode == b.mode;
    if (!mode_same || a.too_large != b.too_large) {
        return false;
    }
    if (a.too_large) {
        return a.size == b.size && a.mtime_ns == b.mtime_ns && a.ino == b.ino;
    }
    return a.blob == b.blob;
}

CheckpointChanges diff_trees(const CheckpointTree& before, const CheckpointTree& after) {
    CheckpointChanges changes;
    auto b = before.begin();
    auto a = after.begin();
    while (b != before.end() || a != after.end()) {
        if (a == after.end() || (b != before.end() && b->first < a->first)) {
            changes.emplace(b->first, std::nullopt);
            ++b;
        } else if (b == before.end() || a->first < b->first) {
            changes.emplace(a->first, a->second);
            ++a;
        } else {
            if (!same_file(b->second, a->second) || b->second.mode != a->second.mode) {
                changes.emplace(a->first, a->second);
            }
            ++a;
            ++b;
        }
    }
    return changes;
}

void apply_changes(CheckpointTree& tree, const CheckpointChanges& changes) {
    for (const auto& [path, file] : changes) {
        if (file) {
            tree[path] = *file;
        } else {
            tree.erase(path);
        }
    }
}

json record_to_json(const CheckpointRecord& record) {
    json changes = json::object();
    for (const auto& [path, file] : record.changes) {
        changes[path] = file ? file_to_json(*file) : json(nullptr);
    }
    json j{{"seq", record.seq},
           {"call", record.call},
           {"kind", kind_name(record.kind)},
           {"ts", record.ts},
           {"changes", std::move(changes)}};
    if (!record.dropped.empty()) {
        j["dropped"] = record.dropped;
    }
    return j;
}

Result<CheckpointRecord> record_from_json(const json& j) {
    if (!j.is_object() || !j.contains("seq") || !j["seq"].is_number_unsigned() ||
        !j.contains("changes") || !j["changes"].is_object()) {
        return Error{Errc::kInvalidArgument, "checkpoint record: missing fields"};
    }
    CheckpointRecord r;
    r.seq = j["seq"].get<uint64_t>();
    r.call = j.value("call", "");
    r.ts = j.value("ts", "");
    const std::optional<CheckpointKind> kind = kind_from(j.value("kind", ""));
    if (!kind) {
        return Error{Errc::kInvalidArgument, "checkpoint record: unknown kind"};
    }
    r.kind = *kind;
    if (j.contains("dropped") && j["dropped"].is_array()) {
        for (const auto& call : j["dropped"]) {
            if (call.is_string()) {
                r.dropped.push_back(call.get<std::string>());
            }
        }
    }
    for (const auto& [path, value] : j["changes"].items()) {
        if (auto checked = workspace::check_relative_path(path); !checked || path.empty()) {
            return Error{Errc::kInvalidArgument, "checkpoint record: a path outside the scope"};
        }
        if (value.is_null()) {
            r.changes.emplace(path, std::nullopt);
            continue;
        }
        ASSIGN_OR_RETURN(CheckpointFile f, file_from_json(value));
        r.changes.emplace(path, std::move(f));
    }
    return r;
}

// ---- Planning -------------------------------------------------------------------------------

RewindPlan plan_rewind(const CheckpointTree& target, const CheckpointTree& last,
                       const CheckpointTree& current, bool force) {
    RewindPlan plan;
    std::set<std::string> paths;
    for (const auto& [p, f] : target) {
        paths.insert(p);
    }
    for (const auto& [p, f] : current) {
        paths.insert(p);
    }
    auto find = [](const CheckpointTree& tree, const std::string& p) -> const CheckpointFile* {
        auto it = tree.find(p);
        return it == tree.end() ? nullptr : &it->second;
    };
    auto equal = [](const CheckpointFile* a, const CheckpointFile* b) {
        if (a == nullptr || b == nullptr) {
            return a == b;
        }
        return same_file(*a, *b) &&
               (a->seeded || b->seeded || a->mode == b->mode || a->type == FileType::kSymlink);
    };
    std::set<std::string> conflicted;
    for (const std::string& p : paths) {
        const CheckpointFile* t = find(target, p);
        const CheckpointFile* c = find(current, p);
        if (equal(t, c)) {
            continue;
        }
        if (!force && !equal(c, find(last, p))) {
            plan.conflicts.push_back(p);
            conflicted.insert(p);
            continue;
        }
        if (t == nullptr) {
            plan.remove.push_back(p);
            continue;
        }
        if (t->too_large) {
            plan.unrewindable.push_back(p);
            continue;
        }
        if (c != nullptr && (c->type != t->type)) {
            plan.remove.push_back(p);  // a directory where a file was, a link for a directory
        }
        plan.put.push_back({p, *t});
    }
    // A directory to remove that holds a conflict stays (it could not be removed anyway).
    std::erase_if(plan.remove, [&](const std::string& p) {
        auto it = conflicted.lower_bound(p + "/");
        return it != conflicted.end() && it->starts_with(p + "/");
    });
    std::sort(plan.remove.begin(), plan.remove.end(), std::greater<>());
    return plan;
}

json RewindReport::to_json() const {
    return json{{"to", to},
                {"checkpoint", checkpoint},
                {"dry_run", dry_run},
                {"restored", restored},
                {"removed", removed},
                {"conflicts", conflicts},
                {"unrewindable", unrewindable},
                {"failed", failed}};
}

std::string rewind_report_text(const RewindReport& r) {
    std::string out;
    const std::string_view verb = r.dry_run ? "would be " : "";
    out += fmt::format(
        "Rewind to {} (checkpoint {}){}:\n",
        r.to.starts_with("@") ? "checkpoint " + r.to.substr(1) : "just before call " + r.to,
        r.checkpoint, r.dry_run ? ", dry run: nothing was changed" : "");
    auto list = [&](std::string_view what, const std::vector<std::string>& paths) {
        if (paths.empty()) {
            return;
        }
        out += fmt::format("  {}{} ({}):\n", verb, what, paths.size());
        for (const std::string& p : paths) {
            out += fmt::format("    {}\n", p);
        }
    };
    list("restored", r.restored);
    list("removed", r.removed);
    if (r.restored.empty() && r.removed.empty() && r.conflicts.empty()) {
        out += "  nothing to do: the workspace is already as it was then\n";
    }
    if (!r.conflicts.empty()) {
        out += fmt::format(
            "  left alone, changed outside the session since its last checkpoint ({}):\n",
            r.conflicts.size());
        for (const std::string& p : r.conflicts) {
            out += fmt::format("    {}\n", p);
        }
        out += "  Look at them, then run the rewind again with --force to overwrite them too.\n";
    }
    if (!r.unrewindable.empty()) {
        out += fmt::format(
            "  cannot be restored, recorded without their contents (above the size cap or past "
            "the checkpoint quota) ({}):\n",
            r.unrewindable.size());
        for (const std::string& p : r.unrewindable) {
            out += fmt::format("    {}\n", p);
        }
    }
    if (!r.failed.empty()) {
        out += fmt::format("  failed ({}):\n", r.failed.size());
        for (const std::string& p : r.failed) {
            out += fmt::format("    {}\n", p);
        }
    }
    return out;
}

// ---- The store ------------------------------------------------------------------------------

namespace {

Result<UniqueFd> open_subdir(int parent, const char* name) {
    if (::mkdirat(parent, name, 0700) != 0 && errno != EEXIST) {
        return errno_error(fmt::format("create \"{}\"", name), errno);
    }
    const int fd = retry_eintr(
        [&] { return ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); });
    if (fd < 0) {
        return errno_error(fmt::format("open \"{}\"", name), errno);
    }
    return UniqueFd(fd);
}

Status write_file_at(int dir, const std::string& name, std::string_view bytes, bool sync) {
    const std::string tmp = name + ".tmp";
    const int fd = retry_eintr([&] {
        return ::openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
                        0600);
    });
    if (fd < 0) {
        return errno_error(fmt::format("create \"{}\"", tmp), errno);
    }
    UniqueFd owned(fd);
    RETURN_IF_ERROR(write_all(fd, bytes));
    if (sync && ::fdatasync(fd) != 0) {
        return errno_error(fmt::format("sync \"{}\"", tmp), errno);
    }
    owned.reset();
    if (::renameat(dir, tmp.c_str(), dir, name.c_str()) != 0) {
        return errno_error(fmt::format("rename \"{}\"", tmp), errno);
    }
    return {};
}

Result<std::string> read_file_at(int dir, const std::string& name, uint64_t max) {
    const int fd = retry_eintr([&] {
        return ::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    });
    if (fd < 0) {
        return errno_error(fmt::format("open \"{}\"", name), errno);
    }
    const UniqueFd owned(fd);
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        return Error{Errc::kFailedPrecondition, fmt::format("\"{}\" is not a file", name)};
    }
    return read_all(fd, static_cast<size_t>(max));
}

}  // namespace

Checkpoints::Checkpoints(UniqueFd dir, UniqueFd objects, HostDir workspace,
                         CheckpointOptions options, EventSink* events)
    : dir_(std::move(dir)),
      objects_(std::move(objects)),
      workspace_(std::move(workspace)),
      options_(std::move(options)),
      events_(events) {}

Checkpoints::~Checkpoints() {
    drain();
    thread_ = std::jthread();  // stopped and joined
    // An ended session's checkpoints stay within their own quota (cap_bytes) on disk; the
    // tenant's pool, which its pruning of tool output cannot reclaim them from, gets them back.
    if (options_.pool && pool_held_ > 0) {
        options_.pool->give_back(pool_held_);
    }
}

Result<std::unique_ptr<Checkpoints>> Checkpoints::open(int session_dir_fd, HostDir workspace,
                                                       CheckpointOptions options,
                                                       EventSink* events) {
    ASSIGN_OR_RETURN(UniqueFd dir, open_subdir(session_dir_fd, "checkpoints"));
    ASSIGN_OR_RETURN(UniqueFd objects, open_subdir(dir.get(), "objects"));
    std::unique_ptr<Checkpoints> c(new Checkpoints(
        std::move(dir), std::move(objects), std::move(workspace), std::move(options), events));
    RETURN_IF_ERROR(c->load());
    return c;
}

Status Checkpoints::load() {
    const std::lock_guard lock(mu_);
    for (const auto& e : list_entries(objects_.get())) {
        if (S_ISREG(e.st.st_mode) && is_hex_id(e.name, 64)) {
            object_sizes_[e.name] = static_cast<uint64_t>(e.st.st_size);
        }
    }
    auto text = read_file_at(dir_.get(), "log.jsonl", kMaxLogBytes);
    if (!text) {
        if (text.error().sys_errno == ENOENT) {
            return {};
        }
        return std::move(text).error().wrap("read checkpoints/log.jsonl");
    }
    log_bytes_ = text->size();
    size_t start = 0;
    while (start < text->size()) {
        size_t end = text->find('\n', start);
        if (end == std::string::npos) {
            end = text->size();
        }
        const std::string_view line(text->data() + start, end - start);
        start = end + 1;
        if (line.empty()) {
            continue;
        }
        json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
        auto record = record_from_json(j);
        if (!record) {
            SPDLOG_LOGGER_WARN(log::get("runner"), "checkpoints: skipping a record: {}",
                               record.error().message);
            continue;
        }
        apply_changes(tree_, record->changes);
        for (const auto& [path, file] : record->changes) {
            if (file && file->type == FileType::kFile && file->sha256.empty() &&
                !file->blob.empty() && !file->too_large) {
                git_blobs_.insert(file->blob);
            }
        }
        next_seq_ = std::max(next_seq_, record->seq + 1);
        records_.push_back(std::move(record).value());
    }
    return {};
}

uint64_t Checkpoints::used_bytes() const {
    const std::lock_guard lock(mu_);
    return used_locked();
}

uint64_t Checkpoints::used_locked() const {
    uint64_t total = log_bytes_;
    for (const auto& [id, size] : object_sizes_) {
        total += size;
    }
    return total;
}

workspace::SnapshotRequest Checkpoints::reset_request_locked(CheckpointTree& seeded) const {
    workspace::SnapshotRequest request{.reset = true,
                                       .max_file_bytes = options_.max_file_bytes,
                                       .max_reply_bytes = workspace::kMaxSnapshotReplyBytes};
    seeded.clear();
    auto index = read_git_index(workspace_);
    if (!index) {
        return request;  // no repository (or no index): every file is shipped once
    }
    for (const GitIndexEntry& e : index->entries) {
        if (request.seed.size() >= workspace::kMaxSnapshotSeed) {
            break;
        }
        const bool file = e.mode == 0100644 || e.mode == 0100755;
        const bool link = e.mode == 0120000;
        // git's racily clean entries (as new as the index) are compared by their bytes.
        if (e.stage != 0 || (!file && !link) || e.mtime_ns >= index->mtime_ns ||
            !is_valid_utf8(e.path) || e.path.starts_with(".git/") ||
            e.path.find("/.git/") != std::string::npos) {
            continue;
        }
        if (auto checked = workspace::check_relative_path(e.path); !checked || e.path.empty()) {
            continue;
        }
        const uint32_t mode = link ? 0777 : (e.mode & 0777);
        request.seed.push_back(
            workspace::SnapshotSeed{.path = e.path,
                                    .type = link ? FileType::kSymlink : FileType::kFile,
                                    .mode = link ? 0644 : mode,
                                    .size = e.size,
                                    .mtime_ns = e.mtime_ns,
                                    .ctime_ns = e.ctime_ns,
                                    .ino = e.ino});
        seeded[e.path] = CheckpointFile{.type = link ? FileType::kSymlink : FileType::kFile,
                                        .mode = mode,
                                        .size = e.size,
                                        .blob = e.blob,
                                        .seeded = true};
    }
    // A path both a file and beneath another's name (a type change staged) would confuse
    // the seed: the walk reports what is really there.
    std::sort(request.seed.begin(), request.seed.end(),
              [](const auto& a, const auto& b) { return a.path < b.path; });
    return request;
}

void Checkpoints::remember_git_blobs_locked(const CheckpointTree& tree) {
    for (const auto& [path, file] : tree) {
        if (file.type == FileType::kFile && file.sha256.empty() && !file.blob.empty() &&
            !file.too_large) {
            git_blobs_.insert(file.blob);
        }
    }
}

Status Checkpoints::walk_locked(workspace::Workspace& ws) {
    CheckpointTree seeded;
    workspace::SnapshotRequest request{.max_file_bytes = options_.max_file_bytes,
                                       .max_reply_bytes = workspace::kMaxSnapshotReplyBytes};
    if (!in_sync_) {
        request = reset_request_locked(seeded);
        synced_ = seeded;
        remember_git_blobs_locked(seeded);
    }
    for (size_t round = 0; round < kMaxWalkRounds; ++round) {
        auto snap = ws.snapshot(request);
        if (!snap && snap.error().code == Errc::kFailedPrecondition && !request.reset) {
            // A worker started since the last walk: it holds no index.
            request = reset_request_locked(seeded);
            synced_ = seeded;
            remember_git_blobs_locked(seeded);
            continue;
        }
        if (!snap) {
            in_sync_ = false;
            return std::move(snap).error().wrap("walk the workspace");
        }
        if (auto applied = apply_snapshot_locked(*snap); !applied) {
            in_sync_ = false;  // the worker's index went on without us: reset next time
            return std::move(applied).error().wrap("record the workspace's changes");
        }
        if (!snap->more) {
            in_sync_ = true;
            return {};
        }
        request.reset = false;
        request.seed.clear();
    }
    in_sync_ = false;
    return Error{Errc::kInternal, "walk the workspace: the worker never finished its report"};
}

Status Checkpoints::apply_snapshot_locked(const workspace::Snapshot& snap) {
    for (const std::string& path : snap.removed) {
        synced_.erase(path);
    }
    for (const workspace::SnapshotEntry& entry : snap.changed) {
        ASSIGN_OR_RETURN(CheckpointFile file, store_locked(entry));
        synced_[entry.path] = std::move(file);
    }
    if (synced_.size() > kMaxTrackedPaths) {
        return Error{Errc::kResourceExhausted,
                     fmt::format("the workspace holds more than {} paths in the checkpoints' "
                                 "scope: exclude generated trees in .stockadeignore, or run with "
                                 "--checkpoints off",
                                 kMaxTrackedPaths)};
    }
    return {};
}

Result<CheckpointFile> Checkpoints::store_locked(const workspace::SnapshotEntry& e) {
    CheckpointFile f{.type = e.type, .mode = e.mode, .size = e.size};
    switch (e.type) {
        case FileType::kDirectory:
            f.size = 0;
            return f;
        case FileType::kSymlink:
            f.target = e.target;
            f.blob = git_blob_id(e.target);
            f.mode = 0777;
            return f;
        case FileType::kFile:
        case FileType::kOther:
            break;
    }
    auto stat_only = [&] {
        f.too_large = true;
        f.mtime_ns = e.mtime_ns;
        f.ino = e.ino;
        return f;
    };
    if (e.too_large) {
        return stat_only();
    }
    f.blob = git_blob_id(e.bytes);
    // Bytes git holds (a blob of its index, now or at an earlier checkpoint): its id is enough.
    if (git_blobs_.contains(f.blob)) {
        return f;
    }
    // The same bytes as the path held: whatever recorded them then (an object, or git's blob
    // id) serves again, and nothing is stored.
    if (auto was = synced_.find(e.path); was != synced_.end() &&
                                         was->second.type == FileType::kFile &&
                                         was->second.blob == f.blob && !was->second.too_large) {
        f.sha256 = was->second.sha256;
        return f;
    }
    f.sha256 = sha256_hex(e.bytes);
    if (object_sizes_.contains(f.sha256)) {
        return f;
    }
    const uint64_t need = e.bytes.size();
    // Room first: the oldest checkpoints go before this one is cut short, as long as some
    // object is held by them alone (what the workspace holds now is never dropped).
    while (used_locked() + need > options_.cap_bytes && records_.size() > 1 &&
           held_by_history_alone_locked()) {
        if (!drop_oldest_locked()) {
            break;
        }
    }
    bool pool_ok = true;
    if (options_.pool && need > 0) {
        const uint64_t got = options_.pool->take(need);
        if (got < need) {
            options_.pool->return_unused(got);
            pool_ok = false;
        } else {
            pool_held_ += got;
        }
    }
    if (!pool_ok || used_locked() + need > options_.cap_bytes) {
        SPDLOG_LOGGER_WARN(log::get("runner"),
                           "checkpoints: quota full, \"{}\" ({} bytes) recorded without its "
                           "contents",
                           e.path, need);
        return stat_only();
    }
    if (auto written = write_file_at(objects_.get(), f.sha256, e.bytes, false); !written) {
        if (options_.pool && need > 0) {
            options_.pool->return_unused(need);
            pool_held_ -= need;
        }
        return std::move(written).error().wrap("store a checkpoint object");
    }
    object_sizes_[f.sha256] = need;
    return f;
}

bool Checkpoints::held_by_history_alone_locked() const {
    std::set<std::string> now;
    for (const auto& [path, file] : synced_) {
        if (!file.sha256.empty()) {
            now.insert(file.sha256);
        }
    }
    return std::any_of(object_sizes_.begin(), object_sizes_.end(),
                       [&](const auto& object) { return !now.contains(object.first); });
}

bool Checkpoints::drop_oldest_locked() {
    if (records_.size() < 2) {
        return false;
    }
    CheckpointRecord merged = std::move(records_[1]);
    CheckpointTree base;
    apply_changes(base, records_[0].changes);
    apply_changes(base, merged.changes);
    const CheckpointRecord dropped{.seq = records_[0].seq,
                                   .call = records_[0].call,
                                   .kind = records_[0].kind,
                                   .ts = records_[0].ts,
                                   .changes = {}};
    merged.changes.clear();
    for (auto& [path, file] : base) {
        merged.changes.emplace(path, std::move(file));
    }
    // The state before the merged record's call is gone with the record before it.
    merged.dropped = std::move(records_[0].dropped);
    merged.dropped.push_back(merged.call);
    records_.erase(records_.begin());
    records_[0] = std::move(merged);
    if (events_ != nullptr) {
        events_->record("CheckpointDropped",
                        {{"seq", dropped.seq},
                         {"call", dropped.call},
                         {"kind", kind_name(dropped.kind)},
                         {"reason", "the checkpoint quota is full: the oldest goes first"},
                         {"base_now", records_[0].seq}},
                        true);
    }
    if (auto rewritten = rewrite_log_locked(); !rewritten) {
        SPDLOG_LOGGER_WARN(log::get("runner"), "checkpoints: {}", rewritten.error().message);
    }
    collect_garbage_locked();
    return true;
}

void Checkpoints::collect_garbage_locked() {
    std::set<std::string> held;
    for (const CheckpointRecord& r : records_) {
        for (const auto& [path, file] : r.changes) {
            if (file && !file->sha256.empty()) {
                held.insert(file->sha256);
            }
        }
    }
    for (const auto& [path, file] : synced_) {
        if (!file.sha256.empty()) {
            held.insert(file.sha256);
        }
    }
    for (auto it = object_sizes_.begin(); it != object_sizes_.end();) {
        if (held.contains(it->first)) {
            ++it;
            continue;
        }
        if (::unlinkat(objects_.get(), it->first.c_str(), 0) == 0 || errno == ENOENT) {
            if (options_.pool) {
                const uint64_t back = std::min(pool_held_, it->second);
                options_.pool->give_back(back);
                pool_held_ -= back;
            }
            it = object_sizes_.erase(it);
        } else {
            ++it;
        }
    }
}

Status Checkpoints::rewrite_log_locked() {
    std::string text;
    for (const CheckpointRecord& r : records_) {
        text += record_to_json(r).dump(-1, ' ', false, json::error_handler_t::replace);
        text += '\n';
    }
    RETURN_IF_ERROR(write_file_at(dir_.get(), "log.jsonl", text, true));
    log_bytes_ = text.size();
    return {};
}

void Checkpoints::record_locked(const std::string& call, CheckpointKind kind, double walk_ms) {
    CheckpointRecord record{.seq = next_seq_++,
                            .call = call,
                            .kind = records_.empty() ? CheckpointKind::kBaseline : kind,
                            .ts = utc_timestamp(),
                            .changes = diff_trees(tree_, synced_)};
    std::vector<std::string> added;
    std::vector<std::string> changed;
    std::vector<std::string> removed;
    for (const auto& [path, file] : record.changes) {
        std::vector<std::string>& into = !file ? removed : tree_.contains(path) ? changed : added;
        into.push_back(path);
    }
    const std::string line =
        record_to_json(record).dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    const int fd = retry_eintr([&] {
        return ::openat(dir_.get(), "log.jsonl",
                        O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    });
    if (fd < 0) {
        SPDLOG_LOGGER_WARN(log::get("runner"), "checkpoints: open log.jsonl: {}",
                           errno_string(errno));
    } else {
        const UniqueFd owned(fd);
        if (auto written = write_all(fd, line); !written) {
            SPDLOG_LOGGER_WARN(log::get("runner"), "checkpoints: {}", written.error().message);
        }
        if (!record.changes.empty()) {
            (void)::fdatasync(fd);
        }
    }
    log_bytes_ += line.size();
    apply_changes(tree_, record.changes);
    if (events_ != nullptr) {
        auto first = [](std::vector<std::string> v) {
            if (v.size() > kMaxListed) {
                v.resize(kMaxListed);
            }
            return v;
        };
        events_->record(
            "Checkpoint",
            {{"call", call},
             {"seq", record.seq},
             {"kind", kind_name(record.kind)},
             {"added", added.size()},
             {"changed", changed.size()},
             {"removed", removed.size()},
             {"files",
              {{"added", first(added)}, {"changed", first(changed)}, {"removed", first(removed)}}},
             {"store_bytes", used_locked()},
             {"walk_ms", std::round(walk_ms * 1000) / 1000}},
            !record.changes.empty());
    }
    records_.push_back(std::move(record));
}

void Checkpoints::after_call_async(workspace::Workspace& ws, const std::string& call) {
    if (!options_.enabled) {
        return;
    }
    std::lock_guard lock(queue_mu_);
    if (!thread_.joinable()) {
        thread_ = std::jthread([this](std::stop_token stop) { run_queue(std::move(stop)); });
    }
    queue_.emplace_back(&ws, call);
    queue_cv_.notify_all();
}

void Checkpoints::run_queue(std::stop_token stop) {
    std::unique_lock lock(queue_mu_);
    for (;;) {
        queue_cv_.wait(lock, stop, [&] { return !queue_.empty(); });
        if (queue_.empty()) {
            return;  // stopping, and nothing left
        }
        auto [ws, call] = std::move(queue_.front());
        queue_.pop_front();
        busy_ = true;
        lock.unlock();
        after_call(*ws, call);
        lock.lock();
        busy_ = false;
        queue_cv_.notify_all();
    }
}

void Checkpoints::drain() {
    std::unique_lock lock(queue_mu_);
    queue_cv_.wait(lock, [&] { return queue_.empty() && !busy_; });
}

void Checkpoints::before_call(workspace::Workspace& ws, const std::string& call) {
    if (!options_.enabled) {
        return;
    }
    drain();
    const std::lock_guard lock(mu_);
    if (!records_.empty() && in_sync_) {
        return;
    }
    if (auto walked = walk_locked(ws); !walked) {
        SPDLOG_LOGGER_WARN(log::get("runner"), "checkpoint before call={}: {}", call,
                           walked.error().message);
        return;
    }
    // The baseline; or, on a session resumed or a worker replaced, what changed meanwhile.
    if (records_.empty() || !diff_trees(tree_, synced_).empty()) {
        record_locked(call, CheckpointKind::kBaseline);
    }
}

void Checkpoints::after_call(workspace::Workspace& ws, const std::string& call) {
    if (!options_.enabled) {
        return;
    }
    const std::lock_guard lock(mu_);
    const auto started = std::chrono::steady_clock::now();
    if (auto walked = walk_locked(ws); !walked) {
        SPDLOG_LOGGER_WARN(log::get("runner"), "checkpoint after call={}: {}", call,
                           walked.error().message);
        if (events_ != nullptr) {
            events_->record("CheckpointFailed", {{"call", call}, {"error", walked.error().message}},
                            false);
        }
        return;
    }
    record_locked(
        call, CheckpointKind::kCall,
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
            .count());
}

std::vector<CheckpointSummary> Checkpoints::list() const {
    const std::lock_guard lock(mu_);
    std::vector<CheckpointSummary> out;
    CheckpointTree tree;
    for (const CheckpointRecord& r : records_) {
        CheckpointSummary s{.seq = r.seq, .call = r.call, .kind = r.kind};
        for (const auto& [path, file] : r.changes) {
            (!file ? s.removed : tree.contains(path) ? s.changed : s.added)++;
        }
        apply_changes(tree, r.changes);
        out.push_back(std::move(s));
    }
    return out;
}

Result<std::string> Checkpoints::read_object_locked(const std::string& sha256) const {
    ASSIGN_OR_RETURN(std::string bytes, read_file_at(objects_.get(), sha256, uint64_t{1} << 32));
    if (sha256_hex(bytes) != sha256) {
        return Error{Errc::kInternal,
                     fmt::format("checkpoint object {} does not hold what it was stored with",
                                 sha256.substr(0, 12))};
    }
    return bytes;
}

namespace {

// The blobs `ids` from the repository in the sandbox: `git cat-file --batch`, run by the worker
// (the supervisor never reads .git's objects). Every blob is checked against its id.
Result<std::map<std::string, std::string>> fetch_blobs(workspace::Workspace& ws,
                                                       const std::vector<std::string>& ids,
                                                       uint64_t max_total) {
    std::map<std::string, std::string> out;
    if (ids.empty()) {
        return out;
    }
    workspace::SpawnRequest request{.argv = {"git", "-c", "safe.directory=*", "-c",
                                             "core.fsmonitor=false", "cat-file", "--batch"},
                                    .cwd = "",
                                    .env = {"GIT_OPTIONAL_LOCKS=0"},
                                    .pty = false,
                                    .interactive = true};
    auto spawned = ws.spawn(request);
    if (!spawned) {
        return std::move(spawned).error().wrap(
            "run git cat-file in the sandbox to restore files recorded by their git blob id");
    }
    std::string input;
    for (const std::string& id : ids) {
        input += id + "\n";
    }
    // Written from a thread of its own and then closed (git reads to EOF), while this one
    // reads: a blob larger than the pipe would otherwise stall both sides.
    std::thread writer([in = std::move(spawned->input), &input]() mutable {
        (void)write_all(in.get(), input);
        in.reset();
    });
    std::string got;
    const auto deadline = std::chrono::steady_clock::now() + kGitTimeout;
    std::array<char, 65536> buf{};
    Status read_status;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            read_status = Error{Errc::kDeadlineExceeded, "git cat-file took too long"};
            break;
        }
        pollfd p{spawned->output.get(), POLLIN, 0};
        const int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
        if (ready < 0 && errno != EINTR) {
            read_status = errno_error("poll git cat-file", errno);
            break;
        }
        if (ready <= 0) {
            continue;
        }
        const ssize_t n = ::read(spawned->output.get(), buf.data(), buf.size());
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        got.append(buf.data(), static_cast<size_t>(n));
        if (got.size() > max_total) {
            read_status = Error{Errc::kResourceExhausted, "git cat-file sent more than asked"};
            break;
        }
    }
    if (!read_status) {
        (void)ws.signal_group({.epoch = spawned->epoch, .pgid = spawned->pid}, SIGKILL);
    }
    writer.join();
    RETURN_IF_ERROR(read_status);
    // "<id> blob <size>\n<bytes>\n" per id, or "<id> missing\n".
    size_t at = 0;
    for (const std::string& id : ids) {
        const size_t nl = got.find('\n', at);
        if (nl == std::string::npos) {
            return Error{Errc::kFailedPrecondition,
                         fmt::format("git cat-file said: {}", sanitize_utf8(got.substr(at, 200)))};
        }
        const std::string line = got.substr(at, nl - at);
        at = nl + 1;
        const std::string prefix = id + " blob ";
        if (!line.starts_with(prefix)) {
            return Error{Errc::kNotFound,
                         fmt::format("git cannot give blob {} back (it said \"{}\"): was the "
                                     "repository's history rewritten or garbage-collected?",
                                     id, sanitize_utf8(line.substr(0, 200)))};
        }
        uint64_t size = 0;
        const std::string digits = line.substr(prefix.size());
        if (digits.empty() || digits.size() > 19 ||
            !std::all_of(digits.begin(), digits.end(),
                         [](char c) { return c >= '0' && c <= '9'; })) {
            return Error{Errc::kInvalidArgument, "git cat-file sent a malformed header"};
        }
        size = std::stoull(digits);
        if (size > got.size() - at || got.size() - at - size < 1) {
            return Error{Errc::kInvalidArgument, "git cat-file's output was cut short"};
        }
        std::string bytes = got.substr(at, static_cast<size_t>(size));
        at += static_cast<size_t>(size) + 1;
        if (git_blob_id(bytes) != id) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("git cat-file sent bytes that are not blob {}", id)};
        }
        out.emplace(id, std::move(bytes));
    }
    return out;
}

}  // namespace

Result<RewindReport> Checkpoints::rewind(
    workspace::Workspace& ws, const RewindRequest& request,
    const std::function<void(const std::string&)>& on_restored) {
    drain();
    const std::lock_guard lock(mu_);
    const auto started = std::chrono::steady_clock::now();
    // `at`: the records before it make the target.
    size_t at = records_.size();
    size_t matches = 0;
    std::vector<std::string> seqs;
    if (request.to.starts_with("@")) {
        // A checkpoint by its number: the workspace as that checkpoint recorded it.
        const std::string digits = request.to.substr(1);
        for (size_t i = 0; i < records_.size(); ++i) {
            if (!digits.empty() && digits.size() < 20 &&
                fmt::format("{}", records_[i].seq) == digits) {
                at = i + 1;
                matches = 1;
            }
        }
        if (matches == 0) {
            return Error{Errc::kNotFound,
                         fmt::format("no checkpoint {} in this session (stockade log lists them; "
                                     "the oldest may have been dropped by the quota)",
                                     request.to)};
        }
    } else {
        for (size_t i = 0; i < records_.size(); ++i) {
            if (records_[i].call == request.to && records_[i].kind == CheckpointKind::kCall) {
                if (matches++ == 0) {
                    at = i;
                }
                seqs.push_back(fmt::format("@{}", i > 0 ? records_[i - 1].seq : records_[i].seq));
            }
        }
    }
    if (matches > 1) {
        return Error{Errc::kNotFound,
                     fmt::format("call {} names {} calls of this session (it was resumed, and "
                                 "call ids started over); name the checkpoint to go back to "
                                 "instead: --to {}",
                                 request.to, matches, fmt::join(seqs, " or --to "))};
    }
    const bool dropped =
        at == 0 || (matches == 0 && !records_.empty() &&
                    std::find(records_[0].dropped.begin(), records_[0].dropped.end(), request.to) !=
                        records_[0].dropped.end());
    if (matches == 0 || at == 0) {
        std::vector<std::string> calls;
        for (size_t i = 1; i < records_.size(); ++i) {
            if (records_[i].kind == CheckpointKind::kCall) {
                calls.push_back(records_[i].call);
            }
        }
        if (calls.size() > 20) {
            calls.erase(calls.begin(), calls.end() - 20);
        }
        return Error{
            Errc::kNotFound,
            dropped ? fmt::format("the checkpoint before call {} was dropped to keep within the "
                                  "checkpoint quota (see CheckpointDropped in stockade log); "
                                  "rewind to a later call: {}",
                                  request.to, fmt::join(calls, ", "))
                    : fmt::format(
                          "no checkpoint follows call {} (only calls that may change the "
                          "workspace have one); rewind to one of: {}",
                          request.to,
                          calls.empty() ? "(none)" : fmt::format("{}", fmt::join(calls, ", ")))};
    }
    CheckpointTree target;
    for (size_t i = 0; i < at; ++i) {
        apply_changes(target, records_[i].changes);
    }
    RETURN_IF_ERROR(walk_locked(ws));
    const RewindPlan plan = plan_rewind(target, tree_, synced_, request.force);
    RewindReport report{.to = request.to,
                        .checkpoint = records_[at - 1].seq,  // at >= 1 here
                        .dry_run = request.dry_run,
                        .conflicts = plan.conflicts,
                        .unrewindable = plan.unrewindable};
    if (request.dry_run) {
        report.removed = plan.remove;
        for (const auto& put : plan.put) {
            report.restored.push_back(put.path);
        }
        return report;
    }
    // Contents: the store's objects, and git's blobs for what was recorded by id only.
    std::vector<std::string> blob_ids;
    uint64_t blob_bytes = 0;
    for (const auto& put : plan.put) {
        const bool needs_blob = (put.file.type == FileType::kFile && put.file.sha256.empty()) ||
                                (put.file.type == FileType::kSymlink && put.file.target.empty());
        if (needs_blob) {
            blob_ids.push_back(put.file.blob);
            blob_bytes += put.file.size + 128;
        }
    }
    std::sort(blob_ids.begin(), blob_ids.end());
    blob_ids.erase(std::unique(blob_ids.begin(), blob_ids.end()), blob_ids.end());
    std::map<std::string, std::string> blobs;
    std::string blob_error;  // why git could not give them back: those files fail, not all
    if (!blob_ids.empty()) {
        auto fetched = fetch_blobs(ws, blob_ids, blob_bytes + (uint64_t{1} << 20));
        if (fetched) {
            blobs = std::move(fetched).value();
        } else {
            blob_error = fetched.error().message;
        }
    }
    auto blob_of = [&](const RewindPlan::Put& put) -> const std::string* {
        auto it = blobs.find(put.file.blob);
        if (it == blobs.end()) {
            report.failed.push_back(fmt::format(
                "{}: recorded by its git blob id {}, which could not be read back: {}", put.path,
                put.file.blob.substr(0, 12), blob_error.empty() ? "not found" : blob_error));
            return nullptr;
        }
        return &it->second;
    };
    std::vector<std::pair<std::string, workspace::RestoreAction>> actions;
    for (const std::string& path : plan.remove) {
        actions.push_back({path, {.kind = workspace::RestoreKind::kRemove, .path = path}});
    }
    for (const auto& put : plan.put) {
        workspace::RestoreAction a{.path = put.path, .mode = put.file.mode};
        switch (put.file.type) {
            case FileType::kDirectory:
                a.kind = workspace::RestoreKind::kDirectory;
                break;
            case FileType::kSymlink:
                a.kind = workspace::RestoreKind::kSymlink;
                if (put.file.target.empty()) {
                    const std::string* link = blob_of(put);
                    if (link == nullptr || link->empty()) {
                        continue;
                    }
                    a.data = *link;
                } else {
                    a.data = put.file.target;
                }
                break;
            case FileType::kFile:
            case FileType::kOther: {
                a.kind = workspace::RestoreKind::kFile;
                if (put.file.sha256.empty()) {
                    const std::string* bytes = blob_of(put);
                    if (bytes == nullptr) {
                        continue;
                    }
                    a.data = *bytes;
                } else {
                    auto bytes = read_object_locked(put.file.sha256);
                    if (!bytes) {
                        report.failed.push_back(
                            fmt::format("{}: {}", put.path, bytes.error().message));
                        continue;
                    }
                    a.data = std::move(bytes).value();
                }
                break;
            }
        }
        actions.push_back({put.path, std::move(a)});
    }
    // In batches the channel carries.
    size_t next = 0;
    while (next < actions.size()) {
        workspace::RestoreRequest batch;
        std::vector<std::string> paths;
        uint64_t bytes = 0;
        while (next < actions.size() && batch.actions.size() < workspace::kMaxRestoreActions &&
               (batch.actions.empty() ||
                bytes + actions[next].second.data.size() <= kRestoreBatchBytes)) {
            bytes += actions[next].second.data.size();
            paths.push_back(actions[next].first);
            batch.actions.push_back(std::move(actions[next].second));
            ++next;
        }
        auto done = ws.restore(batch);
        if (!done) {
            in_sync_ = false;
            return std::move(done).error().wrap("restore the workspace");
        }
        std::set<uint64_t> failed;
        for (const auto& f : done->failed) {
            failed.insert(f.index);
            report.failed.push_back(fmt::format("{}: {}", paths[f.index], f.message));
        }
        for (size_t i = 0; i < batch.actions.size(); ++i) {
            if (failed.contains(i)) {
                continue;
            }
            // What the worker wrote is what the workspace holds now. The worker's index still
            // has the old stat data: its next walk ships these files again, and they are found
            // to be what is recorded here.
            if (batch.actions[i].kind == workspace::RestoreKind::kRemove) {
                synced_.erase(paths[i]);
                report.removed.push_back(paths[i]);
            } else {
                synced_[paths[i]] = target.at(paths[i]);
                report.restored.push_back(paths[i]);
            }
            if (on_restored) {
                on_restored(paths[i]);
            }
        }
    }
    if (events_ != nullptr) {
        json fields = report.to_json();
        fields["force"] = request.force;
        fields["duration_ms"] = std::round(std::chrono::duration<double, std::milli>(
                                               std::chrono::steady_clock::now() - started)
                                               .count() *
                                           1000) /
                                1000;
        events_->record("Rewind", std::move(fields), true);
    }
    // What the workspace holds now, recorded: a later rewind starts from it.
    record_locked(fmt::format("rewind-{}", request.to), CheckpointKind::kRewind);
    return report;
}

}  // namespace stockade::runner
