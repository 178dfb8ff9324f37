#include "workspace/channel.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "common/json_depth.h"
#include "common/scm_rights.h"
#include "common/utf8.h"

namespace stockade::workspace::channel {

namespace {

using nlohmann::json;

template <class... Ts>
struct Overloaded : Ts... {
    using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

static_assert(std::variant_size_v<RequestArgs> == static_cast<size_t>(Op::kRestore) + 1);
static_assert(std::variant_size_v<ReplyValue> == static_cast<size_t>(Op::kRestore) + 1);
static_assert(
    std::is_same_v<std::variant_alternative_t<static_cast<size_t>(Op::kSnapshot), ReplyValue>,
                   Snapshot>);
static_assert(
    std::is_same_v<std::variant_alternative_t<static_cast<size_t>(Op::kRealPath), ReplyValue>,
                   RealPath>);
static_assert(
    std::is_same_v<std::variant_alternative_t<static_cast<size_t>(Op::kCensus), ReplyValue>,
                   ProcessCensus>);
static_assert(
    std::is_same_v<std::variant_alternative_t<static_cast<size_t>(Op::kSpawn), RequestArgs>,
                   SpawnRequest>);
static_assert(
    std::is_same_v<std::variant_alternative_t<static_cast<size_t>(Op::kSpawn), ReplyValue>,
                   SpawnedProcess>);
static_assert(
    std::is_same_v<std::variant_alternative_t<static_cast<size_t>(Op::kCommands), ReplyValue>,
                   CommandsResult>);
static_assert(
    std::is_same_v<std::variant_alternative_t<static_cast<size_t>(Op::kWrite), RequestArgs>,
                   WriteRequest>);
static_assert(std::is_same_v<std::variant_alternative_t<static_cast<size_t>(Op::kRg), ReplyValue>,
                             RgOutcome>);
static_assert(std::is_same_v<std::variant_alternative_t<static_cast<size_t>(Op::kList), ReplyValue>,
                             std::vector<DirEntry>>);

Error malformed(std::string message) {
    return Error{Errc::kInvalidArgument, std::move(message)};
}

uint32_t load_le32(const std::byte* p) noexcept {
    return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8U) |
           (static_cast<uint32_t>(p[2]) << 16U) | (static_cast<uint32_t>(p[3]) << 24U);
}

void append_le32(std::string& out, uint32_t v) {
    for (unsigned shift = 0; shift < 32; shift += 8) {
        out.push_back(static_cast<char>((v >> shift) & 0xFFU));
    }
}

// Bounds nesting before the parser sees the text, so nothing recursive ever walks a deep value.
Status check_depth(std::string_view text) {
    if (json_nesting_depth(text, kMaxHeaderDepth) > kMaxHeaderDepth) {
        return malformed(fmt::format("header nests deeper than {} levels", kMaxHeaderDepth));
    }
    return {};
}

// The frame from its header's text and its payload (each already cut out of the body).
Result<Frame> frame_from(std::string_view header_text, std::string payload) {
    RETURN_IF_ERROR(check_depth(header_text));
    Frame frame;
    try {
        frame.header = json::parse(header_text.begin(), header_text.end(), nullptr,
                                   /*allow_exceptions=*/false);
    } catch (const std::exception& e) {
        return malformed(fmt::format("header is not valid JSON: {}", e.what()));
    }
    if (frame.header.is_discarded()) {
        return malformed("header is not valid JSON");
    }
    if (!frame.header.is_object()) {
        return malformed("header is not a JSON object");
    }
    frame.payload = std::move(payload);
    return frame;
}

Status check_header_length(size_t header_len, size_t body_len) {
    if (header_len > body_len - 4) {
        return malformed(fmt::format("header length {} exceeds the {} bytes left in the frame",
                                     header_len, body_len - 4));
    }
    return {};
}

Result<Frame> decode_body(std::string body) {
    if (body.size() + kPrefixBytes > kMaxFrameBytes) {
        return malformed(fmt::format("frame of {} bytes exceeds the {}-byte limit",
                                     body.size() + kPrefixBytes, kMaxFrameBytes));
    }
    if (body.size() < 4) {
        return malformed(fmt::format("frame of {} bytes is too short for its header length",
                                     body.size() + kPrefixBytes));
    }
    const size_t header_len = load_le32(reinterpret_cast<const std::byte*>(body.data()));
    RETURN_IF_ERROR(check_header_length(header_len, body.size()));
    const std::string header(body, 4, header_len);
    body.erase(0, 4 + header_len);
    return frame_from(header, std::move(body));
}

// Reads the fields of one JSON object, each checked for presence and type.
class Fields {
public:
    Fields(const json& object, std::string where) : object_(object), where_(std::move(where)) {}

    [[nodiscard]] bool has(const char* key) const { return object_.contains(key); }

    Result<const json*> get(const char* key) const {
        auto it = object_.find(key);
        if (it == object_.end()) {
            return malformed(fmt::format("{}: field \"{}\" is missing", where_, key));
        }
        return &*it;
    }

    Result<uint64_t> u64(const char* key) const {
        ASSIGN_OR_RETURN(const json* v, get(key));
        if (!v->is_number_unsigned()) {
            return mistyped(key, "an unsigned integer");
        }
        return v->get<uint64_t>();
    }

    Result<uint64_t> u64_at_most(const char* key, uint64_t max) const {
        ASSIGN_OR_RETURN(uint64_t v, u64(key));
        if (v > max) {
            return malformed(
                fmt::format("{}: field \"{}\" is {}, above the limit {}", where_, key, v, max));
        }
        return v;
    }

    Result<int64_t> i64(const char* key) const {
        ASSIGN_OR_RETURN(const json* v, get(key));
        if (v->is_number_unsigned()) {
            auto u = v->get<uint64_t>();
            if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
                return mistyped(key, "a 64-bit integer");
            }
            return static_cast<int64_t>(u);
        }
        if (!v->is_number_integer()) {
            return mistyped(key, "an integer");
        }
        return v->get<int64_t>();
    }

    Result<bool> boolean(const char* key) const {
        ASSIGN_OR_RETURN(const json* v, get(key));
        if (!v->is_boolean()) {
            return mistyped(key, "a boolean");
        }
        return v->get<bool>();
    }

    Result<std::string> string(const char* key) const {
        ASSIGN_OR_RETURN(const json* v, get(key));
        if (!v->is_string()) {
            return mistyped(key, "a string");
        }
        return v->get<std::string>();
    }

    Result<const json*> array(const char* key) const {
        ASSIGN_OR_RETURN(const json* v, get(key));
        if (!v->is_array()) {
            return mistyped(key, "an array");
        }
        return v;
    }

    Result<const json*> object(const char* key) const {
        ASSIGN_OR_RETURN(const json* v, get(key));
        if (!v->is_object()) {
            return mistyped(key, "an object");
        }
        return v;
    }

    Result<Root> root(const char* key) const {
        ASSIGN_OR_RETURN(std::string name, string(key));
        if (name == "workspace") {
            return Root::kWorkspace;
        }
        if (name == "spill") {
            return Root::kSpill;
        }
        return malformed(
            fmt::format("{}: field \"{}\" names an unknown root \"{}\"", where_, key, name));
    }

    Result<FileType> file_type(const char* key) const {
        ASSIGN_OR_RETURN(std::string name, string(key));
        for (FileType t :
             {FileType::kFile, FileType::kDirectory, FileType::kSymlink, FileType::kOther}) {
            if (name == file_type_name(t)) {
                return t;
            }
        }
        return malformed(
            fmt::format("{}: field \"{}\" names an unknown file type \"{}\"", where_, key, name));
    }

    [[nodiscard]] const std::string& where() const { return where_; }

private:
    [[nodiscard]] Error mistyped(const char* key, std::string_view type) const {
        return malformed(fmt::format("{}: field \"{}\" must be {}", where_, key, type));
    }

    const json& object_;
    std::string where_;
};

Status check_version(const Fields& f) {
    ASSIGN_OR_RETURN(uint64_t v, f.u64("v"));
    if (v != kVersion) {
        return Error{Errc::kFailedPrecondition,
                     fmt::format("channel version mismatch: the peer speaks version {}, this side "
                                 "speaks version {}",
                                 v, kVersion)};
    }
    return {};
}

Status check_no_payload(const Frame& frame, std::string_view what) {
    if (!frame.payload.empty()) {
        return malformed(fmt::format("{} carries an unexpected payload of {} bytes", what,
                                     frame.payload.size()));
    }
    return {};
}

Status check_path(const std::string& path) {
    if (path.size() > kMaxPathBytes) {
        return malformed(
            fmt::format("path of {} bytes exceeds the {}-byte limit", path.size(), kMaxPathBytes));
    }
    if (path.find('\0') != std::string::npos) {
        return malformed("path contains a NUL byte");
    }
    return {};
}

json info_json(const FileInfo& info) {
    json j = json::object();
    j["type"] = file_type_name(info.type);
    j["size"] = info.size;
    j["mtime_ns"] = info.mtime_ns;
    j["mode"] = info.mode;
    return j;
}

Result<FileInfo> info_from(const Fields& parent, const char* key) {
    ASSIGN_OR_RETURN(const json* obj, parent.object(key));
    Fields f(*obj, fmt::format("{}.{}", parent.where(), key));
    FileInfo info;
    ASSIGN_OR_RETURN(info.type, f.file_type("type"));
    ASSIGN_OR_RETURN(info.size, f.u64("size"));
    ASSIGN_OR_RETURN(info.mtime_ns, f.i64("mtime_ns"));
    ASSIGN_OR_RETURN(uint64_t mode, f.u64_at_most("mode", 07777));
    info.mode = static_cast<uint32_t>(mode);
    return info;
}

// A list entry name is one component: not empty, not "." or "..", no '/' and no NUL.
Status check_entry_name(const std::string& name) {
    if (name.empty() || name == "." || name == ".." || name.size() > 255 ||
        name.find_first_of(std::string_view("/\0", 2)) != std::string::npos) {
        return malformed(
            fmt::format("entry name \"{}\" is not a single path component", name.substr(0, 64)));
    }
    return {};
}

Result<std::vector<DirEntry>> entries_from(const Fields& f) {
    ASSIGN_OR_RETURN(const json* arr, f.array("entries"));
    if (arr->size() > kMaxListEntries) {
        return malformed(fmt::format("reply lists {} entries, above the limit {}", arr->size(),
                                     kMaxListEntries));
    }
    std::vector<DirEntry> entries;
    entries.reserve(arr->size());
    for (size_t i = 0; i < arr->size(); ++i) {
        const json& item = (*arr)[i];
        std::string where = fmt::format("reply entries[{}]", i);
        if (!item.is_object()) {
            return malformed(fmt::format("{} must be an object", where));
        }
        Fields e(item, std::move(where));
        DirEntry entry;
        ASSIGN_OR_RETURN(entry.name, e.string("name"));
        RETURN_IF_ERROR(check_entry_name(entry.name));
        ASSIGN_OR_RETURN(entry.type, e.file_type("type"));
        ASSIGN_OR_RETURN(entry.size, e.u64("size"));
        ASSIGN_OR_RETURN(entry.mtime_ns, e.i64("mtime_ns"));
        entries.push_back(std::move(entry));
    }
    return entries;
}

Result<ReplyValue> census_from(const Fields& f) {
    ProcessCensus census;
    ASSIGN_OR_RETURN(uint64_t total, f.u64_at_most("total", static_cast<uint64_t>(kMaxPid)));
    census.total = static_cast<uint32_t>(total);
    ASSIGN_OR_RETURN(const json* arr, f.array("sessions"));
    if (arr->size() > kMaxCensusSessions) {
        return malformed(fmt::format("reply lists {} sessions, above the limit {}", arr->size(),
                                     kMaxCensusSessions));
    }
    for (size_t i = 0; i < arr->size(); ++i) {
        const json& item = (*arr)[i];
        std::string where = fmt::format("reply sessions[{}]", i);
        if (!item.is_object()) {
            return malformed(fmt::format("{} must be an object", where));
        }
        Fields s(item, std::move(where));
        ProcessCensus::Session session;
        ASSIGN_OR_RETURN(uint64_t sid, s.u64_at_most("sid", static_cast<uint64_t>(kMaxPid)));
        ASSIGN_OR_RETURN(uint64_t processes,
                         s.u64_at_most("processes", static_cast<uint64_t>(kMaxPid)));
        ASSIGN_OR_RETURN(session.name, s.string("name"));
        session.sid = static_cast<int>(sid);
        session.processes = static_cast<uint32_t>(processes);
        census.sessions.push_back(std::move(session));
    }
    return ReplyValue{std::move(census)};
}

// An array of strings, at most `max` of them.
Result<std::vector<std::string>> strings_from(const Fields& f, const char* key, size_t max) {
    ASSIGN_OR_RETURN(const json* arr, f.array(key));
    if (arr->size() > max) {
        return malformed(fmt::format("{}: field \"{}\" holds {} entries, above the limit {}",
                                     f.where(), key, arr->size(), max));
    }
    std::vector<std::string> out;
    out.reserve(arr->size());
    for (const json& item : *arr) {
        if (!item.is_string()) {
            return malformed(
                fmt::format("{}: field \"{}\" must hold only strings", f.where(), key));
        }
        out.push_back(item.get<std::string>());
    }
    return out;
}

Status check_spawn_strings(const std::vector<std::string>& strings, std::string_view what) {
    for (const std::string& s : strings) {
        if (s.size() > kMaxSpawnArgBytes) {
            return malformed(fmt::format("a spawn {} of {} bytes exceeds the {}-byte limit", what,
                                         s.size(), kMaxSpawnArgBytes));
        }
        if (s.find('\0') != std::string::npos) {
            return malformed(fmt::format("a spawn {} contains a NUL byte", what));
        }
    }
    return {};
}

// Decodes the "error" object of a failed reply into `out`.
Status error_from(const Fields& f, Error& out) {
    ASSIGN_OR_RETURN(const json* obj, f.object("error"));
    Fields e(*obj, "reply error");
    ASSIGN_OR_RETURN(std::string code_name, e.string("code"));
    std::optional<Errc> code = errc_from_name(code_name);
    if (!code) {
        return malformed(fmt::format("reply error: unknown code \"{}\"", code_name.substr(0, 64)));
    }
    Error error{*code, {}, 0};
    ASSIGN_OR_RETURN(error.message, e.string("message"));
    if (error.message.size() > kMaxErrorMessageBytes) {
        return malformed(fmt::format("reply error: message of {} bytes exceeds the limit {}",
                                     error.message.size(), kMaxErrorMessageBytes));
    }
    ASSIGN_OR_RETURN(uint64_t err, e.u64_at_most("errno", 4095));
    error.sys_errno = static_cast<int>(err);
    out = std::move(error);
    return {};
}

Status wait_fd(int fd, short events, const Deadline& deadline, std::string_view what) {
    for (;;) {
        int timeout_ms = -1;
        if (deadline) {
            auto left = std::chrono::ceil<std::chrono::milliseconds>(
                *deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) {
                return Error{Errc::kDeadlineExceeded, fmt::format("{}: deadline passed", what)};
            }
            timeout_ms = static_cast<int>(std::min<int64_t>(left.count(), INT_MAX));
        }
        pollfd p{fd, events, 0};
        int r = ::poll(&p, 1, timeout_ms);
        if (r < 0) {
            if (errno == EINTR) {
                continue;
            }
            int err = errno;
            return Error{Errc::kUnavailable, fmt::format("{}: poll: {}", what, errno_string(err)),
                         err};
        }
        if (r > 0) {
            return {};  // ready, or hung up / in error: the next call reports which
        }
    }
}

Error io_error(std::string_view what, int err) {
    return Error{Errc::kUnavailable, fmt::format("{}: {}", what, errno_string(err)), err};
}

// Takes ownership of every descriptor in the control messages of `msg`.
Status collect_fds(msghdr& msg, std::vector<UniqueFd>& fds) {
    for_each_passed_fd(msg, [&](int fd) { fds.emplace_back(fd); });
    if ((msg.msg_flags & MSG_CTRUNC) != 0 || fds.size() > kMaxFdsPerFrame) {
        return malformed(
            fmt::format("the peer sent more than {} descriptors with one frame", kMaxFdsPerFrame));
    }
    return {};
}

// Reads exactly `len` bytes. false: the peer closed the channel before the first byte and
// `eof_ok` allows that.
Result<bool> read_exact(int fd, char* buf, size_t len, bool eof_ok, const Deadline& deadline,
                        std::vector<UniqueFd>& fds) {
    size_t got = 0;
    while (got < len) {
        iovec iov{buf + got, len - got};
        FdControl<kMaxFdsPerFrame> control;
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        expect_fds(msg, control);
        ssize_t n = ::recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                RETURN_IF_ERROR(wait_fd(fd, POLLIN, deadline, "receive frame"));
                continue;
            }
            return io_error("receive frame", errno);
        }
        RETURN_IF_ERROR(collect_fds(msg, fds));
        if (n == 0) {
            if (eof_ok && got == 0) {
                return false;
            }
            return Error{Errc::kUnavailable,
                         fmt::format("receive frame: the peer closed the channel mid-frame ({} of "
                                     "{} bytes)",
                                     got, len)};
        }
        got += static_cast<size_t>(n);
    }
    return true;
}

}  // namespace

// ---- Frames ---------------------------------------------------------------------------------

Result<EncodedFrame> encode_frame_parts(const json& header, std::array<std::string_view, 2> payload,
                                        Utf8 utf8) {
    std::string text;
    try {
        text = header.dump(
            -1, ' ', false,
            utf8 == Utf8::kStrict ? json::error_handler_t::strict : json::error_handler_t::replace);
    } catch (const json::exception&) {
        return Error{Errc::kInvalidArgument, "encode frame: a string is not valid UTF-8"};
    }
    const size_t total = kMinFrameBytes + text.size() + payload[0].size() + payload[1].size();
    if (total > kMaxFrameBytes) {
        return Error{Errc::kResourceExhausted,
                     fmt::format("encode frame: {} bytes exceed the {}-byte frame limit", total,
                                 kMaxFrameBytes)};
    }
    EncodedFrame out;
    out.head.reserve(kMinFrameBytes + text.size());
    append_le32(out.head, static_cast<uint32_t>(total));
    append_le32(out.head, static_cast<uint32_t>(text.size()));
    out.head += text;
    out.payload = payload;
    return out;
}

namespace {

std::string join_parts(EncodedFrame frame) {
    std::string out = std::move(frame.head);
    out.reserve(out.size() + frame.payload[0].size() + frame.payload[1].size());
    out += frame.payload[0];
    out += frame.payload[1];
    return out;
}

// A payload made for the frame (not borrowed from the message) goes into its head.
EncodedFrame owning(EncodedFrame frame, const std::string& made) {
    if (!made.empty()) {
        frame.head += made;
        frame.payload = {};
    }
    return frame;
}

Status validate_write(const WriteRequest& a) {
    RETURN_IF_ERROR(check_path(a.path));
    if (a.bytes.size() > kMaxPayloadBytes) {
        return Error{Errc::kResourceExhausted,
                     fmt::format("write of {} bytes exceeds the {}-byte limit", a.bytes.size(),
                                 kMaxPayloadBytes)};
    }
    if (a.mode && *a.mode > 07777) {
        return malformed(fmt::format("mode {:o} is not a permission mode", *a.mode));
    }
    return {};
}

void put_write(json& h, const WriteRequest& a) {
    h["root"] = root_name(a.root);
    h["path"] = a.path;
    h["make_parents"] = a.make_parents;
    if (a.mode) {
        h["mode"] = *a.mode;
    }
}

Status validate_args(const RequestArgs& args);

}  // namespace

Result<std::string> encode_frame(const json& header, std::string_view payload, Utf8 utf8) {
    ASSIGN_OR_RETURN(EncodedFrame frame, encode_frame_parts(header, {payload, {}}, utf8));
    return join_parts(std::move(frame));
}

Result<size_t> decode_length_prefix(std::span<const std::byte, kPrefixBytes> prefix) {
    const size_t total = load_le32(prefix.data());
    if (total < kMinFrameBytes) {
        return malformed(
            fmt::format("frame length {} is shorter than its {} bytes of length fields", total,
                        kMinFrameBytes));
    }
    if (total > kMaxFrameBytes) {
        return malformed(
            fmt::format("frame length {} exceeds the {}-byte limit", total, kMaxFrameBytes));
    }
    return total - kPrefixBytes;
}

Result<Frame> decode_frame_body(std::span<const std::byte> body) {
    if (body.size() + kPrefixBytes > kMaxFrameBytes) {
        return malformed(fmt::format("frame of {} bytes exceeds the {}-byte limit",
                                     body.size() + kPrefixBytes, kMaxFrameBytes));
    }
    return decode_body(std::string(reinterpret_cast<const char*>(body.data()), body.size()));
}

Result<Frame> decode_frame(std::span<const std::byte> bytes) {
    if (bytes.size() < kPrefixBytes) {
        return malformed(fmt::format("frame of {} bytes has no length prefix", bytes.size()));
    }
    ASSIGN_OR_RETURN(size_t body_len, decode_length_prefix(bytes.first<kPrefixBytes>()));
    if (body_len != bytes.size() - kPrefixBytes) {
        return malformed(fmt::format("frame length {} does not match the {} bytes given",
                                     body_len + kPrefixBytes, bytes.size()));
    }
    return decode_frame_body(bytes.subspan(kPrefixBytes));
}

// ---- Names ----------------------------------------------------------------------------------

std::string_view op_name(Op op) noexcept {
    switch (op) {
        case Op::kHello:
            return "hello";
        case Op::kStat:
            return "stat";
        case Op::kRead:
            return "read";
        case Op::kWrite:
            return "write";
        case Op::kMkdirs:
            return "mkdirs";
        case Op::kList:
            return "list";
        case Op::kRg:
            return "rg";
        case Op::kSpawn:
            return "spawn";
        case Op::kSignal:
            return "signal";
        case Op::kCommands:
            return "commands";
        case Op::kRealPath:
            return "realpath";
        case Op::kCensus:
            return "census";
        case Op::kSnapshot:
            return "snapshot";
        case Op::kRestore:
            return "restore";
    }
    return "unknown";
}

std::optional<Op> op_from_name(std::string_view name) noexcept {
    for (Op op :
         {Op::kHello, Op::kStat, Op::kRead, Op::kWrite, Op::kMkdirs, Op::kList, Op::kRg, Op::kSpawn,
          Op::kSignal, Op::kCommands, Op::kRealPath, Op::kCensus, Op::kSnapshot, Op::kRestore}) {
        if (name == op_name(op)) {
            return op;
        }
    }
    return std::nullopt;
}

std::string_view root_name(Root root) noexcept {
    switch (root) {
        case Root::kWorkspace:
            return "workspace";
        case Root::kSpill:
            return "spill";
    }
    return "unknown";
}

std::string_view file_type_name(FileType type) noexcept {
    switch (type) {
        case FileType::kFile:
            return "file";
        case FileType::kDirectory:
            return "directory";
        case FileType::kSymlink:
            return "symlink";
        case FileType::kOther:
            return "other";
    }
    return "unknown";
}

std::optional<Errc> errc_from_name(std::string_view name) noexcept {
    for (Errc code :
         {Errc::kInvalidArgument, Errc::kNotFound, Errc::kAlreadyExists, Errc::kPermissionDenied,
          Errc::kPolicyDenied, Errc::kFailedPrecondition, Errc::kDeadlineExceeded, Errc::kCancelled,
          Errc::kResourceExhausted, Errc::kUnavailable, Errc::kInternal}) {
        if (name == errc_name(code)) {
            return code;
        }
    }
    return std::nullopt;
}

Op op_of(const RequestArgs& args) noexcept {
    return static_cast<Op>(args.index());
}
Op op_of(const ReplyValue& value) noexcept {
    return static_cast<Op>(value.index());
}

// ---- Requests -------------------------------------------------------------------------------

Status validate_request(const Request& request) {
    return validate_args(request.args);
}

namespace {

Status validate_args(const RequestArgs& args) {
    return std::visit(
        Overloaded{
            [](const HelloArgs&) -> Status { return {}; },
            [](const StatArgs& a) -> Status { return check_path(a.path); },
            [](const MkdirsArgs& a) -> Status { return check_path(a.path); },
            [](const ReadArgs& a) -> Status {
                RETURN_IF_ERROR(check_path(a.path));
                if (a.max_bytes > kMaxPayloadBytes) {
                    return malformed(fmt::format("read of {} bytes exceeds the {}-byte limit",
                                                 a.max_bytes, kMaxPayloadBytes));
                }
                return {};
            },
            [](const WriteRequest& a) -> Status { return validate_write(a); },
            [](const ListArgs& a) -> Status {
                RETURN_IF_ERROR(check_path(a.path));
                if (a.max_entries > kMaxListEntries) {
                    return malformed(fmt::format("list of {} entries exceeds the limit {}",
                                                 a.max_entries, kMaxListEntries));
                }
                return {};
            },
            [](const RgRequest& a) -> Status {
                if (a.args.size() > kMaxRgArgs) {
                    return malformed(fmt::format("rg with {} arguments exceeds the limit {}",
                                                 a.args.size(), kMaxRgArgs));
                }
                for (const std::string& arg : a.args) {
                    if (arg.size() > kMaxRgArgBytes || arg.find('\0') != std::string::npos) {
                        return malformed("an rg argument is too long or contains a NUL byte");
                    }
                }
                if (a.max_output_bytes > kMaxPayloadBytes) {
                    return malformed(fmt::format("rg output of {} bytes exceeds the {}-byte limit",
                                                 a.max_output_bytes, kMaxPayloadBytes));
                }
                if (a.timeout.count() <= 0 || a.timeout > kMaxRgTimeout) {
                    return malformed(
                        fmt::format("rg timeout of {} ms is out of range", a.timeout.count()));
                }
                return {};
            },
            [](const SpawnRequest& a) -> Status {
                if (a.argv.empty() || a.argv.size() > kMaxSpawnArgs) {
                    return malformed(fmt::format("spawn with {} arguments is outside 1..{}",
                                                 a.argv.size(), kMaxSpawnArgs));
                }
                RETURN_IF_ERROR(check_spawn_strings(a.argv, "argument"));
                if (a.env.size() > kMaxSpawnEnv) {
                    return malformed(
                        fmt::format("spawn with {} environment entries exceeds the "
                                    "limit {}",
                                    a.env.size(), kMaxSpawnEnv));
                }
                RETURN_IF_ERROR(check_spawn_strings(a.env, "environment entry"));
                for (const std::string& e : a.env) {
                    const size_t eq = e.find('=');
                    if (eq == 0 || eq == std::string::npos) {
                        return malformed(fmt::format(
                            "spawn environment entry \"{}\" is not NAME=VALUE", e.substr(0, 64)));
                    }
                }
                RETURN_IF_ERROR(check_path(a.cwd));
                if (a.rows < 1 || a.rows > kMaxPtyDimension || a.cols < 1 ||
                    a.cols > kMaxPtyDimension) {
                    return malformed(fmt::format("spawn PTY size {}x{} is outside 1..{}", a.rows,
                                                 a.cols, kMaxPtyDimension));
                }
                return {};
            },
            [](const SignalArgs& a) -> Status {
                if (a.pgid < 0 || a.pgid > kMaxPid) {
                    return malformed(fmt::format("process group {} is out of range", a.pgid));
                }
                if (a.signal < 0 || a.signal > kMaxSignal) {
                    return malformed(fmt::format("signal {} is out of range", a.signal));
                }
                return {};
            },
            [](const CommandsArgs&) -> Status { return {}; },
            [](const RealPathArgs& a) -> Status { return check_path(a.path); },
            [](const CensusArgs&) -> Status { return {}; },
            [](const SnapshotRequest& a) -> Status { return validate_snapshot_request(a); },
            [](const RestoreRequest& a) -> Status { return validate_restore_request(a); },
        },
        args);
}

}  // namespace

Result<std::string> encode_request(const Request& request) {
    ASSIGN_OR_RETURN(EncodedFrame frame, encode_request_parts(request.id, request.args));
    return join_parts(std::move(frame));
}

Result<EncodedFrame> encode_write_request(uint64_t id, const WriteRequest& request) {
    RETURN_IF_ERROR(validate_write(request));
    json h = json::object();
    h["v"] = kVersion;
    h["id"] = id;
    h["op"] = op_name(Op::kWrite);
    put_write(h, request);
    return encode_frame_parts(h, {request.bytes, {}}, Utf8::kStrict);
}

Result<EncodedFrame> encode_request_parts(uint64_t id, const RequestArgs& args) {
    RETURN_IF_ERROR(validate_args(args));
    json h = json::object();
    h["v"] = kVersion;
    h["id"] = id;
    h["op"] = op_name(op_of(args));
    std::string_view payload;
    std::string owned;  // a snapshot's seed, a restore's data
    std::visit(Overloaded{
                   [](const HelloArgs&) {},
                   [&](const StatArgs& a) {
                       h["root"] = root_name(a.root);
                       h["path"] = a.path;
                   },
                   [&](const ReadArgs& a) {
                       h["root"] = root_name(a.root);
                       h["path"] = a.path;
                       h["max_bytes"] = a.max_bytes;
                   },
                   [&](const WriteRequest& a) {
                       put_write(h, a);
                       payload = a.bytes;
                   },
                   [&](const MkdirsArgs& a) {
                       h["root"] = root_name(a.root);
                       h["path"] = a.path;
                   },
                   [&](const ListArgs& a) {
                       h["root"] = root_name(a.root);
                       h["path"] = a.path;
                       h["max_entries"] = a.max_entries;
                   },
                   [&](const RgRequest& a) {
                       h["root"] = root_name(a.root);
                       h["args"] = a.args;
                       h["max_output_bytes"] = a.max_output_bytes;
                       h["timeout_ms"] = a.timeout.count();
                   },
                   [&](const SpawnRequest& a) {
                       h["argv"] = a.argv;
                       h["cwd"] = a.cwd;
                       h["env"] = a.env;
                       h["pty"] = a.pty;
                       h["interactive"] = a.interactive;
                       h["rows"] = a.rows;
                       h["cols"] = a.cols;
                   },
                   [&](const SignalArgs& a) {
                       h["pgid"] = a.pgid;
                       h["signal"] = a.signal;
                   },
                   [](const CommandsArgs&) {},
                   [&](const RealPathArgs& a) {
                       h["root"] = root_name(a.root);
                       h["path"] = a.path;
                   },
                   [](const CensusArgs&) {},
                   [&](const SnapshotRequest& a) {
                       encode_snapshot_request(a, h, owned);
                       payload = owned;
                   },
                   [&](const RestoreRequest& a) {
                       encode_restore_request(a, h, owned);
                       payload = owned;
                   },
               },
               args);
    ASSIGN_OR_RETURN(EncodedFrame frame, encode_frame_parts(h, {payload, {}}, Utf8::kStrict));
    return owning(std::move(frame), owned);
}

Result<Request> decode_request(Frame& frame) {
    try {
        Fields f(frame.header, "request");
        RETURN_IF_ERROR(check_version(f));
        Request request;
        ASSIGN_OR_RETURN(request.id, f.u64("id"));
        ASSIGN_OR_RETURN(std::string op_text, f.string("op"));
        std::optional<Op> op = op_from_name(op_text);
        if (!op) {
            return malformed(fmt::format("request: unknown op \"{}\"", op_text.substr(0, 64)));
        }
        if (*op != Op::kWrite && *op != Op::kSnapshot && *op != Op::kRestore) {
            RETURN_IF_ERROR(check_no_payload(frame, fmt::format("request \"{}\"", op_text)));
        }
        switch (*op) {
            case Op::kHello:
                request.args = HelloArgs{};
                break;
            case Op::kStat: {
                StatArgs a;
                ASSIGN_OR_RETURN(a.root, f.root("root"));
                ASSIGN_OR_RETURN(a.path, f.string("path"));
                request.args = std::move(a);
                break;
            }
            case Op::kRead: {
                ReadArgs a;
                ASSIGN_OR_RETURN(a.root, f.root("root"));
                ASSIGN_OR_RETURN(a.path, f.string("path"));
                ASSIGN_OR_RETURN(a.max_bytes, f.u64("max_bytes"));
                request.args = std::move(a);
                break;
            }
            case Op::kWrite: {
                WriteRequest a;
                ASSIGN_OR_RETURN(a.root, f.root("root"));
                ASSIGN_OR_RETURN(a.path, f.string("path"));
                ASSIGN_OR_RETURN(a.make_parents, f.boolean("make_parents"));
                if (f.has("mode")) {
                    ASSIGN_OR_RETURN(uint64_t mode, f.u64_at_most("mode", 07777));
                    a.mode = static_cast<uint32_t>(mode);
                }
                a.bytes = std::move(frame.payload);
                request.args = std::move(a);
                break;
            }
            case Op::kMkdirs: {
                MkdirsArgs a;
                ASSIGN_OR_RETURN(a.root, f.root("root"));
                ASSIGN_OR_RETURN(a.path, f.string("path"));
                request.args = std::move(a);
                break;
            }
            case Op::kList: {
                ListArgs a;
                ASSIGN_OR_RETURN(a.root, f.root("root"));
                ASSIGN_OR_RETURN(a.path, f.string("path"));
                ASSIGN_OR_RETURN(a.max_entries, f.u64("max_entries"));
                request.args = std::move(a);
                break;
            }
            case Op::kRg: {
                RgRequest a;
                ASSIGN_OR_RETURN(a.root, f.root("root"));
                ASSIGN_OR_RETURN(const json* args, f.array("args"));
                if (args->size() > kMaxRgArgs) {
                    return malformed(
                        fmt::format("request: rg with {} arguments exceeds the limit {}",
                                    args->size(), kMaxRgArgs));
                }
                for (const json& arg : *args) {
                    if (!arg.is_string()) {
                        return malformed("request: field \"args\" must hold only strings");
                    }
                    a.args.push_back(arg.get<std::string>());
                }
                ASSIGN_OR_RETURN(uint64_t max_out, f.u64("max_output_bytes"));
                a.max_output_bytes = static_cast<size_t>(max_out);
                ASSIGN_OR_RETURN(
                    uint64_t timeout_ms,
                    f.u64_at_most("timeout_ms", static_cast<uint64_t>(kMaxRgTimeout.count())));
                a.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_ms));
                request.args = std::move(a);
                break;
            }
            case Op::kSpawn: {
                SpawnRequest a;
                ASSIGN_OR_RETURN(a.argv, strings_from(f, "argv", kMaxSpawnArgs));
                ASSIGN_OR_RETURN(a.cwd, f.string("cwd"));
                ASSIGN_OR_RETURN(a.env, strings_from(f, "env", kMaxSpawnEnv));
                ASSIGN_OR_RETURN(a.pty, f.boolean("pty"));
                ASSIGN_OR_RETURN(a.interactive, f.boolean("interactive"));
                ASSIGN_OR_RETURN(uint64_t rows, f.u64_at_most("rows", kMaxPtyDimension));
                ASSIGN_OR_RETURN(uint64_t cols, f.u64_at_most("cols", kMaxPtyDimension));
                a.rows = static_cast<uint16_t>(rows);
                a.cols = static_cast<uint16_t>(cols);
                request.args = std::move(a);
                break;
            }
            case Op::kSignal: {
                SignalArgs a;
                ASSIGN_OR_RETURN(uint64_t pgid,
                                 f.u64_at_most("pgid", static_cast<uint64_t>(kMaxPid)));
                ASSIGN_OR_RETURN(uint64_t signal,
                                 f.u64_at_most("signal", static_cast<uint64_t>(kMaxSignal)));
                a.pgid = static_cast<int>(pgid);
                a.signal = static_cast<int>(signal);
                request.args = a;
                break;
            }
            case Op::kCommands:
                request.args = CommandsArgs{};
                break;
            case Op::kRealPath: {
                RealPathArgs a;
                ASSIGN_OR_RETURN(a.root, f.root("root"));
                ASSIGN_OR_RETURN(a.path, f.string("path"));
                request.args = std::move(a);
                break;
            }
            case Op::kCensus:
                request.args = CensusArgs{};
                break;
            case Op::kSnapshot: {
                ASSIGN_OR_RETURN(request.args,
                                 decode_snapshot_request(frame.header, frame.payload));
                break;
            }
            case Op::kRestore: {
                ASSIGN_OR_RETURN(request.args, decode_restore_request(frame.header, frame.payload));
                break;
            }
        }
        if (auto st = validate_request(request); !st) {
            return std::move(st).error().wrap("request");
        }
        return request;
    } catch (const std::exception& e) {
        return malformed(fmt::format("request: {}", e.what()));
    }
}

std::optional<uint64_t> recover_id(const Frame& frame) noexcept {
    try {
        if (!frame.header.is_object() || !frame.header.contains("id")) {
            return std::nullopt;
        }
        const json& id = frame.header.at("id");
        if (!id.is_number_unsigned()) {
            return std::nullopt;
        }
        return id.get<uint64_t>();
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

// ---- Replies --------------------------------------------------------------------------------

Result<std::string> encode_reply(const Reply& reply) {
    ASSIGN_OR_RETURN(EncodedFrame frame, encode_reply_parts(reply));
    return join_parts(std::move(frame));
}

Result<EncodedFrame> encode_reply_parts(const Reply& reply) {
    json h = json::object();
    h["v"] = kVersion;
    h["id"] = reply.id;
    h["ok"] = reply.result.has_value();
    std::string made;                           // a payload made for the frame (a snapshot's)
    std::array<std::string_view, 2> payload{};  // or borrowed from the reply
    if (!reply.result) {
        const Error& e = reply.result.error();
        json err = json::object();
        err["code"] = errc_name(e.code);
        err["message"] = e.message.substr(0, kMaxErrorMessageBytes);
        err["errno"] = (e.sys_errno > 0 && e.sys_errno <= 4095) ? e.sys_errno : 0;
        h["error"] = std::move(err);
        return encode_frame_parts(h, payload, Utf8::kReplace);
    }
    std::string invalid;  // why the result cannot be encoded
    std::visit(Overloaded{
                   [](const HelloResult&) {},
                   [&](const FileInfo& info) { h["info"] = info_json(info); },
                   [&](const ReadData& d) {
                       h["info"] = info_json(d.info);
                       h["truncated"] = d.truncated;
                       payload[0] = d.bytes;
                   },
                   [&](const WriteOutcome& w) {
                       h["created"] = w.created;
                       h["info"] = info_json(w.info);
                   },
                   [](const MkdirsResult&) {},
                   [&](const std::vector<DirEntry>& entries) {
                       // Names travel as UTF-8: an ill-formed one is replaced, which can change
                       // its place in the order, so the replaced names are sorted again.
                       std::vector<std::pair<std::string, const DirEntry*>> named;
                       named.reserve(entries.size());
                       for (const DirEntry& e : entries) {
                           named.emplace_back(sanitize_utf8(e.name), &e);
                       }
                       std::stable_sort(
                           named.begin(), named.end(),
                           [](const auto& a, const auto& b) { return a.first < b.first; });
                       json arr = json::array();
                       for (auto& [name, entry] : named) {
                           const DirEntry& e = *entry;
                           json j = json::object();
                           j["name"] = std::move(name);
                           j["type"] = file_type_name(e.type);
                           j["size"] = e.size;
                           j["mtime_ns"] = e.mtime_ns;
                           arr.push_back(std::move(j));
                       }
                       h["entries"] = std::move(arr);
                   },
                   [&](const RgOutcome& rg) {
                       h["exit_code"] = rg.exit_code;
                       h["truncated"] = rg.truncated;
                       h["timed_out"] = rg.timed_out;
                       h["out_bytes"] = rg.out.size();
                       payload = {rg.out, rg.err};  // its output, then its errors
                   },
                   [&](const SpawnedProcess& p) {
                       if (p.pid < kMinPid || p.pid > kMaxPid || !p.output || !p.status) {
                           invalid = fmt::format(
                               "spawn result (pid {}) lacks a valid pid or its output or status "
                               "descriptor",
                               p.pid);
                           return;
                       }
                       h["pid"] = p.pid;
                       h["has_input"] = p.input.valid();
                       h["has_pidfd"] = p.pidfd.valid();
                   },
                   [&](const SignalResult& s) { h["delivered"] = s.delivered; },
                   [&](const CommandsResult& c) {
                       // As for list names: replacing ill-formed UTF-8 can reorder names and
                       // make two equal, so the replaced names are sorted and deduplicated.
                       std::vector<std::string> names;
                       names.reserve(c.names.size());
                       for (const std::string& name : c.names) {
                           names.push_back(sanitize_utf8(name));
                       }
                       std::sort(names.begin(), names.end());
                       names.erase(std::unique(names.begin(), names.end()), names.end());
                       if (names.size() > kMaxCommandNames) {
                           invalid = fmt::format("{} command names exceed the limit {}",
                                                 names.size(), kMaxCommandNames);
                           return;
                       }
                       h["names"] = std::move(names);
                   },
                   [&](const RealPath& r) {
                       h["path"] = sanitize_utf8(r.path);
                       h["exists"] = r.exists;
                   },
                   [&](const ProcessCensus& c) {
                       if (c.sessions.size() > kMaxCensusSessions) {
                           invalid = fmt::format("{} sessions exceed the limit {}",
                                                 c.sessions.size(), kMaxCensusSessions);
                           return;
                       }
                       h["total"] = c.total;
                       json arr = json::array();
                       for (const ProcessCensus::Session& session : c.sessions) {
                           arr.push_back({{"sid", session.sid},
                                          {"processes", session.processes},
                                          {"name", sanitize_utf8(session.name.substr(0, 64))}});
                       }
                       h["sessions"] = std::move(arr);
                   },
                   [&](const Snapshot& snapshot) {
                       encode_snapshot(snapshot, h, made);
                       payload[0] = made;
                   },
                   [&](const RestoreOutcome& r) { encode_restore_outcome(r, h); },
               },
               *reply.result);
    if (!invalid.empty()) {
        return Error{Errc::kInvalidArgument, fmt::format("encode reply: {}", invalid)};
    }
    ASSIGN_OR_RETURN(EncodedFrame frame, encode_frame_parts(h, payload, Utf8::kReplace));
    return owning(std::move(frame), made);
}

std::vector<int> reply_fds(const Reply& reply) {
    std::vector<int> fds;
    if (!reply.result) {
        return fds;
    }
    if (const auto* p = std::get_if<SpawnedProcess>(&*reply.result)) {
        for (const UniqueFd* fd : {&p->output, &p->status, &p->input, &p->pidfd}) {
            if (fd->valid()) {
                fds.push_back(fd->get());
            }
        }
    }
    return fds;
}

Result<Reply> decode_reply(Frame& frame, Op op) {
    std::vector<UniqueFd> none;
    return decode_reply(frame, op, none);
}

Result<Reply> decode_reply(Frame& frame, Op op, std::vector<UniqueFd>& fds) {
    // Taken now: whatever the outcome, the caller holds none of them afterwards.
    std::vector<UniqueFd> received = std::move(fds);
    fds.clear();
    try {
        Fields f(frame.header, "reply");
        RETURN_IF_ERROR(check_version(f));
        Reply reply;
        ASSIGN_OR_RETURN(reply.id, f.u64("id"));
        ASSIGN_OR_RETURN(bool ok, f.boolean("ok"));
        if (!received.empty() && (!ok || op != Op::kSpawn)) {
            return malformed(
                fmt::format("reply carries {} unexpected descriptors", received.size()));
        }
        if (!ok) {
            RETURN_IF_ERROR(check_no_payload(frame, "error reply"));
            Error error;
            RETURN_IF_ERROR(error_from(f, error));
            reply.result = std::move(error);
            return reply;
        }
        switch (op) {
            case Op::kHello:
                RETURN_IF_ERROR(check_no_payload(frame, "reply to \"hello\""));
                reply.result = ReplyValue{HelloResult{}};
                break;
            case Op::kStat: {
                RETURN_IF_ERROR(check_no_payload(frame, "reply to \"stat\""));
                ASSIGN_OR_RETURN(FileInfo info, info_from(f, "info"));
                reply.result = ReplyValue{info};
                break;
            }
            case Op::kRead: {
                ReadData d;
                ASSIGN_OR_RETURN(d.info, info_from(f, "info"));
                ASSIGN_OR_RETURN(d.truncated, f.boolean("truncated"));
                if (frame.payload.size() > kMaxPayloadBytes) {
                    return malformed(
                        fmt::format("reply to \"read\" carries {} bytes, above the "
                                    "limit {}",
                                    frame.payload.size(), kMaxPayloadBytes));
                }
                d.bytes = std::move(frame.payload);
                reply.result = ReplyValue{std::move(d)};
                break;
            }
            case Op::kWrite: {
                RETURN_IF_ERROR(check_no_payload(frame, "reply to \"write\""));
                WriteOutcome w;
                ASSIGN_OR_RETURN(w.created, f.boolean("created"));
                ASSIGN_OR_RETURN(w.info, info_from(f, "info"));
                reply.result = ReplyValue{w};
                break;
            }
            case Op::kMkdirs:
                RETURN_IF_ERROR(check_no_payload(frame, "reply to \"mkdirs\""));
                reply.result = ReplyValue{MkdirsResult{}};
                break;
            case Op::kList: {
                RETURN_IF_ERROR(check_no_payload(frame, "reply to \"list\""));
                ASSIGN_OR_RETURN(std::vector<DirEntry> entries, entries_from(f));
                reply.result = ReplyValue{std::move(entries)};
                break;
            }
            case Op::kRg: {
                RgOutcome rg;
                ASSIGN_OR_RETURN(int64_t exit_code, f.i64("exit_code"));
                if (exit_code < -1 || exit_code > 255) {
                    return malformed(
                        fmt::format("reply: rg exit code {} is out of range", exit_code));
                }
                rg.exit_code = static_cast<int>(exit_code);
                ASSIGN_OR_RETURN(rg.truncated, f.boolean("truncated"));
                ASSIGN_OR_RETURN(rg.timed_out, f.boolean("timed_out"));
                ASSIGN_OR_RETURN(uint64_t out_bytes, f.u64("out_bytes"));
                if (out_bytes > frame.payload.size() || out_bytes > kMaxPayloadBytes) {
                    return malformed(fmt::format(
                        "reply: rg out_bytes {} exceeds the payload of {} bytes or the limit",
                        out_bytes, frame.payload.size()));
                }
                const size_t err_bytes = frame.payload.size() - out_bytes;
                if (err_bytes > kRgMaxErrBytes) {
                    return malformed(
                        fmt::format("reply: rg stderr of {} bytes exceeds the limit {}", err_bytes,
                                    kRgMaxErrBytes));
                }
                rg.err = frame.payload.substr(out_bytes);
                frame.payload.resize(out_bytes);
                rg.out = std::move(frame.payload);
                reply.result = ReplyValue{std::move(rg)};
                break;
            }
            case Op::kSpawn: {
                RETURN_IF_ERROR(check_no_payload(frame, "reply to \"spawn\""));
                ASSIGN_OR_RETURN(uint64_t pid,
                                 f.u64_at_most("pid", static_cast<uint64_t>(kMaxPid)));
                if (pid < static_cast<uint64_t>(kMinPid)) {
                    return malformed(fmt::format("reply: spawn pid {} is out of range", pid));
                }
                ASSIGN_OR_RETURN(bool has_input, f.boolean("has_input"));
                ASSIGN_OR_RETURN(bool has_pidfd, f.boolean("has_pidfd"));
                const size_t announced = 2 + (has_input ? 1U : 0U) + (has_pidfd ? 1U : 0U);
                if (received.size() != announced) {
                    return malformed(
                        fmt::format("reply to \"spawn\" announces {} descriptors but carries {}",
                                    announced, received.size()));
                }
                SpawnedProcess p;
                p.pid = static_cast<int>(pid);
                p.output = std::move(received[0]);
                p.status = std::move(received[1]);
                size_t next = 2;
                if (has_input) {
                    p.input = std::move(received[next++]);
                }
                if (has_pidfd) {
                    p.pidfd = std::move(received[next++]);
                }
                reply.result = ReplyValue{std::move(p)};
                break;
            }
            case Op::kSignal: {
                RETURN_IF_ERROR(check_no_payload(frame, "reply to \"signal\""));
                ASSIGN_OR_RETURN(bool delivered, f.boolean("delivered"));
                reply.result = ReplyValue{SignalResult{delivered}};
                break;
            }
            case Op::kCommands: {
                RETURN_IF_ERROR(check_no_payload(frame, "reply to \"commands\""));
                ASSIGN_OR_RETURN(std::vector<std::string> names,
                                 strings_from(f, "names", kMaxCommandNames));
                for (const std::string& name : names) {
                    RETURN_IF_ERROR(check_entry_name(name));
                }
                reply.result = ReplyValue{CommandsResult{std::move(names)}};
                break;
            }
            case Op::kRealPath: {
                RETURN_IF_ERROR(check_no_payload(frame, "reply to \"realpath\""));
                RealPath r;
                ASSIGN_OR_RETURN(r.path, f.string("path"));
                RETURN_IF_ERROR(check_path(r.path));
                ASSIGN_OR_RETURN(r.exists, f.boolean("exists"));
                reply.result = ReplyValue{std::move(r)};
                break;
            }
            case Op::kCensus: {
                RETURN_IF_ERROR(check_no_payload(frame, "reply to \"census\""));
                ASSIGN_OR_RETURN(reply.result, census_from(f));
                break;
            }
            case Op::kSnapshot: {
                ASSIGN_OR_RETURN(Snapshot s,
                                 decode_snapshot(frame.header, std::move(frame.payload)));
                reply.result = ReplyValue{std::move(s)};
                break;
            }
            case Op::kRestore: {
                RETURN_IF_ERROR(check_no_payload(frame, "reply to \"restore\""));
                ASSIGN_OR_RETURN(RestoreOutcome r, decode_restore_outcome(frame.header));
                reply.result = ReplyValue{std::move(r)};
                break;
            }
        }
        return reply;
    } catch (const std::exception& e) {
        return malformed(fmt::format("reply: {}", e.what()));
    }
}

// ---- Blocking I/O ---------------------------------------------------------------------------

namespace {

// Sends `parts` in order as one stream of bytes, `fds` attached to the first.
Status send_parts(int fd, std::array<std::string_view, 3> parts, std::span<const int> fds,
                  Deadline deadline) {
    if (fds.size() > kMaxFdsPerFrame) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("send frame: {} descriptors exceed the limit {}", fds.size(),
                                 kMaxFdsPerFrame)};
    }
    if (parts[0].empty() && parts[1].empty() && parts[2].empty()) {
        return Error{Errc::kInvalidArgument, "send frame: empty frame"};
    }
    size_t first = 0;  // the first part not wholly sent; its sent bytes are cut off it
    bool fds_sent = fds.empty();
    while (first < parts.size()) {
        // sendmsg takes a non-const iovec base but never writes through it.
        std::array<iovec, 3> iov{};
        size_t n_iov = 0;
        for (size_t i = first; i < parts.size(); ++i) {
            if (!parts[i].empty()) {
                iov[n_iov++] = iovec{const_cast<char*>(parts[i].data()), parts[i].size()};
            }
        }
        if (n_iov == 0) {
            break;
        }
        FdControl<kMaxFdsPerFrame> control;
        msghdr msg{};
        msg.msg_iov = iov.data();
        msg.msg_iovlen = n_iov;
        if (!fds_sent) {
            attach_fds(msg, control, fds);
        }
        ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                RETURN_IF_ERROR(wait_fd(fd, POLLOUT, deadline, "send frame"));
                continue;
            }
            return io_error("send frame", errno);
        }
        fds_sent = true;
        for (auto sent = static_cast<size_t>(n); first < parts.size();) {
            const size_t cut = std::min(sent, parts[first].size());
            parts[first].remove_prefix(cut);
            sent -= cut;
            if (!parts[first].empty()) {
                break;
            }
            ++first;
        }
    }
    return {};
}

}  // namespace

Status send_frame(int fd, std::string_view frame, std::span<const int> fds, Deadline deadline) {
    return send_parts(fd, {frame, {}, {}}, fds, deadline);
}

Status send_frame(int fd, const EncodedFrame& frame, std::span<const int> fds, Deadline deadline) {
    return send_parts(fd, {frame.head, frame.payload[0], frame.payload[1]}, fds, deadline);
}

Result<std::optional<Received>> recv_frame(int fd, Deadline deadline) {
    std::vector<UniqueFd> fds;
    std::array<std::byte, kPrefixBytes> prefix{};
    ASSIGN_OR_RETURN(bool got_prefix,
                     read_exact(fd, reinterpret_cast<char*>(prefix.data()), prefix.size(),
                                /*eof_ok=*/true, deadline, fds));
    if (!got_prefix) {
        return std::optional<Received>{};
    }
    ASSIGN_OR_RETURN(size_t body_len, decode_length_prefix(prefix));  // at least 4
    // The header's length, the header, then the payload into a string of its own: a payload
    // (up to 16 MiB) is read where it stays, never moved down past the header.
    std::array<std::byte, 4> header_prefix{};
    ASSIGN_OR_RETURN(bool got_length,
                     read_exact(fd, reinterpret_cast<char*>(header_prefix.data()),
                                header_prefix.size(), /*eof_ok=*/false, deadline, fds));
    const size_t header_len = load_le32(header_prefix.data());
    RETURN_IF_ERROR(check_header_length(header_len, body_len));
    std::string header(header_len, '\0');
    ASSIGN_OR_RETURN(bool got_header, read_exact(fd, header.data(), header.size(),
                                                 /*eof_ok=*/false, deadline, fds));
    std::string payload(body_len - 4 - header_len, '\0');
    ASSIGN_OR_RETURN(bool got_payload, read_exact(fd, payload.data(), payload.size(),
                                                  /*eof_ok=*/false, deadline, fds));
    (void)got_length;
    (void)got_header;
    (void)got_payload;
    ASSIGN_OR_RETURN(Frame frame, frame_from(header, std::move(payload)));
    return std::optional<Received>{Received{std::move(frame), std::move(fds)}};
}

}  // namespace stockade::workspace::channel
