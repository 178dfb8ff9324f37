// stockade-bench-bwrap-args: the bubblewrap command line that gives a command the same sandbox
// `stockade run --workspace W -- CMD` gives it, derived from Stockade's own spec and mount plan
// (runner::make_sandbox_spec, sandbox::make_mount_plan), so that bench/startup.sh compares like
// with like and stays right when the image or the mount plan changes.
//
//   stockade-bench-bwrap-args --workspace W --files-dir D --seccomp-file F [--bwrap PATH] -- CMD...
//
// Output (stdout): the argv, NUL-separated. Entries "@fd=N=PATH" are not arguments: they ask the
// timing helper (bench/startup_timer.py) to open PATH read-only on descriptor N for each run,
// because bwrap consumes the descriptors of --file and --seccomp. Generated files (/etc/passwd,
// ...) are written into D. A summary of what is and is not mirrored goes to stderr.
//
// Mapping of the mount plan (sandbox/mount_plan.h) onto bwrap's options:
//   kBind                      --ro-bind / --bind (-try when optional)
//   kTmpfs /dev + device binds + devpts + /dev symlinks     --dev /dev (bwrap makes the same set)
//   kTmpfs                     --perms MODE --size N --tmpfs
//   kProc                      --proc (bwrap itself makes /proc/irq and /proc/bus read-only)
//   kMask file                 --ro-bind /dev/null   (only targets the host's /proc has)
//   kMask dir                  --perms 0555 --size 4096 --tmpfs + --remount-ro
//   kReadOnly /dev             --remount-ro /dev
//   kReadOnly /proc/X          --ro-bind /proc/X /proc/X (bwrap cannot remount a non-mount point)
//   kSymlink                   --symlink
//   kFile                      --perms MODE --file FD
//   (the root made read-only)  --remount-ro /
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "runner/cli/run_command.h"
#include "sandbox/mount_plan.h"
#include "sandbox/spec.h"

namespace {

using stockade::sandbox::MountOp;
using stockade::sandbox::MountOpKind;

constexpr const char* kUsage =
    "usage: stockade-bench-bwrap-args --workspace W --files-dir D --seccomp-file F [--bwrap PATH]\n"
    "                                 [--network none|host] -- CMD [ARGS...]\n";

constexpr int kFirstFd = 10;  // descriptors handed to bwrap start here

struct Args {
    std::string workspace;
    std::string files_dir;
    std::string seccomp_file;
    std::string bwrap = "bwrap";
    std::string network = "none";
    std::vector<std::string> command;
};

bool starts_with(std::string_view s, std::string_view prefix) {
    return s.size() >= prefix.size() && s.substr(0, prefix.size()) == prefix;
}

bool under(std::string_view path, std::string_view dir) {
    return path == dir ||
           (starts_with(path, dir) && path.size() > dir.size() && path[dir.size()] == '/');
}

bool exists(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

// "mode=1777,size=1073741824" -> {"mode": "1777", "size": "1073741824"}
std::map<std::string, std::string> parse_options(std::string_view data) {
    std::map<std::string, std::string> out;
    while (!data.empty()) {
        size_t comma = data.find(',');
        std::string_view item = data.substr(0, comma);
        size_t eq = item.find('=');
        if (eq != std::string_view::npos) {
            out[std::string(item.substr(0, eq))] = std::string(item.substr(eq + 1));
        }
        data = comma == std::string_view::npos ? std::string_view{} : data.substr(comma + 1);
    }
    return out;
}

bool parse_args(int argc, char** argv, Args& args) {
    int i = 1;
    for (; i < argc; ++i) {
        std::string_view arg = argv[i];
        if (arg == "--") {
            ++i;
            break;
        }
        if (i + 1 >= argc) {
            fmt::print(stderr, "stockade-bench-bwrap-args: {} needs a value\n{}", arg, kUsage);
            return false;
        }
        std::string value = argv[++i];
        if (arg == "--workspace") {
            args.workspace = value;
        } else if (arg == "--files-dir") {
            args.files_dir = value;
        } else if (arg == "--seccomp-file") {
            args.seccomp_file = value;
        } else if (arg == "--bwrap") {
            args.bwrap = value;
        } else if (arg == "--network") {
            args.network = value;
        } else {
            fmt::print(stderr, "stockade-bench-bwrap-args: unknown argument \"{}\"\n{}", arg,
                       kUsage);
            return false;
        }
    }
    for (; i < argc; ++i) {
        args.command.emplace_back(argv[i]);
    }
    if (args.workspace.empty() || args.files_dir.empty() || args.seccomp_file.empty() ||
        args.command.empty()) {
        fmt::print(stderr, "{}", kUsage);
        return false;
    }
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    Args args;
    if (!parse_args(argc, argv, args)) {
        return 2;
    }
    namespace runner = stockade::runner;
    runner::RunOptions options;
    options.workspace = args.workspace;
    options.network = args.network;
    options.command = args.command;
    runner::CallerContext caller = runner::current_caller();
    caller.cwd = args.workspace;
    caller.tty_fds = {false, false, false};  // the bench runs with /dev/null and a log file
    auto parsed = runner::parse_run_flags(options, caller);
    if (!parsed) {
        fmt::print(stderr, "stockade-bench-bwrap-args: {}\n", parsed.error().message);
        return 1;
    }
    // The mount view is the same at full and namespaces.
    auto built = runner::make_sandbox_spec(parsed->config, caller,
                                           stockade::sandbox::Isolation::kNamespaces);
    if (!built) {
        fmt::print(stderr, "stockade-bench-bwrap-args: {}\n", built.error().message);
        return 1;
    }
    const stockade::sandbox::SandboxSpec& spec = *built;
    std::vector<bool> is_dir;
    for (const auto& bind : spec.binds) {
        struct stat st {};
        is_dir.push_back(::stat(bind.source.c_str(), &st) != 0 || S_ISDIR(st.st_mode));
    }
    stockade::sandbox::MountPlan plan = stockade::sandbox::make_mount_plan(spec, is_dir);

    std::vector<std::string> out;
    int next_fd = kFirstFd;
    auto add = [&](std::initializer_list<std::string> items) {
        out.insert(out.end(), items.begin(), items.end());
    };
    out.push_back(args.bwrap);
    // Namespaces: user, ipc, pid, net (unless host), uts, cgroup.
    add({"--unshare-all", "--unshare-user"});
    if (spec.network == stockade::sandbox::NetworkMode::kHost) {
        add({"--share-net"});
    }
    add({"--die-with-parent", "--new-session"});

    // bwrap processes /proc's own covers (irq, bus; sys when writable) at --proc.
    const std::set<std::string> bwrap_covers = {"/proc/irq", "/proc/bus"};
    struct Count {
        int binds = 0, tmpfs = 0, masks = 0, readonly = 0, symlinks = 0, files = 0, skipped = 0;
    } count;
    bool dev_done = false;
    for (const MountOp& op : plan.ops) {
        switch (op.kind) {
            case MountOpKind::kBind:
                if (op.device) {
                    continue;  // part of --dev
                }
                if (op.optional && !exists(op.data)) {
                    continue;  // stockade skips it too
                }
                add({op.writable ? "--bind" : "--ro-bind", op.data, op.target});
                ++count.binds;
                break;
            case MountOpKind::kTmpfs: {
                if (op.target == "/dev") {
                    add({"--dev", "/dev"});
                    dev_done = true;
                    continue;
                }
                auto opts = parse_options(op.data);
                if (opts.count("mode") != 0) {
                    add({"--perms", opts["mode"]});
                }
                if (opts.count("size") != 0) {
                    add({"--size", opts["size"]});
                }
                add({"--tmpfs", op.target});
                ++count.tmpfs;
                break;
            }
            case MountOpKind::kDevpts:
                continue;  // part of --dev
            case MountOpKind::kProc:
                add({"--proc", op.target});
                break;
            case MountOpKind::kMask:
                if (!exists(op.target)) {
                    continue;  // judged on the host's /proc: the sandbox's shows the same kernel
                }
                if (op.is_dir) {
                    add({"--perms", "0555", "--size", "4096", "--tmpfs", op.target, "--remount-ro",
                         op.target});
                } else {
                    add({"--ro-bind", "/dev/null", op.target});
                }
                ++count.masks;
                break;
            case MountOpKind::kReadOnly:
                if (op.target == "/dev") {
                    add({"--remount-ro", "/dev"});
                } else if (bwrap_covers.count(op.target) != 0) {
                    continue;
                } else if (under(op.target, "/proc")) {
                    if (!exists(op.target)) {
                        continue;
                    }
                    add({"--ro-bind", op.target, op.target});
                } else {
                    add({"--remount-ro", op.target});
                }
                ++count.readonly;
                break;
            case MountOpKind::kPin:
                continue;  // only policy paths need pins; `stockade run` in the bench has none
            case MountOpKind::kReadOnlyPath:
                add({"--ro-bind", op.target, op.target});
                ++count.readonly;
                break;
            case MountOpKind::kMaskPath:
                add({"--ro-bind", "/dev/null", op.target});
                ++count.masks;
                break;
            case MountOpKind::kSymlink:
                if (dev_done && under(op.target, "/dev")) {
                    continue;  // --dev makes ptmx, fd, stdin, stdout, stderr
                }
                add({"--symlink", op.data, op.target});
                ++count.symlinks;
                break;
            case MountOpKind::kFile: {
                std::string name = op.target;
                for (char& c : name) {
                    c = c == '/' ? '_' : c;
                }
                std::string path = args.files_dir + "/" + name;
                std::ofstream file(path, std::ios::binary | std::ios::trunc);
                file << op.data;
                if (!file.good()) {
                    fmt::print(stderr, "stockade-bench-bwrap-args: cannot write \"{}\"\n", path);
                    return 1;
                }
                int fd = next_fd++;
                out.push_back(fmt::format("@fd={}={}", fd, path));
                add({"--perms", fmt::format("{:04o}", op.mode), "--file", std::to_string(fd),
                     op.target});
                ++count.files;
                break;
            }
        }
    }
    // The assembled root is read-only in stockade (set after the last mount op).
    add({"--remount-ro", "/"});
    ++count.readonly;
    int seccomp_fd = next_fd++;
    out.push_back(fmt::format("@fd={}={}", seccomp_fd, args.seccomp_file));
    add({"--seccomp", std::to_string(seccomp_fd)});
    add({"--uid", std::to_string(spec.identity.sandbox_uid), "--gid",
         std::to_string(spec.identity.sandbox_gid), "--cap-drop", "ALL", "--hostname",
         spec.hostname, "--chdir", spec.cwd, "--clearenv"});
    for (const auto& entry : spec.env) {
        size_t eq = entry.find('=');
        add({"--setenv", entry.substr(0, eq), eq == std::string::npos ? "" : entry.substr(eq + 1)});
    }
    out.emplace_back("--");
    out.insert(out.end(), spec.argv.begin(), spec.argv.end());

    for (const auto& item : out) {
        std::fwrite(item.data(), 1, item.size(), stdout);
        std::fputc('\0', stdout);
    }
    if (std::fflush(stdout) != 0) {
        return 1;
    }
    fmt::print(
        stderr,
        "mirrored from stockade's mount plan: {} binds, {} tmpfs, --dev, --proc, {} /proc masks, "
        "{} read-only remounts, {} symlinks, {} generated files; seccomp, uid {}, hostname, "
        "cwd, {} env vars\n",
        count.binds, count.tmpfs, count.masks, count.readonly, count.symlinks, count.files,
        spec.identity.sandbox_uid, spec.env.size());
    return 0;
}
