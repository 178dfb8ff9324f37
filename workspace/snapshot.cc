#include "workspace/snapshot.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "common/syscall.h"
#include "common/unique_fd.h"
#include "common/utf8.h"
#include "workspace/channel.h"
#include "workspace/local_internal.h"
#include "workspace/local_workspace.h"
#include "workspace/open_beneath.h"

namespace stockade::workspace {

namespace {

using nlohmann::json;

Error malformed(std::string message) {
    return Error{Errc::kInvalidArgument, std::move(message)};
}

// ---- little-endian records --------------------------------------------------------------

void put_u64(std::string& out, uint64_t v) {
    for (unsigned shift = 0; shift < 64; shift += 8) {
        out.push_back(static_cast<char>((v >> shift) & 0xFFU));
    }
}

class Reader {
public:
    explicit Reader(std::string_view bytes) : bytes_(bytes) {}
    bool u64(uint64_t& v) {
        if (bytes_.size() - at_ < 8) {
            return false;
        }
        v = 0;
        for (unsigned i = 0; i < 8; ++i) {
            v |= static_cast<uint64_t>(static_cast<unsigned char>(bytes_[at_ + i])) << (8 * i);
        }
        at_ += 8;
        return true;
    }
    bool take(size_t n, std::string& out) {
        if (bytes_.size() - at_ < n) {
            return false;
        }
        out.assign(bytes_.substr(at_, n));
        at_ += n;
        return true;
    }
    [[nodiscard]] bool done() const { return at_ == bytes_.size(); }

private:
    std::string_view bytes_;
    size_t at_ = 0;
};

// ---- JSON fields ----------------------------------------------------------------------------

Result<uint64_t> u64_of(const json& v, std::string_view what) {
    if (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() >= 0) {
        return static_cast<uint64_t>(v.get<int64_t>());
    }
    if (!v.is_number_unsigned()) {
        return malformed(fmt::format("{} must be an unsigned integer", what));
    }
    return v.get<uint64_t>();
}

Result<int64_t> i64_of(const json& v, std::string_view what) {
    if (v.is_number_unsigned()) {
        const auto u = v.get<uint64_t>();
        if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
            return malformed(fmt::format("{} is out of range", what));
        }
        return static_cast<int64_t>(u);
    }
    if (!v.is_number_integer()) {
        return malformed(fmt::format("{} must be an integer", what));
    }
    return v.get<int64_t>();
}

Result<const json*> field(const json& object, const char* key, std::string_view where) {
    if (!object.is_object()) {
        return malformed(fmt::format("{} is not an object", where));
    }
    auto it = object.find(key);
    if (it == object.end()) {
        return malformed(fmt::format("{}: field \"{}\" is missing", where, key));
    }
    return &*it;
}

Result<uint64_t> u64_field(const json& object, const char* key, std::string_view where) {
    ASSIGN_OR_RETURN(const json* v, field(object, key, where));
    return u64_of(*v, fmt::format("{}: field \"{}\"", where, key));
}

Result<bool> bool_field(const json& object, const char* key, std::string_view where) {
    ASSIGN_OR_RETURN(const json* v, field(object, key, where));
    if (!v->is_boolean()) {
        return malformed(fmt::format("{}: field \"{}\" must be a boolean", where, key));
    }
    return v->get<bool>();
}

Result<const json*> array_field(const json& object, const char* key, std::string_view where,
                                size_t max) {
    ASSIGN_OR_RETURN(const json* v, field(object, key, where));
    if (!v->is_array()) {
        return malformed(fmt::format("{}: field \"{}\" must be an array", where, key));
    }
    if (v->size() > max) {
        return malformed(fmt::format("{}: field \"{}\" holds {} entries, above the limit {}", where,
                                     key, v->size(), max));
    }
    return v;
}

Result<std::string> string_of(const json& v, std::string_view what) {
    if (!v.is_string()) {
        return malformed(fmt::format("{} must be a string", what));
    }
    return v.get<std::string>();
}

// A path the walk may report or a restore may touch: normalised, relative, not the root, no
// `.git` component.
Status check_scope_path(const std::string& path) {
    if (path.empty()) {
        return malformed("the workspace root itself is no entry");
    }
    RETURN_IF_ERROR(check_relative_path(path));
    size_t start = 0;
    while (start <= path.size()) {
        size_t slash = path.find('/', start);
        if (slash == std::string::npos) {
            slash = path.size();
        }
        if (std::string_view(path).substr(start, slash - start) == ".git") {
            return malformed(fmt::format("path \"{}\" is inside .git", path.substr(0, 256)));
        }
        start = slash + 1;
    }
    return {};
}

std::optional<FileType> type_from(std::string_view name) {
    for (FileType t : {FileType::kFile, FileType::kDirectory, FileType::kSymlink}) {
        if (name == channel::file_type_name(t)) {
            return t;
        }
    }
    return std::nullopt;
}

std::string_view kind_name(RestoreKind kind) {
    switch (kind) {
        case RestoreKind::kRemove:
            return "remove";
        case RestoreKind::kFile:
            return "file";
        case RestoreKind::kSymlink:
            return "symlink";
        case RestoreKind::kDirectory:
            return "directory";
    }
    return "remove";
}

std::optional<RestoreKind> kind_from(std::string_view name) {
    for (RestoreKind k : {RestoreKind::kRemove, RestoreKind::kFile, RestoreKind::kSymlink,
                          RestoreKind::kDirectory}) {
        if (name == kind_name(k)) {
            return k;
        }
    }
    return std::nullopt;
}

template <class T, class Key>
Status check_sorted_unique(const std::vector<T>& items, Key key, std::string_view what) {
    for (size_t i = 1; i < items.size(); ++i) {
        if (!(key(items[i - 1]) < key(items[i]))) {
            return malformed(fmt::format("{} are not sorted and unique", what));
        }
    }
    return {};
}

}  // namespace

// ---- Ignore rules ---------------------------------------------------------------------------

namespace {

bool has_glob(std::string_view s) {
    return s.find_first_of("*?[\\") != std::string_view::npos;
}

// One character class at p (p[0] == '['): whether c matches, and where the class ends.
// nullopt: not a class (no closing bracket), so '[' is a literal.
std::optional<std::pair<bool, size_t>> match_class(std::string_view p, char c) {
    size_t i = 1;
    bool negate = false;
    if (i < p.size() && (p[i] == '!' || p[i] == '^')) {
        negate = true;
        ++i;
    }
    bool matched = false;
    bool first = true;
    while (i < p.size() && (p[i] != ']' || first)) {
        first = false;
        char lo = p[i];
        if (lo == '\\' && i + 1 < p.size()) {
            lo = p[++i];
        }
        char hi = lo;
        if (i + 2 < p.size() && p[i + 1] == '-' && p[i + 2] != ']') {
            hi = p[i + 2];
            if (hi == '\\' && i + 3 < p.size()) {
                hi = p[i + 3];
                ++i;
            }
            i += 2;
        }
        if (static_cast<unsigned char>(c) >= static_cast<unsigned char>(lo) &&
            static_cast<unsigned char>(c) <= static_cast<unsigned char>(hi)) {
            matched = true;
        }
        ++i;
    }
    if (i >= p.size()) {
        return std::nullopt;
    }
    return std::pair{matched != negate, i + 1};
}

bool glob_at(std::string_view p, std::string_view t, int depth) {
    if (depth > 64) {
        return false;  // a pattern of many stars: give up rather than recurse without end
    }
    size_t pi = 0;
    size_t ti = 0;
    while (pi < p.size()) {
        const char c = p[pi];
        if (c == '*') {
            const bool double_star = pi + 1 < p.size() && p[pi + 1] == '*' &&
                                     (pi == 0 || p[pi - 1] == '/') &&
                                     (pi + 2 == p.size() || p[pi + 2] == '/');
            if (double_star) {
                if (pi + 2 == p.size()) {
                    return true;  // "a/**": everything beneath
                }
                // "**/rest": rest at the start or after any '/'.
                const std::string_view rest = p.substr(pi + 3);
                for (size_t i = ti; i <= t.size(); ++i) {
                    if ((i == ti || t[i - 1] == '/') && glob_at(rest, t.substr(i), depth + 1)) {
                        return true;
                    }
                }
                return false;
            }
            while (pi < p.size() && p[pi] == '*') {
                ++pi;
            }
            for (size_t i = ti; i <= t.size(); ++i) {
                if (glob_at(p.substr(pi), t.substr(i), depth + 1)) {
                    return true;
                }
                if (i < t.size() && t[i] == '/') {
                    break;
                }
            }
            return false;
        }
        if (ti >= t.size()) {
            return false;
        }
        if (c == '?') {
            if (t[ti] == '/') {
                return false;
            }
            ++pi;
            ++ti;
            continue;
        }
        if (c == '[') {
            if (auto cls = match_class(p.substr(pi), t[ti])) {
                if (!cls->first || t[ti] == '/') {
                    return false;
                }
                pi += cls->second;
                ++ti;
                continue;
            }
        }
        char literal = c;
        if (c == '\\' && pi + 1 < p.size()) {
            literal = p[++pi];
        }
        if (t[ti] != literal) {
            return false;
        }
        ++pi;
        ++ti;
    }
    return ti == t.size();
}

}  // namespace

bool ignore_glob_match(std::string_view pattern, std::string_view text) {
    return glob_at(pattern, text, 0);
}

void IgnoreRules::add(std::string_view base, std::string_view text) {
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos) {
            end = text.size();
        }
        std::string_view line = text.substr(start, end - start);
        start = end + 1;
        if (!line.empty() && line.back() == '\r') {
            line.remove_suffix(1);
        }
        while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) {
            line.remove_suffix(1);
        }
        if (line.empty() || line.front() == '#') {
            continue;
        }
        Rule rule;
        rule.base = std::string(base);
        if (line.front() == '!') {
            rule.negate = true;
            line.remove_prefix(1);
        } else if (line.starts_with("\\!") || line.starts_with("\\#")) {
            line.remove_prefix(1);
        }
        if (!line.empty() && line.back() == '/') {
            rule.directory_only = true;
            line.remove_suffix(1);
        }
        if (!line.empty() && line.front() == '/') {
            rule.anchored = true;
            line.remove_prefix(1);
        }
        if (line.empty()) {
            continue;
        }
        if (line.find('/') != std::string_view::npos) {
            rule.anchored = true;
        }
        rule.pattern = std::string(line);
        rule.literal = !has_glob(rule.pattern);
        rules_.push_back(std::move(rule));
    }
}

std::optional<bool> IgnoreRules::match(std::string_view path, bool is_directory) const {
    const size_t slash = path.rfind('/');
    const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
    // Deeper files were added later (the walk adds a directory's files on its way down), so
    // the last matching rule is both the deepest file's and that file's last.
    for (auto it = rules_.rbegin(); it != rules_.rend(); ++it) {
        const Rule& rule = *it;
        if (rule.directory_only && !is_directory) {
            continue;
        }
        std::string_view beneath = path;
        if (!rule.base.empty()) {
            if (path.size() <= rule.base.size() || !path.starts_with(rule.base) ||
                path[rule.base.size()] != '/') {
                continue;
            }
            beneath = path.substr(rule.base.size() + 1);
        }
        bool hit = false;
        if (rule.anchored) {
            hit = rule.literal ? beneath == rule.pattern : ignore_glob_match(rule.pattern, beneath);
        } else {
            hit = rule.literal ? name == rule.pattern : ignore_glob_match(rule.pattern, name);
        }
        if (hit) {
            return !rule.negate;
        }
    }
    return std::nullopt;
}

// ---- Wire -----------------------------------------------------------------------------------

Status validate_snapshot_request(const SnapshotRequest& request) {
    if (!request.reset && !request.seed.empty()) {
        return malformed("snapshot: a seed comes only with a reset");
    }
    if (request.seed.size() > kMaxSnapshotSeed) {
        return malformed(fmt::format("snapshot: a seed of {} entries exceeds the limit {}",
                                     request.seed.size(), kMaxSnapshotSeed));
    }
    if (request.max_reply_bytes > kMaxSnapshotReplyBytes || request.max_reply_bytes == 0) {
        return malformed(fmt::format("snapshot: max_reply_bytes {} is outside 1..{}",
                                     request.max_reply_bytes, kMaxSnapshotReplyBytes));
    }
    if (request.max_file_bytes > request.max_reply_bytes) {
        return malformed(fmt::format("snapshot: max_file_bytes {} exceeds max_reply_bytes {}",
                                     request.max_file_bytes, request.max_reply_bytes));
    }
    if (request.max_entries == 0 || request.max_entries > kMaxSnapshotEntries) {
        return malformed(fmt::format("snapshot: max_entries {} is outside 1..{}",
                                     request.max_entries, kMaxSnapshotEntries));
    }
    for (const SnapshotSeed& s : request.seed) {
        RETURN_IF_ERROR(check_scope_path(s.path));
        if ((s.type != FileType::kFile && s.type != FileType::kSymlink) || s.mode > 07777) {
            return malformed(fmt::format("snapshot: seed entry \"{}\" has an invalid type or mode",
                                         s.path.substr(0, 256)));
        }
    }
    return {};
}

void encode_snapshot_request(const SnapshotRequest& request, json& header, std::string& payload) {
    header["reset"] = request.reset;
    header["max_file_bytes"] = request.max_file_bytes;
    header["max_reply_bytes"] = request.max_reply_bytes;
    header["max_entries"] = request.max_entries;
    header["seed"] = request.seed.size();
    payload.clear();
    for (const SnapshotSeed& s : request.seed) {
        put_u64(payload, s.type == FileType::kSymlink ? 1 : 0);
        put_u64(payload, s.mode);
        put_u64(payload, s.size);
        put_u64(payload, static_cast<uint64_t>(s.mtime_ns));
        put_u64(payload, static_cast<uint64_t>(s.ctime_ns));
        put_u64(payload, s.ino);
        put_u64(payload, s.path.size());
        payload += s.path;
    }
}

Result<SnapshotRequest> decode_snapshot_request(const json& header, std::string_view payload) {
    constexpr std::string_view kWhere = "request \"snapshot\"";
    SnapshotRequest request;
    ASSIGN_OR_RETURN(request.reset, bool_field(header, "reset", kWhere));
    ASSIGN_OR_RETURN(request.max_file_bytes, u64_field(header, "max_file_bytes", kWhere));
    ASSIGN_OR_RETURN(request.max_reply_bytes, u64_field(header, "max_reply_bytes", kWhere));
    ASSIGN_OR_RETURN(request.max_entries, u64_field(header, "max_entries", kWhere));
    ASSIGN_OR_RETURN(uint64_t count, u64_field(header, "seed", kWhere));
    if (count > kMaxSnapshotSeed) {
        return malformed(fmt::format("{}: a seed of {} entries exceeds the limit {}", kWhere, count,
                                     kMaxSnapshotSeed));
    }
    Reader in(payload);
    for (uint64_t i = 0; i < count; ++i) {
        SnapshotSeed s;
        uint64_t type = 0;
        uint64_t mode = 0;
        uint64_t mtime = 0;
        uint64_t ctime = 0;
        uint64_t length = 0;
        if (!in.u64(type) || !in.u64(mode) || !in.u64(s.size) || !in.u64(mtime) || !in.u64(ctime) ||
            !in.u64(s.ino) || !in.u64(length) || length > 4096 ||
            !in.take(static_cast<size_t>(length), s.path) || type > 1 || mode > 07777) {
            return malformed(fmt::format("{}: seed entry {} is truncated or invalid", kWhere, i));
        }
        s.type = type == 1 ? FileType::kSymlink : FileType::kFile;
        s.mode = static_cast<uint32_t>(mode);
        s.mtime_ns = static_cast<int64_t>(mtime);
        s.ctime_ns = static_cast<int64_t>(ctime);
        request.seed.push_back(std::move(s));
    }
    if (!in.done()) {
        return malformed(fmt::format("{}: bytes after the seed", kWhere));
    }
    RETURN_IF_ERROR(validate_snapshot_request(request));
    return request;
}

void encode_snapshot(const Snapshot& snapshot, json& header, std::string& payload) {
    json changed = json::array();
    size_t bytes = 0;
    for (const SnapshotEntry& e : snapshot.changed) {
        bytes += e.bytes.size();
    }
    payload.clear();
    payload.reserve(bytes);
    for (const SnapshotEntry& e : snapshot.changed) {
        changed.push_back(
            json::array({e.path, channel::file_type_name(e.type), e.mode, e.size, e.mtime_ns,
                         e.ctime_ns, e.ino, e.target, e.too_large, e.bytes.size()}));
        payload += e.bytes;
    }
    header["changed"] = std::move(changed);
    header["removed"] = snapshot.removed;
    header["more"] = snapshot.more;
    header["scanned"] = snapshot.scanned;
    header["skipped"] = snapshot.skipped;
}

Result<Snapshot> decode_snapshot(const json& header, std::string payload) {
    constexpr std::string_view kWhere = "reply to \"snapshot\"";
    Snapshot s;
    ASSIGN_OR_RETURN(const json* changed,
                     array_field(header, "changed", kWhere, kMaxSnapshotEntries));
    ASSIGN_OR_RETURN(const json* removed,
                     array_field(header, "removed", kWhere, kMaxSnapshotEntries));
    if (changed->size() + removed->size() > kMaxSnapshotEntries) {
        return malformed(fmt::format("{}: more than {} entries", kWhere, kMaxSnapshotEntries));
    }
    if (payload.size() > kMaxSnapshotReplyBytes) {
        return malformed(fmt::format("{}: {} bytes of contents exceed the limit {}", kWhere,
                                     payload.size(), kMaxSnapshotReplyBytes));
    }
    size_t at = 0;
    for (size_t i = 0; i < changed->size(); ++i) {
        const json& item = (*changed)[i];
        const std::string where = fmt::format("{} changed[{}]", kWhere, i);
        if (!item.is_array() || item.size() != 10) {
            return malformed(fmt::format("{} must be an array of 10 fields", where));
        }
        SnapshotEntry e;
        ASSIGN_OR_RETURN(e.path, string_of(item[0], where + " path"));
        RETURN_IF_ERROR(check_scope_path(e.path));
        ASSIGN_OR_RETURN(std::string type, string_of(item[1], where + " type"));
        const std::optional<FileType> t = type_from(type);
        if (!t) {
            return malformed(fmt::format("{}: unknown type \"{}\"", where, type.substr(0, 32)));
        }
        e.type = *t;
        ASSIGN_OR_RETURN(uint64_t mode, u64_of(item[2], where + " mode"));
        if (mode > 07777) {
            return malformed(fmt::format("{}: mode {:o} is not a permission mode", where, mode));
        }
        e.mode = static_cast<uint32_t>(mode);
        ASSIGN_OR_RETURN(e.size, u64_of(item[3], where + " size"));
        ASSIGN_OR_RETURN(e.mtime_ns, i64_of(item[4], where + " mtime"));
        ASSIGN_OR_RETURN(e.ctime_ns, i64_of(item[5], where + " ctime"));
        ASSIGN_OR_RETURN(e.ino, u64_of(item[6], where + " ino"));
        ASSIGN_OR_RETURN(e.target, string_of(item[7], where + " target"));
        if (!item[8].is_boolean()) {
            return malformed(fmt::format("{}: too_large must be a boolean", where));
        }
        e.too_large = item[8].get<bool>();
        ASSIGN_OR_RETURN(uint64_t length, u64_of(item[9], where + " length"));
        const bool symlink = e.type == FileType::kSymlink;
        if (symlink != !e.target.empty() || e.target.size() > 4096 ||
            e.target.find('\0') != std::string::npos) {
            return malformed(
                fmt::format("{}: a target belongs to a symlink, of 1..4096 bytes", where));
        }
        if (e.too_large && (e.type != FileType::kFile || length != 0)) {
            return malformed(
                fmt::format("{}: only a file is too large, and carries no bytes", where));
        }
        if (e.type == FileType::kFile && !e.too_large && length != e.size) {
            return malformed(
                fmt::format("{}: {} bytes sent for a file of {}", where, length, e.size));
        }
        if (e.type != FileType::kFile && length != 0) {
            return malformed(fmt::format("{}: bytes sent for a {}", where, type));
        }
        if (length > payload.size() - at) {
            return malformed(fmt::format("{}: its bytes run past the payload", where));
        }
        e.bytes = payload.substr(at, static_cast<size_t>(length));
        at += static_cast<size_t>(length);
        s.changed.push_back(std::move(e));
    }
    if (at != payload.size()) {
        return malformed(
            fmt::format("{}: {} bytes of payload belong to no entry", kWhere, payload.size() - at));
    }
    for (size_t i = 0; i < removed->size(); ++i) {
        ASSIGN_OR_RETURN(std::string path,
                         string_of((*removed)[i], fmt::format("{} removed[{}]", kWhere, i)));
        RETURN_IF_ERROR(check_scope_path(path));
        s.removed.push_back(std::move(path));
    }
    RETURN_IF_ERROR(check_sorted_unique(
        s.changed, [](const SnapshotEntry& e) -> const std::string& { return e.path; },
        "snapshot changed entries"));
    RETURN_IF_ERROR(check_sorted_unique(
        s.removed, [](const std::string& p) -> const std::string& { return p; },
        "snapshot removed entries"));
    ASSIGN_OR_RETURN(s.more, bool_field(header, "more", kWhere));
    ASSIGN_OR_RETURN(s.scanned, u64_field(header, "scanned", kWhere));
    ASSIGN_OR_RETURN(s.skipped, u64_field(header, "skipped", kWhere));
    return s;
}

Status validate_restore_request(const RestoreRequest& request) {
    if (request.actions.size() > kMaxRestoreActions) {
        return malformed(fmt::format("restore: {} actions exceed the limit {}",
                                     request.actions.size(), kMaxRestoreActions));
    }
    for (const RestoreAction& a : request.actions) {
        RETURN_IF_ERROR(check_scope_path(a.path));
        if (a.mode > 07777) {
            return malformed(fmt::format("restore: mode {:o} is not a permission mode", a.mode));
        }
        if (a.kind == RestoreKind::kSymlink &&
            (a.data.empty() || a.data.size() > 4096 || a.data.find('\0') != std::string::npos)) {
            return malformed(
                fmt::format("restore: the target of symlink \"{}\" is empty, too long or holds a "
                            "NUL",
                            a.path.substr(0, 256)));
        }
        if ((a.kind == RestoreKind::kRemove || a.kind == RestoreKind::kDirectory) &&
            !a.data.empty()) {
            return malformed("restore: data for an action that takes none");
        }
    }
    return {};
}

void encode_restore_request(const RestoreRequest& request, json& header, std::string& payload) {
    json actions = json::array();
    payload.clear();
    for (const RestoreAction& a : request.actions) {
        actions.push_back(json::array({kind_name(a.kind), a.path, a.mode, a.data.size()}));
        payload += a.data;
    }
    header["actions"] = std::move(actions);
}

Result<RestoreRequest> decode_restore_request(const json& header, std::string_view payload) {
    constexpr std::string_view kWhere = "request \"restore\"";
    RestoreRequest request;
    ASSIGN_OR_RETURN(const json* actions,
                     array_field(header, "actions", kWhere, kMaxRestoreActions));
    size_t at = 0;
    for (size_t i = 0; i < actions->size(); ++i) {
        const json& item = (*actions)[i];
        const std::string where = fmt::format("{} actions[{}]", kWhere, i);
        if (!item.is_array() || item.size() != 4) {
            return malformed(fmt::format("{} must be an array of 4 fields", where));
        }
        RestoreAction a;
        ASSIGN_OR_RETURN(std::string kind, string_of(item[0], where + " kind"));
        const std::optional<RestoreKind> k = kind_from(kind);
        if (!k) {
            return malformed(fmt::format("{}: unknown kind \"{}\"", where, kind.substr(0, 32)));
        }
        a.kind = *k;
        ASSIGN_OR_RETURN(a.path, string_of(item[1], where + " path"));
        ASSIGN_OR_RETURN(uint64_t mode, u64_of(item[2], where + " mode"));
        if (mode > 07777) {
            return malformed(fmt::format("{}: mode is not a permission mode", where));
        }
        a.mode = static_cast<uint32_t>(mode);
        ASSIGN_OR_RETURN(uint64_t length, u64_of(item[3], where + " length"));
        if (length > payload.size() - at) {
            return malformed(fmt::format("{}: its data runs past the payload", where));
        }
        a.data = std::string(payload.substr(at, static_cast<size_t>(length)));
        at += static_cast<size_t>(length);
        request.actions.push_back(std::move(a));
    }
    if (at != payload.size()) {
        return malformed(fmt::format("{}: payload bytes belong to no action", kWhere));
    }
    RETURN_IF_ERROR(validate_restore_request(request));
    return request;
}

void encode_restore_outcome(const RestoreOutcome& outcome, json& header) {
    header["applied"] = outcome.applied;
    json failed = json::array();
    for (const RestoreOutcome::Failure& f : outcome.failed) {
        failed.push_back(json::array({f.index, sanitize_utf8(f.message.substr(0, 1024))}));
    }
    header["failed"] = std::move(failed);
}

Result<RestoreOutcome> decode_restore_outcome(const json& header) {
    constexpr std::string_view kWhere = "reply to \"restore\"";
    RestoreOutcome outcome;
    ASSIGN_OR_RETURN(outcome.applied, u64_field(header, "applied", kWhere));
    ASSIGN_OR_RETURN(const json* failed, array_field(header, "failed", kWhere, kMaxRestoreActions));
    for (size_t i = 0; i < failed->size(); ++i) {
        const json& item = (*failed)[i];
        const std::string where = fmt::format("{} failed[{}]", kWhere, i);
        if (!item.is_array() || item.size() != 2) {
            return malformed(fmt::format("{} must be an array of 2 fields", where));
        }
        RestoreOutcome::Failure f;
        ASSIGN_OR_RETURN(f.index, u64_of(item[0], where + " index"));
        ASSIGN_OR_RETURN(f.message, string_of(item[1], where + " message"));
        if (f.message.size() > 4096) {
            return malformed(fmt::format("{}: message too long", where));
        }
        outcome.failed.push_back(std::move(f));
    }
    RETURN_IF_ERROR(check_sorted_unique(
        outcome.failed, [](const RestoreOutcome::Failure& f) { return f.index; },
        "restore failures"));
    return outcome;
}

// ---- The walk -------------------------------------------------------------------------------

namespace {

int64_t ns_of(const struct timespec& ts) {
    return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// A file's timestamps closer than this to the walk's start may still change within the same
// tick of the filesystem's clock without the stat data showing it: such an entry is reported
// again by the next walk (git's "racily clean" entries).
constexpr int64_t kRacyNs = 100'000'000;

// Reads a symlink's text relative to `dir_fd`; empty on failure.
std::string read_link(int dir_fd, const char* name) {
    std::string target(4096, '\0');
    const ssize_t n = ::readlinkat(dir_fd, name, target.data(), target.size());
    if (n <= 0 || static_cast<size_t>(n) >= target.size()) {
        return {};
    }
    target.resize(static_cast<size_t>(n));
    return target;
}

enum class ReadOutcome : uint8_t { kRead, kTooLarge, kGone };

// Opens `name` beneath `dir_fd` without following a link and reads it whole, when it is still
// the regular file `st` describes and holds at most `cap` bytes.
ReadOutcome read_regular(int dir_fd, const char* name, const struct stat& st, uint64_t cap,
                         std::string& bytes, struct stat& after) {
    const int fd = retry_eintr([&] {
        return ::openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    });
    if (fd < 0) {
        return ReadOutcome::kGone;
    }
    const UniqueFd owned(fd);
    struct stat now {};
    if (::fstat(fd, &now) != 0 || !S_ISREG(now.st_mode) || now.st_ino != st.st_ino ||
        now.st_dev != st.st_dev) {
        return ReadOutcome::kGone;
    }
    if (static_cast<uint64_t>(now.st_size) > cap) {
        after = now;
        return ReadOutcome::kTooLarge;
    }
    bytes.clear();
    bytes.resize(static_cast<size_t>(now.st_size) + 1);
    size_t got = 0;
    for (;;) {
        if (got == bytes.size()) {
            if (bytes.size() > cap) {
                after = now;
                return ReadOutcome::kTooLarge;
            }
            bytes.resize(std::min<size_t>(bytes.size() * 2, static_cast<size_t>(cap) + 1));
        }
        const ssize_t n =
            retry_eintr([&] { return ::read(fd, bytes.data() + got, bytes.size() - got); });
        if (n < 0) {
            return ReadOutcome::kGone;
        }
        if (n == 0) {
            break;
        }
        got += static_cast<size_t>(n);
    }
    if (got > cap) {
        after = now;
        return ReadOutcome::kTooLarge;
    }
    bytes.resize(got);
    if (::fstat(fd, &after) != 0) {
        return ReadOutcome::kGone;
    }
    return ReadOutcome::kRead;
}

// One walk's state.
class Walker {
public:
    Walker(std::unordered_map<std::string, SnapshotIndex::Entry>& index, uint64_t walk,
           const SnapshotRequest& request, int64_t started_ns)
        : index_(index), walk_(walk), request_(request), started_ns_(started_ns) {}

    void dir(int dir_fd, const std::string& prefix, IgnoreRules& rules);
    Snapshot finish();

private:
    void entry(int dir_fd, const std::string& prefix, const char* name, IgnoreRules& rules);
    // The stat data differ from what the index holds (or the entry is new or racy).
    bool changed(const SnapshotIndex::Entry& old, const struct stat& st, FileType type) const;
    void keep_subtree(const std::string& path);
    void read_ignore_file(int dir_fd, const char* name, const std::string& base,
                          IgnoreRules& rules);

    std::unordered_map<std::string, SnapshotIndex::Entry>& index_;
    const uint64_t walk_;
    const SnapshotRequest& request_;
    const int64_t started_ns_;
    Snapshot out_;
    uint64_t reply_bytes_ = 0;
    std::vector<char> names_;
};

bool Walker::changed(const SnapshotIndex::Entry& old, const struct stat& st, FileType type) const {
    if (old.racy || old.type != type) {
        return true;
    }
    const auto perm = static_cast<uint32_t>(st.st_mode & 07777);
    if (type == FileType::kDirectory) {
        return old.mode != perm;  // a directory's own times change with every entry
    }
    if (old.seeded) {
        // git's check: the exec bit, not the other permission bits; seconds of its 32-bit
        // times; the same size and inode.
        const bool exec = (st.st_mode & S_IXUSR) != 0;
        const bool old_exec = (old.mode & S_IXUSR) != 0;
        const auto low = [](int64_t ns) {
            return std::pair{static_cast<uint32_t>(ns / 1'000'000'000),
                             static_cast<uint32_t>(ns % 1'000'000'000)};
        };
        return exec != old_exec || old.size != static_cast<uint64_t>(st.st_size) ||
               low(old.mtime_ns) != low(ns_of(st.st_mtim)) ||
               low(old.ctime_ns) != low(ns_of(st.st_ctim)) || old.ino != st.st_ino;
    }
    return old.mode != perm || old.size != static_cast<uint64_t>(st.st_size) ||
           old.mtime_ns != ns_of(st.st_mtim) || old.ctime_ns != ns_of(st.st_ctim) ||
           old.ino != st.st_ino;
}

void Walker::keep_subtree(const std::string& path) {
    const std::string prefix = path + "/";
    for (auto& [p, e] : index_) {
        if (p.starts_with(prefix)) {
            e.seen = walk_;
        }
    }
}

void Walker::read_ignore_file(int dir_fd, const char* name, const std::string& base,
                              IgnoreRules& rules) {
    struct stat st {};
    if (::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
        static_cast<uint64_t>(st.st_size) > kMaxIgnoreFileBytes) {
        return;
    }
    std::string text;
    struct stat after {};
    if (read_regular(dir_fd, name, st, kMaxIgnoreFileBytes, text, after) == ReadOutcome::kRead) {
        rules.add(base, text);
    }
}

void Walker::dir(int dir_fd, const std::string& prefix, IgnoreRules& rules) {
    // The ignore files of this directory apply to what is beneath it.
    const std::string base = prefix.empty() ? std::string() : prefix.substr(0, prefix.size() - 1);
    read_ignore_file(dir_fd, ".gitignore", base, rules);
    read_ignore_file(dir_fd, ".stockadeignore", base, rules);
    const int dup_fd = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
    if (dup_fd < 0) {
        return;
    }
    DIR* d = ::fdopendir(dup_fd);
    if (d == nullptr) {
        (void)::close(dup_fd);
        return;
    }
    // The names first, then each entry: a subdirectory's walk does not keep this one open
    // longer than its listing, and its own DIR buffer is freed before the recursion.
    std::vector<std::string> names;
    while (dirent* de = ::readdir(d)) {
        const std::string_view n = de->d_name;
        if (n == "." || n == ".." || n == ".git") {
            continue;
        }
        names.emplace_back(n);
    }
    (void)::closedir(d);
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
        entry(dir_fd, prefix, name.c_str(), rules);
    }
}

void Walker::entry(int dir_fd, const std::string& prefix, const char* name, IgnoreRules& rules) {
    std::string path = prefix + name;
    if (!is_valid_utf8(name) || path.size() >= 4096) {
        ++out_.skipped;  // the channel cannot carry it faithfully
        return;
    }
    struct stat st {};
    if (::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        return;  // gone meanwhile: the next walk sees it removed
    }
    const FileType type = local::file_type(st.st_mode);
    if (type == FileType::kOther) {
        ++out_.skipped;
        return;
    }
    if (!rules.empty()) {
        if (std::optional<bool> ignored = rules.match(path, type == FileType::kDirectory);
            ignored && *ignored) {
            return;
        }
    }
    ++out_.scanned;
    auto found = index_.find(path);
    const bool is_new = found == index_.end();
    const bool differs = is_new || changed(found->second, st, type);
    if (differs) {
        SnapshotEntry e{
            .path = path,
            .type = type,
            .mode = static_cast<uint32_t>(st.st_mode & 07777),
            .size = type == FileType::kDirectory ? 0 : static_cast<uint64_t>(st.st_size),
            .mtime_ns = ns_of(st.st_mtim),
            .ctime_ns = ns_of(st.st_ctim),
            .ino = st.st_ino};
        bool fits = out_.changed.size() + out_.removed.size() < request_.max_entries;
        bool racy = type == FileType::kFile && e.mtime_ns >= started_ns_ - kRacyNs;
        bool ok = true;
        if (fits && type == FileType::kSymlink) {
            e.target = read_link(dir_fd, name);
            ok = !e.target.empty() && is_valid_utf8(e.target);
        } else if (fits && type == FileType::kFile) {
            const uint64_t room = request_.max_reply_bytes - reply_bytes_;
            if (static_cast<uint64_t>(st.st_size) > request_.max_file_bytes) {
                e.too_large = true;
            } else if (static_cast<uint64_t>(st.st_size) > room) {
                fits = false;
            } else {
                struct stat after {};
                const uint64_t cap = std::min(request_.max_file_bytes, room);
                switch (read_regular(dir_fd, name, st, cap, e.bytes, after)) {
                    case ReadOutcome::kRead:
                        e.size = e.bytes.size();
                        // Changed while read: what was read is kept, and the next walk looks
                        // again.
                        racy = racy || ns_of(after.st_mtim) != e.mtime_ns ||
                               ns_of(after.st_ctim) != e.ctime_ns ||
                               static_cast<uint64_t>(after.st_size) != e.size;
                        break;
                    case ReadOutcome::kTooLarge:
                        if (static_cast<uint64_t>(after.st_size) > request_.max_file_bytes) {
                            e.too_large = true;
                            e.size = static_cast<uint64_t>(after.st_size);
                            e.bytes.clear();
                        } else {
                            fits = false;  // it grew past the room left in this reply
                        }
                        break;
                    case ReadOutcome::kGone:
                        ok = false;
                        break;
                }
            }
        }
        if (!ok) {
            // Gone or swapped between the stat and the open: as if the walk had not met it.
            ++out_.skipped;
            if (!is_new) {
                found->second.seen = walk_;
                found->second.racy = true;
            }
            return;
        }
        if (fits) {
            reply_bytes_ += e.bytes.size();
            SnapshotIndex::Entry& slot = index_[path];
            slot = SnapshotIndex::Entry{.type = type,
                                        .mode = e.mode,
                                        .size = e.size,
                                        .mtime_ns = e.mtime_ns,
                                        .ctime_ns = e.ctime_ns,
                                        .ino = e.ino,
                                        .target = e.target,
                                        .seeded = false,
                                        .racy = racy,
                                        .seen = walk_};
            out_.changed.push_back(std::move(e));
        } else {
            out_.more = true;
        }
    }
    if (!is_new) {
        // Met (what is left out of a full reply stays as the index had it, for the next walk).
        found = index_.find(path);
        if (found != index_.end()) {
            found->second.seen = walk_;
        }
    }
    if (type != FileType::kDirectory) {
        return;
    }
    const int sub = retry_eintr(
        [&] { return ::openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); });
    if (sub < 0) {
        // Unreadable, or swapped for a symlink or a file since the stat: nothing beneath it is
        // read, and what the index holds beneath it stays.
        keep_subtree(path);
        return;
    }
    const UniqueFd sub_fd(sub);
    struct stat now {};
    if (::fstat(sub, &now) != 0 || now.st_ino != st.st_ino || now.st_dev != st.st_dev) {
        keep_subtree(path);
        return;
    }
    // The rules its ignore files add hold beneath it only.
    const size_t mark = rules.size();
    dir(sub, path + "/", rules);
    rules.truncate(mark);
}

Snapshot Walker::finish() {
    std::vector<std::string> gone;
    for (const auto& [path, e] : index_) {
        if (e.seen != walk_) {
            gone.push_back(path);
        }
    }
    std::sort(gone.begin(), gone.end());
    for (std::string& path : gone) {
        if (out_.changed.size() + out_.removed.size() >= request_.max_entries) {
            out_.more = true;
            break;
        }
        index_.erase(path);
        out_.removed.push_back(std::move(path));
    }
    std::sort(out_.changed.begin(), out_.changed.end(),
              [](const SnapshotEntry& a, const SnapshotEntry& b) { return a.path < b.path; });
    return std::move(out_);
}

}  // namespace

Result<Snapshot> SnapshotIndex::walk(int root_fd, const SnapshotRequest& request) {
    RETURN_IF_ERROR(validate_snapshot_request(request));
    if (!request.reset && !ready_) {
        return Error{Errc::kFailedPrecondition,
                     "snapshot: the worker holds no index yet; send a reset"};
    }
    const int fd =
        retry_eintr([&] { return ::openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); });
    if (fd < 0) {
        return errno_error("snapshot: open the workspace root", errno);
    }
    const UniqueFd dir_fd(fd);
    if (request.reset) {
        entries_.clear();
        ready_ = true;
        for (const SnapshotSeed& s : request.seed) {
            entries_[s.path] = Entry{.type = s.type,
                                     .mode = s.mode,
                                     .size = s.size,
                                     .mtime_ns = s.mtime_ns,
                                     .ctime_ns = s.ctime_ns,
                                     .ino = s.ino,
                                     .target = {},
                                     .seeded = true,
                                     .racy = false,
                                     .seen = 0};
        }
    }
    struct timespec now {};
    (void)::clock_gettime(CLOCK_REALTIME, &now);
    Walker walker(entries_, ++walks_, request, ns_of(now));
    IgnoreRules rules;
    walker.dir(dir_fd.get(), "", rules);
    return walker.finish();
}

Result<Snapshot> Workspace::snapshot(const SnapshotRequest&) {
    return Error{Errc::kUnavailable, "this workspace cannot take checkpoints"};
}

Result<RestoreOutcome> Workspace::restore(const RestoreRequest&) {
    return Error{Errc::kUnavailable, "this workspace cannot restore checkpoints"};
}

Result<Snapshot> LocalWorkspace::snapshot(const SnapshotRequest& request) {
    ASSIGN_OR_RETURN(int fd, root_fd(Root::kWorkspace));
    return snapshots_->walk(fd, request);
}

Result<RestoreOutcome> LocalWorkspace::restore(const RestoreRequest& request) {
    RETURN_IF_ERROR(validate_restore_request(request));
    ASSIGN_OR_RETURN(int fd, root_fd(Root::kWorkspace));
    return restore_beneath(fd, request);
}

// ---- The restore ----------------------------------------------------------------------------

namespace {

// Opens the directory holding `path` beneath `root_fd`, one component at a time, never through
// a symlink; `name` gets the last component.
Result<UniqueFd> open_parent(int root_fd, const std::string& path, std::string& name) {
    int fd = retry_eintr([&] { return ::openat(root_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC); });
    if (fd < 0) {
        return errno_error("open the workspace root", errno);
    }
    UniqueFd dir(fd);
    size_t start = 0;
    for (;;) {
        const size_t slash = path.find('/', start);
        if (slash == std::string::npos) {
            name = path.substr(start);
            return dir;
        }
        const std::string component = path.substr(start, slash - start);
        fd = retry_eintr([&] {
            return ::openat(dir.get(), component.c_str(),
                            O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        });
        if (fd < 0) {
            return errno_error(fmt::format("open directory \"{}\"", path.substr(0, slash)), errno);
        }
        dir.reset(fd);
        struct stat st {};
        if (::fstat(dir.get(), &st) != 0 || !S_ISDIR(st.st_mode)) {
            // O_PATH | O_NOFOLLOW on a symlink opens the link itself.
            return errno_error(fmt::format("open directory \"{}\"", path.substr(0, slash)), ELOOP);
        }
        start = slash + 1;
    }
}

std::string temp_name(const std::string& name, uint64_t n) {
    return fmt::format(".{}.stockade-rewind-{}-{}", name.substr(0, 64), ::getpid(), n);
}

// The directory of the last file written, kept for the next one in the same directory (most
// of a rewind's files sit beside each other). Forgotten after anything but a file: a directory
// made, removed or replaced by a link since must be opened again.
struct ParentCache {
    std::string path{};
    UniqueFd fd{};
};

Status restore_one(int root_fd, const RestoreAction& a, uint64_t n, ParentCache& cache,
                   mode_t umask_bits) {
    std::string name;
    const size_t slash = a.path.rfind('/');
    const std::string parent = slash == std::string::npos ? std::string() : a.path.substr(0, slash);
    if (a.kind != RestoreKind::kFile || !cache.fd || cache.path != parent) {
        cache = ParentCache{};
        ASSIGN_OR_RETURN(UniqueFd opened, open_parent(root_fd, a.path, name));
        cache = ParentCache{.path = parent, .fd = std::move(opened)};
    }
    name = slash == std::string::npos ? a.path : a.path.substr(slash + 1);
    // O_PATH descriptors serve as the dirfd of the *at calls below.
    const int d = cache.fd.get();
    if (a.kind != RestoreKind::kFile) {
        // Used once: the next action opens its directory afresh.
        cache.path = "\n";
    }
    switch (a.kind) {
        case RestoreKind::kRemove: {
            struct stat st {};
            if (::fstatat(d, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
                return errno == ENOENT ? Status{} : errno_error("stat", errno);
            }
            if (::unlinkat(d, name.c_str(), S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) != 0) {
                if (errno == ENOTEMPTY || errno == EEXIST) {
                    return Error{Errc::kFailedPrecondition,
                                 "not removed: the directory still holds files the checkpoints "
                                 "do not follow (ignored ones); remove them first if it must go"};
                }
                return errno_error("remove", errno);
            }
            return {};
        }
        case RestoreKind::kDirectory: {
            if (::mkdirat(d, name.c_str(), static_cast<mode_t>(a.mode)) != 0 && errno != EEXIST) {
                return errno_error("mkdir", errno);
            }
            const int fd = retry_eintr([&] {
                return ::openat(d, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            });
            if (fd < 0) {
                return errno_error("open the directory", errno);
            }
            const UniqueFd owned(fd);
            if (::fchmod(fd, static_cast<mode_t>(a.mode)) != 0) {
                return errno_error("chmod", errno);
            }
            return {};
        }
        case RestoreKind::kSymlink: {
            const std::string tmp = temp_name(name, n);
            if (::symlinkat(a.data.c_str(), d, tmp.c_str()) != 0) {
                return errno_error("symlink", errno);
            }
            if (::renameat(d, tmp.c_str(), d, name.c_str()) != 0) {
                const int err = errno;
                (void)::unlinkat(d, tmp.c_str(), 0);
                return errno_error("rename", err);
            }
            return {};
        }
        case RestoreKind::kFile: {
            const std::string tmp = temp_name(name, n);
            const int fd = retry_eintr([&] {
                return ::openat(d, tmp.c_str(),
                                O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                                static_cast<mode_t>(a.mode & 0777));
            });
            if (fd < 0) {
                return errno_error("create", errno);
            }
            UniqueFd file(fd);
            Status written = write_all(fd, a.data);
            // Created with its mode: set again only when the umask took bits from it (or it
            // has set-id or sticky bits, which creation does not give).
            const bool exact = (a.mode & 07000U) == 0 && (a.mode & umask_bits) == 0;
            if (written && !exact && ::fchmod(fd, static_cast<mode_t>(a.mode)) != 0) {
                written = errno_error("chmod", errno);
            }
            file.reset();
            if (written && ::renameat(d, tmp.c_str(), d, name.c_str()) != 0) {
                written = errno_error("rename", errno);
            }
            if (!written) {
                (void)::unlinkat(d, tmp.c_str(), 0);
            }
            return written;
        }
    }
    return {};
}

}  // namespace

RestoreOutcome restore_beneath(int root_fd, const RestoreRequest& request) {
    RestoreOutcome outcome;
    uint64_t n = 0;
    ParentCache cache;
    const mode_t umask_bits = ::umask(0);
    (void)::umask(umask_bits);
    for (const RestoreAction& a : request.actions) {
        Status done = restore_one(root_fd, a, n, cache, umask_bits);
        if (done) {
            ++outcome.applied;
        } else {
            outcome.failed.push_back({n, done.error().message});
        }
        ++n;
    }
    return outcome;
}

}  // namespace stockade::workspace
