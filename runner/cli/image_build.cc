#include "runner/cli/image_build.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <variant>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/host_dir.h"
#include "common/parse.h"
#include "common/syscall.h"
#include "images/image.h"
#include "images/import.h"
#include "images/layer_diff.h"
#include "images/recipe.h"
#include "images/store.h"
#include "runner/cli/exit_codes.h"
#include "runner/cli/image_command.h"
#include "runner/cli/run_command.h"

extern char** environ;

namespace stockade::runner {
namespace {

using json = nlohmann::json;

constexpr int kExitMissingTool = 69;  // sysexits' EX_UNAVAILABLE: mmdebstrap is not installed

// A failure the build reports: the exit status and the message.
struct BuildError {
    int status = 1;
    std::string message;
};

int fail(const BuildError& error) {
    fmt::print(stderr, "stockade image build: {}\n", error.message);
    return error.status;
}

// The recipe: the file's, then the flags over it.
Result<images::Recipe> make_recipe(const ImageBuildOptions& o) {
    images::Recipe recipe;
    if (!o.recipe.empty()) {
        ASSIGN_OR_RETURN(std::string text, read_file(o.recipe, size_t{1} << 20));
        auto parsed = images::parse_recipe(text);
        if (!parsed) {
            return std::move(parsed).error().wrap(o.recipe);
        }
        recipe = std::move(parsed).value();
    }
    if (!o.suite.empty() || !o.base.empty()) {
        recipe.suite = o.suite;
        recipe.image = o.base;
    }
    for (auto [flag, field] :
         {std::pair{&o.mirror, &recipe.mirror}, {&o.variant, &recipe.variant}}) {
        if (!flag->empty()) {
            *field = *flag;
        }
    }
    recipe.packages.insert(recipe.packages.end(), o.include.begin(), o.include.end());
    recipe.run.insert(recipe.run.end(), o.run.begin(), o.run.end());
    recipe.allow.insert(recipe.allow.end(), o.allow.begin(), o.allow.end());
    RETURN_IF_ERROR(images::check_recipe(recipe));
    return recipe;
}

Result<int64_t> source_date_epoch(const ImageBuildOptions& o) {
    if (o.source_date_epoch) {
        return *o.source_date_epoch;
    }
    if (const char* env = std::getenv("SOURCE_DATE_EPOCH"); env != nullptr && *env != '\0') {
        auto value = parse_uint(env, 0, uint64_t{1} << 40);
        if (!value) {
            return Error{
                Errc::kInvalidArgument,
                fmt::format("SOURCE_DATE_EPOCH={} is not a time in seconds since 1970", env)};
        }
        return static_cast<int64_t>(*value);
    }
    return kDefaultSourceDateEpoch;
}

// Runs `argv` with our stderr as its stdout and stderr, and `extra_env` added; its exit status.
Result<int> spawn_and_wait(const std::vector<std::string>& argv,
                           const std::vector<std::string>& extra_env) {
    std::vector<std::string> env_strings;
    for (char** e = environ; *e != nullptr; ++e) {
        env_strings.emplace_back(*e);
    }
    env_strings.insert(env_strings.end(), extra_env.begin(), extra_env.end());
    std::vector<char*> args;
    for (const std::string& a : argv) {
        args.push_back(const_cast<char*>(a.c_str()));
    }
    args.push_back(nullptr);
    std::vector<char*> envp;
    for (const std::string& e : env_strings) {
        envp.push_back(const_cast<char*>(e.c_str()));
    }
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
    pid_t pid = -1;
    const int err = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (err != 0) {
        return Error{err == ENOENT ? Errc::kNotFound : Errc::kInternal,
                     fmt::format("run {}: {}", argv[0], errno_string(err)), err};
    }
    int status = 0;
    if (retry_eintr([&] { return ::waitpid(pid, &status, 0); }) < 0) {
        return errno_error(fmt::format("wait for {}", argv[0]), errno);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The mmdebstrap command for the recipe's root, written as a tar to `output`. Downloaded
// packages are kept in `cache` for the next build (mmdebstrap's own recipe for it), and the
// build host's hostname and resolver are left out of the root.
std::vector<std::string> mmdebstrap_argv(const images::Recipe& recipe, const std::string& output,
                                         const std::string& cache) {
    std::vector<std::string> argv = {
        "mmdebstrap",
        "--variant=" + (recipe.variant.empty() ? std::string("minbase") : recipe.variant),
        "--mode=auto",
        "--format=tar",
        "--skip=essential/unlink",
        "--setup-hook=mkdir -p \"$1\"/var/cache/apt/archives/",
        "--setup-hook=sync-in " + cache + " /var/cache/apt/archives/",
        "--customize-hook=sync-out /var/cache/apt/archives " + cache,
        "--customize-hook=rm -f \"$1\"/etc/hostname \"$1\"/etc/resolv.conf",
    };
    if (!recipe.packages.empty()) {
        std::string list;
        for (const std::string& p : recipe.packages) {
            list += (list.empty() ? "" : ",") + p;
        }
        argv.push_back("--include=" + list);
    }
    argv.push_back(recipe.suite);
    argv.push_back(output);
    if (!recipe.mirror.empty()) {
        argv.push_back(recipe.mirror);
    }
    return argv;
}

// On an image base, packages are the first step's: apt inside the sandbox, which runs as root
// of a one-id namespace, so apt's download sandbox user is not switched to.
std::string apt_step(const std::vector<std::string>& packages) {
    std::string list;
    for (const std::string& p : packages) {
        list += " " + p;
    }
    return "export DEBIAN_FRONTEND=noninteractive; "
           "apt-get -o APT::Sandbox::User=root -q update && "
           "apt-get -o APT::Sandbox::User=root -q install -y --no-install-recommends" +
           list + " && apt-get clean && rm -rf /var/lib/apt/lists/*";
}

struct Built {
    images::ImportResult result;
    images::LayerDiffStats layer{};
    size_t steps = 0;
};

// The directory steps run in (their workspace): empty, private, beneath /tmp, which is the
// sandbox's own, so no directory of the image is made into its mount point.
class ScratchDir {
public:
    static Result<ScratchDir> make() {
        std::string path = "/tmp/stockade-build-XXXXXX";
        if (::mkdtemp(path.data()) == nullptr) {
            return errno_error("make a directory for the build's steps in /tmp", errno);
        }
        return ScratchDir(std::move(path));
    }
    ScratchDir(ScratchDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
    ScratchDir& operator=(ScratchDir&&) = delete;
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;
    ~ScratchDir() {
        if (path_.empty()) {
            return;
        }
        const int fd = ::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0) {
            remove_tree_contents(fd);
            (void)::close(fd);
        }
        (void)::rmdir(path_.c_str());
    }
    [[nodiscard]] const std::string& path() const noexcept { return path_; }

private:
    explicit ScratchDir(std::string path) : path_(std::move(path)) {}
    std::string path_;
};

// Runs the steps over a copy of `base`'s tree, and imports what they changed as one more layer.
std::variant<Built, BuildError> run_steps(
    images::ImageStore& store, const images::StoredImage& base, const images::Recipe& recipe,
    const std::vector<std::string>& steps, const std::vector<std::string>& resolve, int64_t epoch,
    const images::ImportOptions& import_options, const std::string& source) {
    const auto io = [](const Error& e) {
        return BuildError{1, e.message};
    };
    auto staging = store.make_staging();
    if (!staging) {
        return io(staging.error());
    }
    if (::mkdirat(staging->fd(), "tree", 0755) != 0) {
        return io(errno_error("make the tree to build in", errno));
    }
    auto tree = HostDir::adopt(
        UniqueFd(::openat(staging->fd(), "tree", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)));
    if (!tree) {
        return io(tree.error());
    }
    if (auto unpacked = images::unpack_image(store, base, tree->fd(), import_options); !unpacked) {
        return io(unpacked.error().wrap("unpack the base image"));
    }
    auto scratch = ScratchDir::make();
    if (!scratch) {
        return io(scratch.error());
    }
    const CallerContext caller = current_caller();
    for (size_t i = 0; i < steps.size(); ++i) {
        fmt::print(stderr, "stockade image build: step {}/{}: {}\n", i + 1, steps.size(), steps[i]);
        RunOptions flags;
        flags.workspace = scratch->path();
        flags.network = "allowlist";
        flags.network_policy.allow_presets = {"registries"};
        flags.network_policy.no_user_settings = true;
        for (const std::string& host : recipe.allow) {
            flags.network_policy.allow.push_back(fmt::format("network.access({})", host));
        }
        flags.resolve = resolve;
        flags.command = {"/bin/sh", "-c", steps[i]};
        auto parsed = parse_run_flags(flags, caller);
        if (!parsed) {
            return BuildError{kExitUsage, parsed.error().message};
        }
        SandboxConfig config = std::move(parsed->config);
        config.image = images::build_root_image(*tree);
        config.sandbox_root = true;
        config.env.emplace_back("DEBIAN_FRONTEND=noninteractive");
        config.env.emplace_back(fmt::format("SOURCE_DATE_EPOCH={}", epoch));
        const int status = run_config(std::move(config), flags.network_policy, "image build");
        if (status != 0) {
            return BuildError{
                1, fmt::format("step {} exited with status {}: nothing was stored", i + 1, status)};
        }
    }

    // What the steps changed, against the base's own tree.
    auto lower = store.hold_tree(base.digest);
    if (!lower) {
        return io(lower.error());
    }
    const int layer_fd = ::openat(staging->fd(), "layer.tar",
                                  O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (layer_fd < 0) {
        return io(errno_error("write the steps' layer", errno));
    }
    const UniqueFd layer(layer_fd);
    images::LayerDiffOptions diff_options{.clamp_time = epoch};
    if (!caller.privileged) {
        diff_options.own_uid = caller.euid;
        diff_options.own_gid = caller.egid;
    }
    auto diff = images::write_layer_diff(lower->dir.fd(), tree->fd(), layer.get(), diff_options);
    if (!diff) {
        return io(diff.error().wrap("capture what the steps changed"));
    }
    std::string created_by = "stockade image build:";
    for (const std::string& step : steps) {
        created_by += " RUN " + step + ";";
    }
    auto imported =
        images::import_with_layer(store, base, layer.get(), created_by, source, import_options);
    if (!imported) {
        const Errc code = imported.error().code;
        return BuildError{
            code == Errc::kInvalidArgument || code == Errc::kResourceExhausted ? kExitDataError : 1,
            imported.error().message};
    }
    return Built{std::move(imported).value(), *diff, steps.size()};
}

}  // namespace

int image_build_command(const ImageBuildOptions& options) {
    if (auto ok = images::check_image_name(options.name); !ok) {
        return fail({kExitUsage, ok.error().message});
    }
    auto recipe = make_recipe(options);
    if (!recipe) {
        return fail({recipe.error().code == Errc::kNotFound ? kExitNoInput : kExitUsage,
                     recipe.error().message});
    }
    auto epoch = source_date_epoch(options);
    if (!epoch) {
        return fail({kExitUsage, epoch.error().message});
    }
    auto store = images::ImageStore::open(image_store_dir(options.store), true);
    if (!store) {
        return fail({1, store.error().message});
    }
    const bool privileged = privileged_caller();
    images::ImportOptions import_options{.preserve_owner = privileged};
    std::vector<std::string> steps = recipe->run;
    const std::string source = !options.recipe.empty()  ? "build:" + options.recipe
                               : !recipe->suite.empty() ? "build:debian:" + recipe->suite
                                                        : "build:" + recipe->image;

    // The base: a Debian root by mmdebstrap, imported as a root file system, or a stored image.
    images::StoredImage base;
    if (!recipe->suite.empty()) {
        auto staging = store->make_staging();
        if (!staging) {
            return fail({1, staging.error().message});
        }
        const std::string dir = store->dir().path() + "/tmp/" + staging->name();
        const std::string cache = store->dir().path() + "/cache/debs";
        if (auto made = make_dirs(cache, 0700); !made) {
            return fail({1, made.error().wrap("the package cache").message});
        }
        const std::string output = dir + "/root.tar";
        fmt::print(stderr, "stockade image build: mmdebstrap {} (SOURCE_DATE_EPOCH={})\n",
                   recipe->suite, *epoch);
        auto status = spawn_and_wait(mmdebstrap_argv(*recipe, output, cache),
                                     {fmt::format("SOURCE_DATE_EPOCH={}", *epoch)});
        if (!status) {
            if (status.error().code == Errc::kNotFound) {
                return fail({kExitMissingTool,
                             "mmdebstrap is not installed: install Debian's mmdebstrap package "
                             "(apt-get install mmdebstrap), or build on an image of the store "
                             "with --image"});
            }
            return fail({1, status.error().message});
        }
        if (*status != 0) {
            return fail({1, fmt::format("mmdebstrap exited with status {}: its output above "
                                        "says why; nothing was stored",
                                        *status)});
        }
        // With steps to come, the base stays nameless (reached by digest, and found again by
        // the next build of the same recipe) until `image gc`.
        images::ImportOptions base_options = import_options;
        base_options.name = steps.empty() ? options.name : "";
        auto imported = images::import_image(*store, output, base_options);
        if (!imported) {
            return fail({kExitDataError, imported.error().message});
        }
        base = imported->image;
        if (steps.empty()) {
            if (options.json) {
                fmt::print("{}\n", json{{"name", options.name},
                                        {"digest", base.digest.str()},
                                        {"size", base.size},
                                        {"entries", base.entries},
                                        {"layers", base.layers.size()},
                                        {"source_date_epoch", *epoch}}
                                       .dump(2));
            } else {
                fmt::print("{} {} (built: {}, {} files, {})\n", options.name, base.digest.str(),
                           recipe->suite, base.entries, size_text(base.size));
            }
            return 0;
        }
    } else {
        auto found = store->find(recipe->image);
        if (!found) {
            return fail({kExitNoInput, found.error().message});
        }
        base = std::move(found).value();
        if (!recipe->packages.empty()) {
            steps.insert(steps.begin(), apt_step(recipe->packages));
        }
    }

    import_options.name = options.name;
    auto outcome =
        run_steps(*store, base, *recipe, steps, options.resolve, *epoch, import_options, source);
    if (const auto* error = std::get_if<BuildError>(&outcome)) {
        return fail(*error);
    }
    const Built* built = &std::get<Built>(outcome);
    const images::StoredImage& image = built->result.image;
    if (options.json) {
        fmt::print("{}\n", json{{"name", options.name},
                                {"digest", image.digest.str()},
                                {"size", image.size},
                                {"entries", image.entries},
                                {"layers", image.layers.size()},
                                {"base", base.digest.str()},
                                {"steps", built->steps},
                                {"changes", json{{"added", built->layer.added},
                                                 {"changed", built->layer.changed},
                                                 {"removed", built->layer.removed},
                                                 {"bytes", built->layer.bytes}}},
                                {"source_date_epoch", *epoch}}
                               .dump(2));
    } else {
        fmt::print(
            "{} {} (built: {} steps over {}; {} added, {} changed, {} removed; {} files, "
            "{})\n",
            options.name, image.digest.str(), built->steps, base.digest.str(), built->layer.added,
            built->layer.changed, built->layer.removed, image.entries, size_text(image.size));
    }
    return 0;
}

}  // namespace stockade::runner
