// The worker channel, protocol version 1: the one interface between the supervisor and the
// sandbox worker (DESIGN.md §1). A small typed message set over a unix SOCK_STREAM socketpair.
//
// Frame (all integers little-endian):
//   u32 total length   the whole frame, these 4 bytes included; at most kMaxFrameBytes
//   u32 header length  bytes of header JSON that follow
//   header             UTF-8 JSON object, nesting depth at most kMaxHeaderDepth
//   payload            the rest of the frame: raw bytes (file contents, rg output), never JSON
// Descriptors travel as SCM_RIGHTS on the frame's bytes (at most kMaxFdsPerFrame).
//
// Why SOCK_STREAM: a frame can be 24 MiB and SOCK_SEQPACKET caps a datagram at the socket's
// send buffer (a few hundred KiB by default), so frames need their own length prefix anyway.
// SCM_RIGHTS works on stream sockets too: the kernel never merges data carrying descriptors
// with data sent before it, so the descriptors arrive with the frame they were sent with.
//
// Requests:  {"v":1,"id":N,"op":"hello|stat|read|write|mkdirs|list|rg|spawn|signal|commands",
//             ...arguments}
//   stat, mkdirs   "root":"workspace|spill", "path":"a/b"
//   read           + "max_bytes":N
//   write          + "make_parents":bool, optional "mode":N; payload = the file's bytes
//   list           + "max_entries":N
//   rg             "root", "args":[...], "max_output_bytes":N, "timeout_ms":N
//   spawn          "argv":[...] (1..kMaxSpawnArgs), "cwd":"a/b", "env":["NAME=VALUE", ...],
//                  "pty":bool, "interactive":bool, "rows":N, "cols":N (1..kMaxPtyDimension)
//   signal         "pgid":N, "signal":N (0..kMaxSignal)
//   commands       nothing more
//   snapshot       workspace/snapshot.h: "reset", "max_file_bytes", "max_reply_bytes",
//                  "max_entries", "seed":N; payload = the seed's records
//   restore        "actions":[[kind, path, mode, length], ...]; payload = their data
// Replies:   {"v":1,"id":N,"ok":true, ...results}
//   stat           "info":{"type":"file|directory|symlink|other","size":N,"mtime_ns":N,"mode":N}
//   read           "info", "truncated":bool; payload = the bytes read
//   write          "created":bool, "info"
//   list           "entries":[{"name":"x","type":"file","size":N,"mtime_ns":N}, ...] sorted
//                  by name; a name that is not UTF-8 is sent with U+FFFD replacements (so two
//                  names can arrive equal) and the list is sorted again after replacing
//   rg             "exit_code":N, "truncated":bool, "timed_out":bool, "out_bytes":N;
//                  payload = stdout (out_bytes) then stderr (the rest)
//   spawn          "pid":N (kMinPid..kMaxPid), "has_input":bool, "has_pidfd":bool; the
//                  descriptors travel with the frame in this order: output, status, [input],
//                  [pidfd] — exactly as many as announced
//   signal         "delivered":bool
//   commands       "names":[...] sorted, unique, at most kMaxCommandNames, each a file name
//   snapshot       "changed":[[path, type, mode, size, mtime, ctime, ino, target, too_large,
//                  length], ...], "removed":[...], "more", "scanned", "skipped"; payload =
//                  the changed files' bytes in order
//   restore        "applied":N, "failed":[[index, message], ...]
//   hello, mkdirs  nothing more
//            {"v":1,"id":N,"ok":false,"error":{"code":"not-found","message":"...","errno":N}}
// Replies do not name their op: the requester knows what it asked (decode_reply takes it).
// Replies may come in another order than their requests (the worker answers rg when rg ends and
// every other request at once): the id says which request a reply answers.
// Only a spawn reply carries descriptors; any other frame that does is malformed.
// Every frame carries "v"; a frame of another version is a decode error naming both versions,
// so the first exchange (hello) detects a mismatched worker.
//
// Decoding never throws and never trusts a length: a malformed frame is an Error with code
// kInvalidArgument (kFailedPrecondition for a version mismatch).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "common/unique_fd.h"
#include "workspace/snapshot.h"
#include "workspace/workspace.h"

namespace stockade::workspace::channel {

inline constexpr uint32_t kVersion = 1;
inline constexpr size_t kPrefixBytes = 4;             // the u32 total length
inline constexpr size_t kMinFrameBytes = 8;           // both length fields
inline constexpr size_t kMaxFrameBytes = 24 << 20;    // whole frame
inline constexpr size_t kMaxPayloadBytes = 16 << 20;  // read max_bytes, write bytes, rg output
inline constexpr size_t kMaxListEntries = 10'000;
inline constexpr size_t kMaxPathBytes = 4096;  // PATH_MAX
inline constexpr size_t kMaxRgArgs = 1024;
inline constexpr size_t kMaxRgArgBytes = 64 << 10;
inline constexpr size_t kMaxErrorMessageBytes = 16 << 10;
inline constexpr std::chrono::milliseconds kMaxRgTimeout{24 * 3600 * 1000};
inline constexpr size_t kMaxHeaderDepth = 8;
inline constexpr size_t kMaxFdsPerFrame = 4;
inline constexpr size_t kMaxSpawnArgs = 1024;
inline constexpr size_t kMaxSpawnArgBytes = 64 << 10;  // one argv or env entry
inline constexpr size_t kMaxSpawnEnv = 1024;
inline constexpr uint16_t kMaxPtyDimension = 1000;  // rows and cols
inline constexpr int kMinPid = 2;                   // 1 is the worker itself
inline constexpr int kMaxPid = 4'194'304;           // PID_MAX_LIMIT
inline constexpr int kMaxSignal = 64;               // SIGRTMAX
inline constexpr size_t kMaxCommandNames = 20'000;
inline constexpr size_t kMaxCensusSessions = 65'536;

// ---- Frames (pure) --------------------------------------------------------------------------

struct Frame {
    nlohmann::json header = nlohmann::json::object();
    std::string payload{};
};

// How strings that are not valid UTF-8 are encoded: requests refuse them (a path must not
// silently change), replies replace them with U+FFFD (a file name from the disk).
enum class Utf8 : uint8_t { kStrict, kReplace };

// Serialises header + payload into one frame. Fails when the frame would exceed
// kMaxFrameBytes (kResourceExhausted) or, with kStrict, a string is not UTF-8 (kInvalidArgument).
Result<std::string> encode_frame(const nlohmann::json& header, std::string_view payload,
                                 Utf8 utf8 = Utf8::kStrict);

// A frame as it is sent: the two lengths and the header, then a payload in up to two parts
// borrowed from the message it was encoded from (a write's bytes, a read's, rg's output and
// errors: up to 16 MiB, sent from where they are, never copied into one buffer). Keep the
// message alive until the frame is sent.
struct EncodedFrame {
    std::string head{};
    std::array<std::string_view, 2> payload{};
};
// encode_frame's checks, without the copy; a payload made for the frame is appended to head.
Result<EncodedFrame> encode_frame_parts(const nlohmann::json& header,
                                        std::array<std::string_view, 2> payload,
                                        Utf8 utf8 = Utf8::kStrict);

// Checks the u32 total length read from the first kPrefixBytes of a frame; returns the number
// of bytes that follow it.
Result<size_t> decode_length_prefix(std::span<const std::byte, kPrefixBytes> prefix);
// Decodes everything after the total length: header length, header, payload.
Result<Frame> decode_frame_body(std::span<const std::byte> body);
// Decodes one whole frame; its total length must be exactly bytes.size().
Result<Frame> decode_frame(std::span<const std::byte> bytes);

// ---- Messages (pure) ------------------------------------------------------------------------

// The order of Op is the order of the RequestArgs and ReplyValue alternatives.
enum class Op : uint8_t {
    kHello,
    kStat,
    kRead,
    kWrite,
    kMkdirs,
    kList,
    kRg,
    kSpawn,
    kSignal,
    kCommands,
    kRealPath,
    kCensus,
    kSnapshot,
    kRestore,
};
std::string_view op_name(Op op) noexcept;
std::optional<Op> op_from_name(std::string_view name) noexcept;
std::string_view root_name(Root root) noexcept;
std::string_view file_type_name(FileType type) noexcept;
std::optional<Errc> errc_from_name(std::string_view name) noexcept;

struct HelloArgs {};
struct StatArgs {
    Root root = Root::kWorkspace;
    std::string path{};
};
struct ReadArgs {
    Root root = Root::kWorkspace;
    std::string path{};
    uint64_t max_bytes = 0;
};
struct MkdirsArgs {
    Root root = Root::kWorkspace;
    std::string path{};
};
struct ListArgs {
    Root root = Root::kWorkspace;
    std::string path{};
    uint64_t max_entries = 0;
};
// The epoch of a ProcessGroupRef stays on the supervisor's side: the worker has only one.
struct SignalArgs {
    int pgid = 0;
    int signal = 0;
};
struct CommandsArgs {};
struct RealPathArgs {
    Root root = Root::kWorkspace;
    std::string path{};
};
struct CensusArgs {};
using RequestArgs = std::variant<HelloArgs, StatArgs, ReadArgs, WriteRequest, MkdirsArgs, ListArgs,
                                 RgRequest, SpawnRequest, SignalArgs, CommandsArgs, RealPathArgs,
                                 CensusArgs, SnapshotRequest, RestoreRequest>;

struct Request {
    uint64_t id = 0;
    RequestArgs args{};
};
Op op_of(const RequestArgs& args) noexcept;

struct HelloResult {};
struct MkdirsResult {};
struct SignalResult {
    bool delivered = false;
};
struct CommandsResult {
    std::vector<std::string> names{};
};
// Move-only: a SpawnedProcess owns its descriptors.
using ReplyValue = std::variant<HelloResult, FileInfo, ReadData, WriteOutcome, MkdirsResult,
                                std::vector<DirEntry>, RgOutcome, SpawnedProcess, SignalResult,
                                CommandsResult, RealPath, ProcessCensus, Snapshot, RestoreOutcome>;
Op op_of(const ReplyValue& value) noexcept;

struct Reply {
    uint64_t id = 0;
    Result<ReplyValue> result = ReplyValue{};
};

// The limits every request must meet, checked on both sides: a path of at most kMaxPathBytes
// without NUL, read/write/rg sizes within kMaxPayloadBytes, list within kMaxListEntries, rg
// arguments without NUL, a mode within 07777; spawn: 1..kMaxSpawnArgs arguments and at most
// kMaxSpawnEnv "NAME=VALUE" entries, each within kMaxSpawnArgBytes and without NUL, a PTY
// size within 1..kMaxPtyDimension; signal: a pgid within 0..kMaxPid, a signal within
// 0..kMaxSignal (refusing groups <= 1 is the worker's decision, with its own message).
Status validate_request(const Request& request);

// The decoders move the payload out of `frame` (a write's bytes, a read's, rg's output: up to
// 16 MiB each, never copied); its header stays, for recover_id.
Result<std::string> encode_request(const Request& request);
// The same frame in parts, borrowing the arguments: `args` as request `id` need not be copied
// into a Request (a write's bytes).
Result<EncodedFrame> encode_request_parts(uint64_t id, const RequestArgs& args);
// A write request sent from `request` itself: callers that hold a WriteRequest by reference do
// not copy its bytes into a RequestArgs to send them.
Result<EncodedFrame> encode_write_request(uint64_t id, const WriteRequest& request);
Result<Request> decode_request(Frame& frame);
// The id of a frame whose request did not decode, when it has one.
std::optional<uint64_t> recover_id(const Frame& frame) noexcept;

// Checks what holds for any reply (names without '/', known codes, an rg exit code in -1..255,
// stdout within the payload, a spawn's pid in range and its output and status descriptors
// present); what depends on the request (sizes asked for) is the caller's. The descriptors of
// a spawn reply are not in the frame: send reply_fds(reply) with it.
Result<std::string> encode_reply(const Reply& reply);
// The same frame in parts, borrowing a read's bytes and rg's output from `reply`.
Result<EncodedFrame> encode_reply_parts(const Reply& reply);
// The descriptors to attach to the encoded reply, in wire order (spawn: output, status,
// [input], [pidfd]; every other reply: none). They stay owned by `reply`: keep it alive until
// the frame is sent.
std::vector<int> reply_fds(const Reply& reply);
// `fds`: the descriptors that arrived with the frame. decode_reply takes them all (the vector
// is left empty): a spawn reply keeps them in its SpawnedProcess, anything else closes them.
// A reply carrying another number of descriptors than it announces is malformed.
Result<Reply> decode_reply(Frame& frame, Op op, std::vector<UniqueFd>& fds);
// For a frame that came without descriptors.
Result<Reply> decode_reply(Frame& frame, Op op);

// ---- Blocking I/O over a unix stream socket -------------------------------------------------

using Deadline = std::optional<std::chrono::steady_clock::time_point>;

// Writes one encoded frame, with `fds` attached to its first byte. MSG_NOSIGNAL: a closed peer
// is an Error (kUnavailable), never SIGPIPE. kDeadlineExceeded if the peer stops reading.
Status send_frame(int fd, std::string_view frame, std::span<const int> fds = {},
                  Deadline deadline = std::nullopt);
// The same for a frame in parts, gathered by sendmsg.
Status send_frame(int fd, const EncodedFrame& frame, std::span<const int> fds = {},
                  Deadline deadline = std::nullopt);

struct Received {
    Frame frame{};
    std::vector<UniqueFd> fds{};  // descriptors that came with the frame (CLOEXEC)
};
// Reads one frame. nullopt: the peer closed the channel cleanly between frames. Errors:
// kUnavailable (closed mid-frame, I/O error), kDeadlineExceeded, kInvalidArgument (malformed
// frame: after one, the stream cannot be trusted to be in sync).
Result<std::optional<Received>> recv_frame(int fd, Deadline deadline = std::nullopt);

}  // namespace stockade::workspace::channel
