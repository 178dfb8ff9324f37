// The ProcessManager seen by the `bash` and `process` tools (TOOL_PROTOCOL §8.2, DESIGN.md §1).
// The runner implements it (runner/session/process_manager.h): commands run in the session's
// sandbox, while the supervisor reads their output (a ring buffer per process plus a log file that
// keeps everything), owns their clocks and stops them. Tools only format what it reports.
//
// Output is addressed by byte offset in the process's log (0-based) and by 1-based line:
// line N starts after the (N-1)th '\n'. A trailing partial line (a prompt such as ">>> ")
// counts as a line. Bytes are exactly what the process wrote (ANSI, \r included).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace stockade::tools {

enum class ProcessState : uint8_t {
    kRunning,
    kExited,   // the leader exited on its own (or was killed by a signal nobody here sent)
    kStopped,  // stopped through stop() or kill()
    kFailed,   // lost: the sandbox worker died under it; `failure` says why
};
std::string_view process_state_name(ProcessState state) noexcept;  // "running", "exited", ...

// Connections a command's network proxy refused (network mode allowlist), connections it
// allowed but could not make (the name did not resolve, the server did not answer), and DNS
// queries the sandbox's resolver refused (every query, in network modes none and allowlist), by
// target.
struct NetworkRefusal {
    std::string host{};  // as the command asked for it; "" for all targets past the cap
    uint16_t port = 0;   // 0 for a DNS query
    uint32_t count = 0;
    std::string reason{};    // "not in the allowlist", "resolves to a private address (...)"
    std::string hint{};      // what would allow it; may be empty
    bool dns = false;        // DNS queries for `host`, not connections to it
    bool unreached = false;  // allowed, but the proxy could not make the connection

    friend bool operator==(const NetworkRefusal&, const NetworkRefusal&) = default;
};

struct ProcessInfo {
    std::string id{};  // "p3": session-scoped handle, not the OS pid
    int pid = 0;       // the leader's pid inside the sandbox
    std::string command{};
    std::string cwd{};       // as the model sees it
    std::string log_path{};  // the full output; readable (read-only) inside the sandbox
    ProcessState state = ProcessState::kRunning;
    std::optional<int> exit_code{};  // it exited with this code
    std::optional<int> signal{};     // it was killed by this signal
    bool background = true;          // false while a bash call waits on it in the foreground
    bool pty = false;
    std::chrono::system_clock::time_point started_at{};
    std::chrono::milliseconds runtime{0};  // until now, or until it ended
    uint64_t output_bytes = 0;             // everything it wrote so far
    uint64_t output_lines = 0;             // '\n'-terminated lines, plus one for a partial line
    bool output_closed = false;            // EOF: no process holds its output any more
    std::string failure{};                 // kFailed: why
    // Once its output is closed: bytes its log lacks (its cap or the session's output budget
    // was reached; the log says where). They are from the middle when the log ends with the
    // tail, or from the end when there was no room for the tail either (log_end_dropped).
    uint64_t log_dropped = 0;
    bool log_end_dropped = false;
    // When the leader ended: processes it had started and left running (a daemon, a job sent
    // to the background, `setsid`), which the sandbox then stopped, and their names (the
    // first few).
    uint32_t leftovers = 0;
    std::vector<std::string> leftover_names{};
    // Network mode allowlist: the connections its proxy refused it (and what it started).
    std::vector<NetworkRefusal> network_refused{};
};

// How many processes the sandbox holds (ProcessManager::load): against its limit, and which
// running background process holds how many of them.
struct ProcessLoad {
    uint32_t total = 0;               // every process of the sandbox but its worker
    std::optional<uint64_t> limit{};  // the sandbox's process limit, when it has one
    struct Holder {
        std::string id{};  // "p3"
        std::string command{};
        uint32_t processes = 0;  // the leader and everything beneath it
    };
    std::vector<Holder> holders{};  // running background processes, most processes first
    uint32_t elsewhere = 0;         // in none of them: a bash call's, or leftovers going down
};

struct StartRequest {
    std::string command{};            // what the model asked for; shown by list
    std::vector<std::string> argv{};  // what runs: {"/bin/bash", "-c", command} or direct argv
    std::string cwd{};                // relative to the workspace root, "" = the root
    std::string cwd_display{};        // absolute, as the model sees it
    bool pty = true;
    // PTY as controlling terminal and stdin (process); false: stdin is /dev/null (bash).
    bool interactive = false;
    bool background = true;  // false: a bash call waits on it; adopt() moves it to the background
    std::vector<std::string> env{};  // extra NAME=VALUE entries
    std::string call_id{};           // the tool call that started it (for the event log)
};

struct OutputSlice {
    uint64_t begin = 0;       // byte offset of bytes[0]
    uint64_t first_line = 1;  // 1-based line number of the line that contains `begin`
    std::string bytes{};
};

class ProcessManager {
public:
    virtual ~ProcessManager() = default;

    // Spawns in the session sandbox and starts reading its output. Errors: kNotFound
    // "<argv[0]>: command not found"; kInvalidArgument for a bad cwd; kResourceExhausted when
    // too many processes are running; anything the worker reports.
    virtual Result<ProcessInfo> start(const StartRequest& request) = 0;
    // The background processes of the session (started by `process start` or adopted), in
    // start order.
    virtual std::vector<ProcessInfo> list() = 0;
    // kNotFound for an unknown id.
    virtual Result<ProcessInfo> info(const std::string& id) = 0;
    // The names of the executables on the sandbox's PATH (for "Did you mean …?"), sorted.
    virtual Result<std::vector<std::string>> path_commands() = 0;
    // Counts the sandbox's processes now (for `process list`, and for saying what holds a
    // full process limit).
    virtual Result<ProcessLoad> load() = 0;

    // Blocks until the process has ended and its output is drained, `until` passes, or `stop`
    // is requested; returns the info at that moment. Drained: EOF on the output, or 100 ms
    // without output after the leader ended (a background child may keep the output open).
    // `tick` (may be empty) is called about once a second while waiting.
    virtual Result<ProcessInfo> wait_exit(const std::string& id,
                                          std::chrono::steady_clock::time_point until,
                                          std::stop_token stop,
                                          const std::function<void(const ProcessInfo&)>& tick) = 0;
    // Blocks until the output holds more than `after_bytes` bytes, the process ends, `until`
    // passes or `stop` is requested; then keeps waiting (never past `until`) while output is
    // still arriving, until it has been quiet for `settle`. Returns the info at that moment.
    virtual Result<ProcessInfo> wait_output(const std::string& id, uint64_t after_bytes,
                                            std::chrono::steady_clock::time_point until,
                                            std::chrono::milliseconds settle,
                                            std::stop_token stop) = 0;

    // Up to `max_bytes` of output from byte `from` (clamped to what exists): from the ring
    // buffer while it holds them, else from the log.
    virtual Result<OutputSlice> output(const std::string& id, uint64_t from,
                                       uint64_t max_bytes) = 0;
    // Byte offset at which 1-based `line` starts; past the last line: output_bytes.
    virtual Result<uint64_t> line_start(const std::string& id, uint64_t line) = 0;
    // The read cursor of `process read` (a byte offset; 0 at start).
    virtual Result<uint64_t> cursor(const std::string& id) = 0;
    virtual Status set_cursor(const std::string& id, uint64_t offset) = 0;

    // Sends bytes to its stdin (the PTY, or the stdin pipe). kFailedPrecondition when it has
    // ended or has no stdin.
    virtual Result<size_t> write(const std::string& id, std::string_view bytes) = 0;
    // SIGTERM to the whole process group, `grace`, then SIGKILL; returns once the leader has
    // ended (its state: kStopped, unless it had already ended).
    virtual Result<ProcessInfo> stop(const std::string& id, std::chrono::milliseconds grace) = 0;
    // SIGKILL to the whole process group now (a cancelled bash call); returns at once.
    // Whatever the process started outside its group is stopped by the sandbox once the
    // leader has ended (ProcessInfo::leftovers).
    virtual Status kill(const std::string& id) = 0;
    // Moves a foreground (bash) process to the background: it gets the next public id ("p4"),
    // which is returned, and from then on `list` shows it. Foreground processes have internal
    // ids ("fg-7") and are not listed; they are forgotten once their bash call has returned
    // (forget()).
    virtual Result<std::string> adopt(const std::string& id) = 0;
    // Drops a foreground process that ended (its log stays on disk).
    virtual void forget(const std::string& id) = 0;
};

}  // namespace stockade::tools
