#include <sys/stat.h>
#include <unistd.h>

#include <array>

#include <fmt/format.h>

#include "images/image.h"
#include "images/stored_image.h"

namespace stockade::images {
namespace {

constexpr std::string_view kHostImage = "host";

// Top-level trees of the host image. On merged-/usr hosts most are symlinks into /usr, and
// become the same symlinks in the sandbox.
constexpr std::array<const char*, 7> kRootTrees = {"/usr",   "/bin",   "/sbin",  "/lib",
                                                   "/lib32", "/lib64", "/libx32"};

// Host files of /etc the image carries, each optional.
constexpr std::array<const char*, 24> kEtcFiles = {
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/ca-certificates.conf",
    "/etc/pki",
    "/etc/resolv.conf",
    "/etc/nsswitch.conf",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/protocols",
    "/etc/services",
    "/etc/gai.conf",
    "/etc/mime.types",
    "/etc/bash.bashrc",
    "/etc/profile",
    "/etc/inputrc",
    "/etc/terminfo",
    "/etc/gitconfig",
    "/etc/os-release",
    "/etc/debian_version",
    "/etc/shells",
};

}  // namespace

std::string make_passwd(const sandbox::Identity& id, std::string_view home) {
    return fmt::format(
        "root:x:0:0:root:/nonexistent:/usr/sbin/nologin\n"
        "{}:x:{}:{}:Stockade sandbox user:{}:/bin/bash\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
        id.user_name, id.sandbox_uid, id.sandbox_gid, home);
}

std::string make_group(const sandbox::Identity& id) {
    return fmt::format("root:x:0:\n{}:x:{}:\nnogroup:x:65534:\n", id.user_name, id.sandbox_gid);
}

std::string make_hosts(std::string_view hostname) {
    return fmt::format(
        "127.0.0.1\tlocalhost\n"
        "127.0.1.1\t{}\n"
        "::1\tlocalhost ip6-localhost ip6-loopback\n",
        hostname);
}

std::vector<ImageInfo> list_images() {
    return {ImageInfo{std::string(kHostImage),
                      "the host's /usr, /bin and /lib trees read-only, with a minimal /etc"}};
}

Result<Image> load_image(std::string_view name) {
    if (name != kHostImage) {
        std::string known;
        for (const auto& image : list_images()) {
            known += (known.empty() ? "" : ", ") + image.name;
        }
        return Error{Errc::kNotFound,
                     fmt::format("unknown image \"{}\"; known images: {}", name, known)};
    }
    Image image{.name = std::string(name), .readable_paths = image_readable_paths(name)};
    for (const char* tree : kRootTrees) {
        struct stat st {};
        if (::lstat(tree, &st) != 0) {
            continue;
        }
        if (S_ISLNK(st.st_mode)) {
            std::array<char, 4096> target{};
            ssize_t n = ::readlink(tree, target.data(), target.size() - 1);
            if (n > 0) {
                image.symlinks.push_back(
                    sandbox::Symlink{tree, std::string(target.data(), static_cast<size_t>(n))});
            }
        } else if (S_ISDIR(st.st_mode)) {
            image.binds.push_back(sandbox::Bind{.source = tree, .target = tree, .optional = true});
        }
    }
    for (const char* file : kEtcFiles) {
        image.binds.push_back(sandbox::Bind{.source = file, .target = file, .optional = true});
    }
    return image;
}

void add_image(const Image& image, sandbox::SandboxSpec& spec) {
    if (image.stored()) {
        add_stored_tree(*image.tree, image.build_root, spec);
    } else {
        spec.binds.insert(spec.binds.begin(), image.binds.begin(), image.binds.end());
        spec.symlinks.insert(spec.symlinks.end(), image.symlinks.begin(), image.symlinks.end());
    }
    if (!image.build_root) {
        const std::string home = "/tmp";
        spec.files.push_back({"/etc/passwd", make_passwd(spec.identity, home), 0644});
        spec.files.push_back({"/etc/group", make_group(spec.identity), 0644});
    }
    spec.files.push_back({"/etc/hosts", make_hosts(spec.hostname), 0644});
    spec.files.push_back({"/etc/hostname", spec.hostname + "\n", 0644});
}

Status apply_image(std::string_view name, sandbox::SandboxSpec& spec) {
    ASSIGN_OR_RETURN(Image image, load_image(name));
    add_image(image, spec);
    return {};
}

std::vector<std::string> image_readable_paths(std::string_view name) {
    std::vector<std::string> paths;
    if (name != kHostImage) {
        return paths;
    }
    for (const char* tree : kRootTrees) {
        paths.emplace_back(tree);
    }
    for (const char* file : kEtcFiles) {
        paths.emplace_back(file);
    }
    // Without a mount namespace there is no generated /etc: the host's own, minus secrets.
    for (const char* file : {"/etc/passwd", "/etc/group", "/etc/hosts", "/etc/hostname"}) {
        paths.emplace_back(file);
    }
    return paths;
}

}  // namespace stockade::images
