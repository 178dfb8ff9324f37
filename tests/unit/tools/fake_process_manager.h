// An in-memory tools::ProcessManager for the bash and process tool tests: scripted processes
// (their output, how and when they end, what they answer on stdin) and a record of every call
// the tools made (starts, kills, adoptions, cursors, bytes served). Nothing runs and nothing
// sleeps: wait_exit returns at once, as if the process ended (or the deadline passed, for a
// script that keeps running). The real ProcessManager has its own tests in tests/unit/runner.
//
// Header-only: every tests/unit/tools/*_test.cc is its own binary.
#pragma once

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/unit/tools/tool_harness.h"
#include "tools/process_manager.h"
#include "tools/process_tools.h"

namespace stockade::tools::testing {

inline constexpr const char* kLogDir = "/state/process-logs/s1";

struct FakeScript {
    std::string output{};         // written before anyone waits (what start sees)
    std::string final_output{};   // written while wait_exit waits, before it ends
    bool keeps_running = false;   // wait_exit returns with the process still running
    bool exits_at_start = false;  // ended before start() returns (an instant crash)
    ProcessState end_state = ProcessState::kExited;
    std::optional<int> exit_code = 0;
    std::optional<int> signal{};
    std::chrono::milliseconds runtime{3200};
    bool output_closed = true;  // false: a background child still holds the output
    // Processes it left running when it ended, which the sandbox stopped: their names.
    std::vector<std::string> leftovers{};
    uint64_t log_dropped = 0;      // bytes its log lacks (the session's output budget ran out)
    bool log_end_dropped = false;  // ... its end among them
    std::vector<NetworkRefusal> network_refused{};  // what the allowlist proxy refused it
    std::string write_response{};                   // appended to the output on every write()
    std::optional<Error> start_error{};
    std::optional<Error> write_error{};
    int ticks = 0;                        // wait_exit calls its tick this many times (1 s apart)
    int stop_signal = 15;                 // how stop() ends it
    std::optional<int> stop_exit_code{};  // instead: it handled SIGTERM and exited with this
    bool exits_during_stop = false;       // it exited on its own before the signal landed
};

class FakeProcessManager final : public ProcessManager {
public:
    struct Proc {
        ProcessInfo info;
        FakeScript script;
        std::string data;
        uint64_t cursor = 0;
    };

    // ---- Scripting ---------------------------------------------------------------------------

    std::map<std::string, FakeScript> scripts;  // by StartRequest::command
    FakeScript fallback{};
    ProcessLoad load_answer{.total = 3, .limit = 4096};  // what load() answers
    std::vector<std::string> path{"cat",  "git", "grep", "ls",      "make",
                                  "node", "npm", "npx",  "python3", "pytest"};

    // Adds a background process as if `process start` had run it (for list/read/... tests).
    Proc& add_background(const std::string& command, FakeScript script,
                         ProcessState state = ProcessState::kRunning) {
        Proc& p = make(command, std::move(script), true);
        p.info.state = state;
        if (state != ProcessState::kRunning) {
            p.info.exit_code = p.script.exit_code;
            p.info.signal = p.script.signal;
            p.info.output_closed = true;
        }
        return p;
    }
    Proc& proc(const std::string& id) {
        for (auto& p : procs_) {
            if (p->info.id == id) {
                return *p;
            }
        }
        ADD_FAILURE() << "no fake process " << id;
        return *procs_.front();
    }
    void append(const std::string& id, const std::string& bytes) {
        Proc& p = proc(id);
        p.data += bytes;
        sync(p);
    }

    // ---- Record ----------------------------------------------------------------------------

    std::vector<StartRequest> starts;
    std::vector<std::string> killed, forgotten, stopped;
    std::vector<std::pair<std::string, std::string>> writes;
    std::vector<std::pair<std::string, std::string>> adopted;  // {foreground id, public id}
    std::vector<std::string> wait_exit_calls;
    uint64_t bytes_served = 0;  // through output()
    std::chrono::steady_clock::duration last_wait_budget{};

    // ---- ProcessManager ----------------------------------------------------------------------

    Result<ProcessInfo> start(const StartRequest& request) override {
        starts.push_back(request);
        const auto it = scripts.find(request.command);
        FakeScript script = it == scripts.end() ? fallback : it->second;
        if (script.start_error) {
            return *script.start_error;
        }
        Proc& p = make(request.command, std::move(script), request.background);
        p.info.cwd = request.cwd_display;
        p.info.pty = request.pty;
        if (p.script.exits_at_start) {
            end(p);
        }
        return p.info;
    }

    std::vector<ProcessInfo> list() override {
        std::vector<ProcessInfo> out;
        for (const auto& p : procs_) {
            if (p->info.background) {
                out.push_back(p->info);
            }
        }
        return out;
    }

    Result<ProcessInfo> info(const std::string& id) override {
        for (const auto& p : procs_) {
            if (p->info.id == id) {
                return p->info;
            }
        }
        return Error{Errc::kNotFound, "no process " + id};
    }

    Result<std::vector<std::string>> path_commands() override { return path; }

    Result<ProcessInfo> wait_exit(const std::string& id,
                                  std::chrono::steady_clock::time_point until, std::stop_token stop,
                                  const std::function<void(const ProcessInfo&)>& tick) override {
        wait_exit_calls.push_back(id);
        last_wait_budget = until - std::chrono::steady_clock::now();
        ASSIGN_OR_RETURN(Proc * p, find(id));
        if (p->info.state != ProcessState::kRunning) {
            return p->info;
        }
        for (int i = 1; i <= p->script.ticks; ++i) {
            p->info.runtime = std::chrono::milliseconds(1000 * i);
            if (tick) {
                tick(p->info);
            }
        }
        p->info.runtime = p->script.runtime;
        if (stop.stop_requested() || p->script.keeps_running) {
            return p->info;
        }
        p->data += p->script.final_output;
        end(*p);
        return p->info;
    }

    Result<ProcessInfo> wait_output(const std::string& id, uint64_t /*after_bytes*/,
                                    std::chrono::steady_clock::time_point /*until*/,
                                    std::chrono::milliseconds /*settle*/,
                                    std::stop_token /*stop*/) override {
        ASSIGN_OR_RETURN(Proc * p, find(id));
        return p->info;
    }

    Result<OutputSlice> output(const std::string& id, uint64_t from, uint64_t max_bytes) override {
        ASSIGN_OR_RETURN(Proc * p, find(id));
        OutputSlice s;
        s.begin = std::min<uint64_t>(from, p->data.size());
        s.bytes = p->data.substr(s.begin, max_bytes);
        s.first_line =
            1 + static_cast<uint64_t>(std::count(
                    p->data.begin(), p->data.begin() + static_cast<std::ptrdiff_t>(s.begin), '\n'));
        bytes_served += s.bytes.size();
        return s;
    }

    Result<uint64_t> line_start(const std::string& id, uint64_t line) override {
        ASSIGN_OR_RETURN(Proc * p, find(id));
        uint64_t seen = 1;
        for (size_t i = 0; i < p->data.size() && seen < line; ++i) {
            if (p->data[i] == '\n') {
                ++seen;
                if (seen == line) {
                    return static_cast<uint64_t>(i + 1);
                }
            }
        }
        return line <= 1 ? uint64_t{0} : static_cast<uint64_t>(p->data.size());
    }

    Result<uint64_t> cursor(const std::string& id) override {
        ASSIGN_OR_RETURN(Proc * p, find(id));
        return p->cursor;
    }
    Status set_cursor(const std::string& id, uint64_t offset) override {
        ASSIGN_OR_RETURN(Proc * p, find(id));
        p->cursor = std::min<uint64_t>(offset, p->data.size());
        return {};
    }

    Result<size_t> write(const std::string& id, std::string_view bytes) override {
        ASSIGN_OR_RETURN(Proc * p, find(id));
        if (p->script.write_error) {
            return *p->script.write_error;
        }
        if (p->info.state != ProcessState::kRunning) {
            return Error{Errc::kFailedPrecondition, "the process has ended"};
        }
        writes.emplace_back(id, std::string(bytes));
        p->data += p->script.write_response;
        sync(*p);
        return bytes.size();
    }

    Result<ProcessInfo> stop(const std::string& id, std::chrono::milliseconds /*grace*/) override {
        stopped.push_back(id);
        ASSIGN_OR_RETURN(Proc * p, find(id));
        if (p->info.state == ProcessState::kRunning) {
            if (p->script.exits_during_stop) {
                end(*p);
            } else {
                p->info.state = ProcessState::kStopped;
                p->info.output_closed = true;
                p->info.leftovers = static_cast<uint32_t>(p->script.leftovers.size());
                p->info.leftover_names = p->script.leftovers;
                if (p->script.stop_exit_code) {
                    p->info.exit_code = p->script.stop_exit_code;
                } else {
                    p->info.signal = p->script.stop_signal;
                }
            }
        }
        return p->info;
    }

    Status kill(const std::string& id) override {
        killed.push_back(id);
        ASSIGN_OR_RETURN(Proc * p, find(id));
        if (p->info.state == ProcessState::kRunning) {
            p->info.state = ProcessState::kStopped;
            p->info.signal = 9;
            p->info.output_closed = true;
        }
        return {};
    }

    Result<ProcessLoad> load() override {
        ProcessLoad out = load_answer;
        return out;
    }

    Result<std::string> adopt(const std::string& id) override {
        ASSIGN_OR_RETURN(Proc * p, find(id));
        const std::string public_id = "p" + std::to_string(next_public_++);
        adopted.emplace_back(id, public_id);
        p->info.id = public_id;
        p->info.background = true;
        p->info.log_path = std::string(kLogDir) + "/" + public_id + ".log";
        return public_id;
    }

    void forget(const std::string& id) override {
        forgotten.push_back(id);
        procs_.erase(
            std::remove_if(procs_.begin(), procs_.end(),
                           [&](const auto& p) { return p->info.id == id && !p->info.background; }),
            procs_.end());
    }

    [[nodiscard]] size_t process_count() const { return procs_.size(); }

private:
    Proc& make(const std::string& command, FakeScript script, bool background) {
        auto p = std::make_unique<Proc>();
        p->info.id =
            background ? "p" + std::to_string(next_public_++) : "fg-" + std::to_string(next_fg_++);
        p->info.pid = 41000 + static_cast<int>(procs_.size()) * 7;
        p->info.command = command;
        p->info.cwd = kWorkspaceDisplay;
        p->info.log_path = std::string(kLogDir) + "/" + p->info.id + ".log";
        p->info.background = background;
        p->info.pty = true;
        p->info.runtime = script.runtime;
        p->script = std::move(script);
        p->data = p->script.output;
        sync(*p);
        procs_.push_back(std::move(p));
        return *procs_.back();
    }

    void end(Proc& p) {
        p.info.state = p.script.end_state;
        p.info.exit_code = p.script.exit_code;
        p.info.signal = p.script.signal;
        p.info.output_closed = p.script.output_closed;
        p.info.runtime = p.script.runtime;
        p.info.leftovers = static_cast<uint32_t>(p.script.leftovers.size());
        p.info.leftover_names = p.script.leftovers;
        p.info.log_dropped = p.script.log_dropped;
        p.info.log_end_dropped = p.script.log_end_dropped;
        p.info.network_refused = p.script.network_refused;
        sync(p);
    }

    static void sync(Proc& p) {
        p.info.output_bytes = p.data.size();
        const auto breaks = static_cast<uint64_t>(std::count(p.data.begin(), p.data.end(), '\n'));
        p.info.output_lines = breaks + (!p.data.empty() && p.data.back() != '\n' ? 1 : 0);
    }

    Result<Proc*> find(const std::string& id) {
        for (auto& p : procs_) {
            if (p->info.id == id) {
                return p.get();
            }
        }
        return Error{Errc::kNotFound, "no process " + id};
    }

    std::vector<std::unique_ptr<Proc>> procs_;
    int next_public_ = 1;
    int next_fg_ = 1;
};

// The file-tool harness (fake workspace at /work/proj, spill store) plus the fake process
// manager and the bash and process tools.
class ProcessToolHarness {
public:
    ProcessToolHarness() {
        base.ctx.processes = &pm;
        for (auto& t : make_process_tools()) {
            tools_[std::string(t->name())] = std::move(t);
        }
    }

    // parse (validate) → execute → backstop, as the executor does.
    ToolResult call(const std::string& tool, const nlohmann::json& args) {
        const Tool& t = *tools_.at(tool);
        ToolResult r = t.execute(args, base.ctx);
        apply_backstop(r, base.ctx, tool);
        return r;
    }
    Tool& tool(const std::string& name) { return *tools_.at(name); }

    ToolHarness base;
    FakeProcessManager pm;

private:
    std::map<std::string, std::unique_ptr<Tool>> tools_;
};

}  // namespace stockade::tools::testing
