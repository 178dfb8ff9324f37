#include "runner/cli/doctor_command.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "common/syscall.h"
#include "images/image.h"
#include "images/store.h"
#include "policy/preset.h"
#include "runner/cli/exit_codes.h"
#include "runner/cli/image_command.h"
#include "runner/cli/run_command.h"
#include "runner/host/tenant_doctor.h"
#include "runner/host/tenants.h"
#include "runner/session/git_index.h"
#include "runner/session/host_environment.h"
#include "runner/session/isolation.h"
#include "runner/session/policy_enforcement.h"
#include "runner/session/policy_setup.h"
#include "sandbox/features.h"

namespace stockade::runner {

namespace {

void print_checks(const sandbox::HostFeatures& features) {
    size_t width = 0;
    auto checks = features.checks();
    for (const auto& check : checks) {
        width = std::max(width, check.name.size());
    }
    for (const auto& check : checks) {
        fmt::print("{:<4} {:<{}}  {}\n", check.ok ? "ok" : "no", check.name, width, check.detail);
    }
}

std::string read_or_empty(const std::string& path) {
    auto text = read_file(path, 16 << 20);
    return text ? std::move(*text) : std::string();
}

// Every process's real uid, from /proc/PID/status; processes that exit meanwhile are skipped.
std::vector<ProcessOwner> running_processes() {
    std::vector<ProcessOwner> out;
    DIR* proc = ::opendir("/proc");
    if (proc == nullptr) {
        return out;
    }
    while (const dirent* entry = ::readdir(proc)) {  // NOLINT(concurrency-mt-unsafe): one thread
        char* end = nullptr;
        const long pid = std::strtol(entry->d_name, &end, 10);
        if (pid <= 0 || *end != '\0') {
            continue;
        }
        const std::string dir = fmt::format("/proc/{}", pid);
        auto status = read_file(dir + "/status");
        if (!status) {
            continue;
        }
        const auto at = status->find("\nUid:");
        if (at == std::string::npos) {
            continue;
        }
        const unsigned long uid = std::strtoul(status->c_str() + at + 5, nullptr, 10);
        std::string comm = read_or_empty(dir + "/comm");
        while (!comm.empty() && comm.back() == '\n') {
            comm.pop_back();
        }
        out.push_back(ProcessOwner{static_cast<pid_t>(pid), static_cast<uid_t>(uid), comm});
    }
    ::closedir(proc);
    return out;
}

PathFacts stat_path(const std::string& path) {
    PathFacts facts;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        if (errno != ENOENT && errno != ENOTDIR) {
            facts.error = fmt::format("cannot stat it: {}", std::strerror(errno));
        }
        return facts;
    }
    facts.exists = true;
    facts.directory = S_ISDIR(st.st_mode);
    facts.uid = st.st_uid;
    facts.gid = st.st_gid;
    facts.mode = st.st_mode & 07777;
    facts.writable = ::access(path.c_str(), W_OK) == 0;
    return facts;
}

// The projects beneath a tenant's workspace root that are git repositories: the names of its
// subdirectories (not symlinks) that hold a .git, sorted, the first kMaxProjects of them.
constexpr size_t kMaxProjects = 256;
std::vector<std::string> git_projects(const HostDir& root) {
    std::vector<std::string> out;
    for (const DirEntry& entry : list_entries(root.fd())) {
        struct stat git {};
        if (!S_ISDIR(entry.st.st_mode) ||
            ::fstatat(root.fd(), (entry.name + "/.git").c_str(), &git, AT_SYMLINK_NOFOLLOW) != 0) {
            continue;
        }
        out.push_back(entry.name);
        if (out.size() == kMaxProjects) {
            break;
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

// The tenant's policy as a session loads it: its file and rules with the implicit layers
// (managed, project, user), on its workspace root (an empty directory when that is missing).
// A Read deny rule that denies files git tracks, in the root or in a project beneath it
// (Stockade-Workspace: NAME), is a warning: the rule cannot hide their committed contents.
PolicyFacts load_tenant_policy(const Tenant& tenant, bool workspace_ok) {
    PolicyFacts facts;
    PolicyConfig flags;
    if (!tenant.policy.empty()) {
        flags.files.push_back(tenant.policy);
    }
    flags.allow = tenant.allow;
    flags.ask = tenant.ask;
    flags.deny = tenant.deny;
    std::string workspace = tenant.workspace_root;
    std::string empty_dir;
    if (!workspace_ok) {
        char tmpl[] = "/tmp/stockade-doctor-XXXXXX";
        if (::mkdtemp(tmpl) == nullptr) {
            facts.error = fmt::format("cannot make an empty directory to load it on: {}",
                                      std::strerror(errno));
            return facts;
        }
        empty_dir = workspace = tmpl;
        facts.without_workspace = true;
    }
    auto opened = HostDir::open(workspace);
    const HostDir dir = opened ? *opened : HostDir();
    auto loaded = opened ? load_policy(flags, dir, facts.warnings)
                         : Result<policy::Policy>(std::move(opened).error());
    if (!empty_dir.empty()) {
        (void)::rmdir(empty_dir.c_str());
    }
    if (!loaded) {
        facts.error = loaded.error().message;
        return facts;
    }
    facts.loaded = true;
    facts.mode = policy::mode_name(loaded->mode());
    facts.preset = policy::preset_name(loaded->preset());
    facts.rules = loaded->rules().size();
    facts.quotas = loaded->quotas();
    facts.network = session_network(*loaded, tenant.network);
    if (!workspace_ok) {
        return facts;
    }
    for (auto& warning : git_tracked_denials(*loaded, dir)) {
        facts.warnings.push_back(std::move(warning));
    }
    for (const std::string& project : git_projects(dir)) {
        // Opened as a session there would be (Stockade-Workspace: NAME): its rules anchor on it.
        auto fd = open_dir_beneath(dir.fd(), {project});
        auto root = fd ? HostDir::adopt(std::move(fd).value()) : Result<HostDir>(fd.error());
        std::vector<std::string> ignored;  // the same as the root's, said above
        if (!root) {
            continue;
        }
        if (auto there = load_policy(flags, *root, ignored)) {
            for (const std::string& warning : git_tracked_denials(*there, *root)) {
                facts.warnings.push_back(fmt::format("in {}: {}", project, warning));
            }
        }
    }
    return facts;
}

}  // namespace

int doctor_tenants_command(const std::string& tenants_file) {
    auto config = load_tenants(tenants_file, TenantAuth::kEither);
    if (!config) {
        fmt::print(stderr, "stockade doctor: {}\n", config.error().message);
        return kExitUsage;
    }
    DoctorHost host{.features = host_features(),
                    .caller = current_caller(),
                    .passwd = read_or_empty("/etc/passwd"),
                    .group = read_or_empty("/etc/group"),
                    .subuid = read_or_empty("/etc/subuid"),
                    .subgid = read_or_empty("/etc/subgid"),
                    .processes = {}};
    if (host.caller.privileged) {
        host.processes = running_processes();
    }
    print_checks(host.features);
    fmt::print(
        "\nTenants of {}, as sessions of `stockade serve --http --tenants` run by uid {} "
        "would get them on this host:\n",
        tenants_file, host.caller.euid);
    size_t with_errors = 0;
    size_t with_warnings = 0;
    for (const Tenant& tenant : config->tenants) {
        TenantFacts facts;
        facts.workspace_root = stat_path(tenant.workspace_root);
        facts.policy = load_tenant_policy(tenant, facts.workspace_root.directory);
        const TenantReport report = tenant_report(tenant, host, facts);
        fmt::print("\n{}", format_tenant_report(report));
        if (!report.ok()) {
            ++with_errors;
        } else if (report.count(Severity::kWarning) > 0) {
            ++with_warnings;
        }
    }
    fmt::print("\ntenants: {} checked, {} ok, {} with warnings, {} with errors\n",
               config->tenants.size(), config->tenants.size() - with_errors - with_warnings,
               with_warnings, with_errors);
    return with_errors > 0 ? 1 : 0;
}

int doctor_command() {
    using sandbox::Isolation;
    const sandbox::HostFeatures& features = host_features();
    print_checks(features);
    // The same resolution run and every session worker make.
    auto resolved = resolve_isolation(Isolation::kAuto, features);
    if (!resolved) {
        fmt::print("isolation: none available — {}\n", resolved.error().message);
        return 1;
    }
    const Isolation level = resolved->level;
    fmt::print("isolation: --isolation auto chooses \"{}\"\n", sandbox::isolation_name(level));
    if (!resolved->shortfall.empty()) {
        fmt::print("isolation: not stronger because {}\n", resolved->shortfall);
    }
    fmt::print("default limits: {}\n", describe_limits(SandboxLimits{}, current_caller()));
    // What a sandbox on this directory (the default workspace) would not see of your PATH.
    std::error_code ec;
    std::vector<std::string> visible = images::image_readable_paths("host");
    visible.push_back(std::filesystem::current_path(ec).string());
    const char* path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe): read once
    const std::string hint =
        hidden_path_dirs_hint(hidden_path_dirs(path == nullptr ? "" : path, visible));
    fmt::print("{}",
               hint.empty() ? "toolchains: every directory of your PATH is in the image\n" : hint);
    // The image store and what it holds.
    const std::string store_dir = image_store_dir("");
    if (auto store = images::ImageStore::open(store_dir, false)) {
        auto listed = store->list();
        const std::vector<images::StoredImage> stored =
            listed ? std::move(listed).value() : std::vector<images::StoredImage>{};
        fmt::print("images: store {} holds {} image{}{}\n", store->dir().path(), stored.size(),
                   stored.size() == 1 ? "" : "s",
                   level == Isolation::kFull || level == Isolation::kNamespaces
                       ? ""
                       : " (unusable here: an image needs isolation full or namespaces)");
        for (const images::StoredImage& image : stored) {
            fmt::print("images:   {} {} {}\n", image.name, image.digest.str(), image.os_release);
        }
    } else {
        fmt::print(
            "images: no store at {} (only the host image; `stockade image import` makes "
            "one)\n",
            store_dir);
    }
    // What a session here would be warned of, with the settings files it would read: a Read
    // deny rule whose files git tracks cannot hide their committed contents.
    std::vector<std::string> ignored;
    auto here = HostDir::open(".");
    if (auto policy = here ? load_policy(PolicyConfig{}, *here, ignored)
                           : Result<policy::Policy>(here.error())) {
        for (const std::string& warning : git_tracked_denials(*policy, *here)) {
            fmt::print("policy: warning: {}\n", warning);
        }
    }
    return level == Isolation::kFull || level == Isolation::kNamespaces ? 0 : 1;
}

}  // namespace stockade::runner
