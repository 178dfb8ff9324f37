// Test support for the file tools: a Workspace over two mkdtemp directories (the workspace and
// the spill directory) that shows them to the tools at fixed paths (/work/proj and
// /state/tool-output/s1, so outputs are stable for golden files) and runs the real `rg` with
// cwd = the root; a spill store and an event recorder; and golden-file comparison.
//
// Header-only: every tests/unit/tools/*_test.cc is its own binary.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/testing/golden.h"
#include "tools/file_locks.h"
#include "tools/file_stamps.h"
#include "tools/tool.h"
#include "workspace/workspace.h"

extern char** environ;

namespace stockade::tools::testing {

inline constexpr const char* kWorkspaceDisplay = "/work/proj";
inline constexpr const char* kSpillDisplay = "/state/tool-output/s1";

inline std::string make_temp_dir(const char* tag) {
    std::string tmpl =
        std::filesystem::temp_directory_path().string() + "/stockade-" + tag + "-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) == nullptr) {
        ADD_FAILURE() << "mkdtemp failed";
        return {};
    }
    return std::string(buf.data());
}

inline workspace::FileInfo info_of(const struct stat& st) {
    workspace::FileInfo info;
    if (S_ISREG(st.st_mode)) {
        info.type = workspace::FileType::kFile;
    } else if (S_ISDIR(st.st_mode)) {
        info.type = workspace::FileType::kDirectory;
    } else if (S_ISLNK(st.st_mode)) {
        info.type = workspace::FileType::kSymlink;
    } else {
        info.type = workspace::FileType::kOther;
    }
    info.size = static_cast<uint64_t>(st.st_size);
    info.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    info.mode = st.st_mode & 07777U;
    return info;
}

class TempWorkspace final : public workspace::Workspace {
public:
    TempWorkspace() : ws_dir_(make_temp_dir("ws")), spill_dir_(make_temp_dir("spill")) {}
    ~TempWorkspace() override {
        std::error_code ec;
        std::filesystem::remove_all(ws_dir_, ec);
        std::filesystem::remove_all(spill_dir_, ec);
    }
    TempWorkspace(const TempWorkspace&) = delete;
    TempWorkspace& operator=(const TempWorkspace&) = delete;

    [[nodiscard]] std::string root_path(workspace::Root root) const override {
        return root == workspace::Root::kWorkspace ? kWorkspaceDisplay : kSpillDisplay;
    }
    [[nodiscard]] std::string real(workspace::Root root, const std::string& rel) const {
        const std::string& base = root == workspace::Root::kWorkspace ? ws_dir_ : spill_dir_;
        return rel.empty() ? base : base + "/" + rel;
    }

    Result<workspace::FileInfo> stat(workspace::Root root, const std::string& path) override {
        ++stat_calls;
        struct stat st {};
        if (::stat(real(root, path).c_str(), &st) != 0) {
            return errno_error("stat", errno);
        }
        return info_of(st);
    }

    // The temp directory's own symlinks, followed lexically by the host (no sandbox here).
    Result<workspace::RealPath> real_path(workspace::Root root, const std::string& path) override {
        std::error_code ec;
        const std::filesystem::path base = real(root, "");
        const std::filesystem::path resolved =
            std::filesystem::weakly_canonical(real(root, path), ec);
        if (ec) {
            return errno_error("realpath", ec.value());
        }
        const std::string rel = resolved.lexically_relative(base).generic_string();
        return workspace::RealPath{.path = rel == "." ? std::string() : rel,
                                   .exists = std::filesystem::exists(resolved, ec)};
    }

    Result<workspace::ReadData> read(workspace::Root root, const std::string& path,
                                     uint64_t max_bytes) override {
        // As LocalWorkspace: only a regular file is read.
        struct stat st {};
        if (::stat(real(root, path).c_str(), &st) != 0) {
            return errno_error("open", errno);
        }
        if (S_ISDIR(st.st_mode)) {
            return Error{Errc::kFailedPrecondition, "read: it is a directory", EISDIR};
        }
        if (!S_ISREG(st.st_mode)) {
            return Error{Errc::kFailedPrecondition, "read: not a regular file"};
        }
        std::ifstream in(real(root, path), std::ios::binary);
        if (!in) {
            return errno_error("open", errno == 0 ? ENOENT : errno);
        }
        std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        workspace::ReadData data;
        data.info = info_of(st);
        if (bytes.size() > max_bytes) {
            bytes.resize(max_bytes);
            data.truncated = true;
        }
        data.bytes = std::move(bytes);
        return data;
    }

    Result<workspace::WriteOutcome> write(const workspace::WriteRequest& req) override {
        ++write_calls;
        if (req.root == workspace::Root::kSpill) {
            return Error{Errc::kPermissionDenied, "spill is read-only", EROFS};
        }
        const std::string target = real(req.root, req.path);
        const std::filesystem::path parent = std::filesystem::path(target).parent_path();
        if (req.make_parents) {
            std::error_code ec;
            std::filesystem::create_directories(parent, ec);
        }
        workspace::WriteOutcome out;
        struct stat st {};
        uint32_t mode = req.mode.value_or(0644);
        if (::stat(target.c_str(), &st) == 0) {
            mode = st.st_mode & 07777U;
        } else {
            out.created = true;
        }
        const std::string tmp = target + ".stockade-tmp";
        {
            std::ofstream o(tmp, std::ios::binary | std::ios::trunc);
            if (!o) {
                return errno_error("open temp", errno == 0 ? EACCES : errno);
            }
            o << req.bytes;
        }
        ::chmod(tmp.c_str(), mode);
        if (::rename(tmp.c_str(), target.c_str()) != 0) {
            return errno_error("rename", errno);
        }
        ASSIGN_OR_RETURN(out.info, stat(req.root, req.path));
        return out;
    }

    Status make_dirs(workspace::Root root, const std::string& path) override {
        std::error_code ec;
        std::filesystem::create_directories(real(root, path), ec);
        if (ec) {
            return errno_error("mkdir", ec.value());
        }
        return {};
    }

    Result<std::vector<workspace::DirEntry>> list(workspace::Root root, const std::string& path,
                                                  size_t max_entries) override {
        DIR* d = ::opendir(real(root, path).c_str());
        if (d == nullptr) {
            return errno_error("opendir", errno);
        }
        std::vector<workspace::DirEntry> entries;
        while (dirent* e = ::readdir(d)) {
            const std::string name = e->d_name;
            if (name == "." || name == "..") {
                continue;
            }
            struct stat st {};
            const std::string rel = path.empty() ? name : path + "/" + name;
            if (::lstat(real(root, rel).c_str(), &st) != 0) {
                continue;
            }
            const workspace::FileInfo info = info_of(st);
            entries.push_back({name, info.type, info.size, info.mtime_ns});
        }
        ::closedir(d);
        std::sort(entries.begin(), entries.end(),
                  [](const auto& a, const auto& b) { return a.name < b.name; });
        if (entries.size() > max_entries) {
            entries.resize(max_entries);
        }
        return entries;
    }

    Result<workspace::RgOutcome> run_rg(const workspace::RgRequest& req) override {
        ++rg_calls;
        last_rg_args = req.args;
        if (rg_override) {
            return rg_override(req);
        }
        std::vector<std::string> argv_s = {"rg"};
        argv_s.insert(argv_s.end(), req.args.begin(), req.args.end());
        std::vector<char*> argv;
        for (std::string& a : argv_s) {
            argv.push_back(a.data());
        }
        argv.push_back(nullptr);
        int out_pipe[2];
        int err_pipe[2];
        if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
            return errno_error("pipe", errno);
        }
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
        posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addchdir_np(&fa, real(req.root, "").c_str());
        pid_t pid = 0;
        const int rc = ::posix_spawnp(&pid, rg_program.c_str(), &fa, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&fa);
        ::close(out_pipe[1]);
        ::close(err_pipe[1]);
        if (rc != 0) {
            ::close(out_pipe[0]);
            ::close(err_pipe[0]);
            Error e = errno_error("spawn rg", rc);
            e.code = Errc::kUnavailable;  // as LocalWorkspace reports an rg it cannot exec
            return e;
        }
        workspace::RgOutcome out;
        std::string* sinks[2] = {&out.out, &out.err};
        pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
        int open_fds = 2;
        char buf[65536];
        while (open_fds > 0) {
            if (::poll(fds, 2, 10'000) <= 0) {
                break;
            }
            for (int i = 0; i < 2; ++i) {
                if (fds[i].fd < 0 || fds[i].revents == 0) {
                    continue;
                }
                const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
                if (n <= 0) {
                    ::close(fds[i].fd);
                    fds[i].fd = -1;
                    --open_fds;
                    continue;
                }
                sinks[i]->append(buf, static_cast<size_t>(n));
            }
        }
        for (pollfd& p : fds) {
            if (p.fd >= 0) {
                ::close(p.fd);
            }
        }
        int status = 0;
        ::waitpid(pid, &status, 0);
        // As LocalWorkspace reports them: killed by signal N is 128 + N.
        out.exit_code = WIFEXITED(status)     ? WEXITSTATUS(status)
                        : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                              : -1;
        if (out.out.size() > req.max_output_bytes) {
            out.out.resize(req.max_output_bytes);
            out.truncated = true;
        }
        return out;
    }

    // ---- Test helpers ----------------------------------------------------------------------

    // Writes a file (creating directories); mtime in whole seconds when given.
    void put(const std::string& rel, const std::string& bytes, int64_t mtime_s = 0,
             workspace::Root root = workspace::Root::kWorkspace) {
        const std::string target = real(root, rel);
        std::filesystem::create_directories(std::filesystem::path(target).parent_path());
        std::ofstream(target, std::ios::binary | std::ios::trunc) << bytes;
        if (mtime_s != 0) {
            set_mtime(rel, mtime_s, root);
        }
    }
    void set_mtime(const std::string& rel, int64_t mtime_s,
                   workspace::Root root = workspace::Root::kWorkspace) {
        const timespec times[2] = {{mtime_s, 0}, {mtime_s, 0}};
        ::utimensat(AT_FDCWD, real(root, rel).c_str(), times, 0);
    }
    void mkdir(const std::string& rel) {
        std::filesystem::create_directories(real(workspace::Root::kWorkspace, rel));
    }
    [[nodiscard]] std::string get(const std::string& rel,
                                  workspace::Root root = workspace::Root::kWorkspace) const {
        std::ifstream in(real(root, rel), std::ios::binary);
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }
    [[nodiscard]] bool exists(const std::string& rel) const {
        return std::filesystem::exists(real(workspace::Root::kWorkspace, rel));
    }

    int stat_calls = 0;
    int write_calls = 0;
    int rg_calls = 0;
    std::vector<std::string> last_rg_args;
    // When set, run_rg answers with it instead of running rg: how the tools take an rg that
    // could not start, was killed, or failed.
    std::function<Result<workspace::RgOutcome>(const workspace::RgRequest&)> rg_override;
    std::string rg_program = "rg";  // looked up on PATH

private:
    std::string ws_dir_;
    std::string spill_dir_;
    // Commands are not this fake's business: the bash/process tools are tested against the
    // real ProcessManager over a LocalWorkspace.
    Result<workspace::SpawnedProcess> spawn(const workspace::SpawnRequest&) override {
        return Error{Errc::kUnavailable, "TempWorkspace runs no commands"};
    }
    Result<bool> signal_group(workspace::ProcessGroupRef, int) override { return false; }
    Result<std::vector<std::string>> path_commands() override { return std::vector<std::string>{}; }
    Result<workspace::ProcessCensus> census() override { return workspace::ProcessCensus{}; }
};

// Spills into the fake's spill directory as <tool>-<call>.txt.
class TempSpill final : public SpillStore {
public:
    explicit TempSpill(TempWorkspace& ws) : ws_(ws) {}
    Result<std::string> spill(std::string_view tool, std::string_view call_id,
                              std::string_view content) override {
        const std::string name = std::string(tool) + "-" + std::string(call_id) + ".txt";
        ws_.put(name, std::string(content), 0, workspace::Root::kSpill);
        return std::string(kSpillDisplay) + "/" + name;
    }

private:
    TempWorkspace& ws_;
};

// The tools' events, as "read <path>" / "modified <path>", and the last one's fields.
class RecordingEvents final : public EventSink {
public:
    void record(std::string_view type, nlohmann::json fields, bool durable) override {
        log.push_back((type == "FileRead" ? "read " : "modified ") +
                      fields.value("path", std::string()));
        last = std::move(fields);
        last_durable = durable;
    }
    std::vector<std::string> log;
    nlohmann::json last;
    bool last_durable = false;
};

// One session: the fake workspace, stamps, locks, spill, events, and the five tools.
class ToolHarness {
public:
    ToolHarness() : spill_(ws) {
        for (auto& t : make_file_tools()) {
            tools_[std::string(t->name())] = std::move(t);
        }
        ctx.session_id = "s1";
        ctx.call_id = "call1";
        ctx.ws = &ws;
        ctx.stamps = &stamps;
        ctx.locks = &locks;
        ctx.spill = &spill_;
        ctx.events = &events;
    }

    // parse (validate) → execute → backstop, as the executor does.
    ToolResult call(const std::string& tool, const nlohmann::json& args) {
        const Tool& t = *tools_.at(tool);
        ToolResult r = t.execute(args, ctx);
        apply_backstop(r, ctx, tool);
        return r;
    }
    Tool& tool(const std::string& name) { return *tools_.at(name); }

    TempWorkspace ws;
    FileStamps stamps;
    FileLocks locks;
    RecordingEvents events;
    ToolContext ctx;

private:
    TempSpill spill_;
    std::map<std::string, std::unique_ptr<Tool>> tools_;
};

// ---- Inert text ----------------------------------------------------------------------------

// Nothing a terminal would act on: no C0 control but newline and tab, no DEL, and no C1
// control (U+0080-U+009F, C2 80..C2 9F in UTF-8). Written apart from tools/text.cc on purpose.
inline bool is_inert(std::string_view s) {
    for (size_t i = 0; i < s.size(); ++i) {
        const auto u = static_cast<unsigned char>(s[i]);
        if ((u < 0x20U && s[i] != '\n' && s[i] != '\t') || u == 0x7FU) {
            return false;
        }
        if (u == 0xC2U && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80U &&
            static_cast<unsigned char>(s[i + 1]) <= 0x9FU) {
            return false;
        }
    }
    return true;
}

// ---- Golden files ------------------------------------------------------------------------

// Compares `actual` (plus a final newline) with tests/golden/tools/<name>, whole.
inline void expect_golden(const std::string& name, const std::string& actual) {
    stockade::testing::expect_golden("tools", name, actual);
}

}  // namespace stockade::tools::testing
