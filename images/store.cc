// The image store: see store.h for its layout and its rules.
#include "images/store.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/syscall.h"
#include "images/oci_document.h"

namespace stockade::images {
namespace {

using json = nlohmann::json;

constexpr std::string_view kRefNameAnnotation = "org.opencontainers.image.ref.name";
constexpr size_t kMaxIndexBytes = size_t{16} << 20;
constexpr size_t kMaxMetaBytes = size_t{1} << 20;

Result<UniqueFd> open_at(int dir, const std::string& name, int flags, mode_t mode = 0) {
    const int fd = retry_eintr(
        [&] { return ::openat(dir, name.c_str(), flags | O_CLOEXEC | O_NOFOLLOW, mode); });
    if (fd < 0) {
        return errno_error(fmt::format("open {}", name), errno);
    }
    return UniqueFd(fd);
}

Result<UniqueFd> open_subdir(int dir, const std::string& name, bool create) {
    if (create && ::mkdirat(dir, name.c_str(), 0700) != 0 && errno != EEXIST) {
        return errno_error(fmt::format("create {}", name), errno);
    }
    return open_at(dir, name, O_RDONLY | O_DIRECTORY);
}

// Reads a small file of directory `dir`, at most `max` bytes.
Result<std::string> read_at(int dir, const std::string& name, size_t max) {
    ASSIGN_OR_RETURN(UniqueFd fd, open_at(dir, name, O_RDONLY));
    return read_all(fd.get(), max);
}

// Writes `content` to `name` of `dir` through a temporary file and a rename: readers see the
// old file or the new one, never a part.
Status replace_at(int dir, const std::string& name, std::string_view content) {
    const std::string tmp = fmt::format(".{}.{}", name, ::getpid());
    {
        ASSIGN_OR_RETURN(UniqueFd fd, open_at(dir, tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600));
        RETURN_IF_ERROR(write_all(fd.get(), content));
        if (::fsync(fd.get()) != 0) {
            return errno_error(fmt::format("sync {}", name), errno);
        }
    }
    if (::renameat(dir, tmp.c_str(), dir, name.c_str()) != 0) {
        const int err = errno;
        (void)::unlinkat(dir, tmp.c_str(), 0);
        return errno_error(fmt::format("replace {}", name), err);
    }
    return {};
}

std::string random_hex(size_t bytes) {
    std::array<unsigned char, 16> raw{};
    bytes = std::min(bytes, raw.size());
    size_t got = 0;
    while (got < bytes) {
        const ssize_t n = ::getrandom(raw.data() + got, bytes - got, 0);
        if (n > 0) {
            got += static_cast<size_t>(n);
        }
    }
    std::string out;
    for (size_t i = 0; i < bytes; ++i) {
        out += fmt::format("{:02x}", raw[i]);
    }
    return out;
}

std::string now_rfc3339() {
    const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    std::array<char, 32> buf{};
    const size_t n = std::strftime(buf.data(), buf.size(), "%Y-%m-%dT%H:%M:%SZ", &tm);
    return std::string(buf.data(), n);
}

// The names of directory `fd`, but "." and "..".
Result<std::vector<std::string>> names_in(int fd) {
    const int dup = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dup < 0) {
        return errno_error("list a directory", errno);
    }
    DIR* dir = ::fdopendir(dup);
    if (dir == nullptr) {
        const int err = errno;
        ::close(dup);
        return errno_error("list a directory", err);
    }
    ::rewinddir(dir);
    std::vector<std::string> out;
    errno = 0;
    while (const dirent* entry = ::readdir(dir)) {
        const std::string_view name = entry->d_name;
        if (name != "." && name != "..") {
            out.emplace_back(name);
        }
    }
    const int err = errno;
    ::closedir(dir);
    if (err != 0) {
        return errno_error("list a directory", err);
    }
    return out;
}

bool is_hex_digest_name(std::string_view name) {
    return name.size() == 64 && std::all_of(name.begin(), name.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

json stats_json(const ApplyStats& s) {
    return json{{"files", s.files},
                {"directories", s.directories},
                {"symlinks", s.symlinks},
                {"hardlinks", s.hardlinks},
                {"whiteouts", s.whiteouts},
                {"setid_stripped", s.setid_stripped},
                {"devices_skipped", s.devices_skipped},
                {"fifos_skipped", s.fifos_skipped},
                {"sockets_skipped", s.sockets_skipped},
                {"xattrs_dropped", s.xattrs_dropped},
                {"bytes_read", s.bytes},
                {"entries_read", s.entries}};
}

ApplyStats stats_from_json(const json& j) {
    ApplyStats s;
    auto get = [&](const char* key) {
        return j.value(key, uint64_t{0});
    };
    s.files = get("files");
    s.directories = get("directories");
    s.symlinks = get("symlinks");
    s.hardlinks = get("hardlinks");
    s.whiteouts = get("whiteouts");
    s.setid_stripped = get("setid_stripped");
    s.devices_skipped = get("devices_skipped");
    s.fifos_skipped = get("fifos_skipped");
    s.sockets_skipped = get("sockets_skipped");
    s.xattrs_dropped = get("xattrs_dropped");
    s.bytes = get("bytes_read");
    s.entries = get("entries_read");
    return s;
}

}  // namespace

// The names of the store: index.json's entries, name to manifest descriptor.
struct ImageStore::Names {
    std::map<std::string, Descriptor> by_name;
};

Status check_image_name(std::string_view name) {
    if (name.empty() || name.size() > 255) {
        return Error{Errc::kInvalidArgument, "an image name has 1 to 255 characters"};
    }
    const bool ok = std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '.' || c == '_' || c == '-' || c == '/' || c == ':';
    });
    if (!ok || name.front() == '.' || name.front() == '-' || name.front() == '/' ||
        name.front() == ':' || name.back() == '/' || name.back() == ':' ||
        name.find("//") != std::string_view::npos || name.find("..") != std::string_view::npos) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("image name \"{}\": use letters, digits and . _ - / : (as in "
                                 "debian:12 or tools/python:3.12), not starting with . - / :",
                                 name)};
    }
    return {};
}

Status check_image_ref(std::string_view ref) {
    if (ref == "host") {
        return {};
    }
    const size_t at = ref.find('@');
    if (at != std::string_view::npos || ref.starts_with("sha256:")) {
        const std::string_view digest = at == std::string_view::npos ? ref : ref.substr(at + 1);
        if (auto parsed = Digest::parse(digest); !parsed) {
            return std::move(parsed).error().wrap(fmt::format("image \"{}\"", ref));
        }
        if (at == std::string_view::npos) {
            return {};
        }
    }
    return check_image_name(ref.substr(0, at));
}

std::string ImageStore::default_dir(std::string_view state_dir) {
    if (const char* env = std::getenv("STOCKADE_IMAGE_STORE");  // NOLINT(concurrency-mt-unsafe)
        env != nullptr && *env != '\0') {
        return env;
    }
    return fmt::format("{}/images", state_dir);
}

Result<ImageStore> ImageStore::open(const std::string& dir, bool create) {
    if (create) {
        RETURN_IF_ERROR(make_dirs(dir, 0700));
    }
    auto opened = HostDir::open(dir);
    if (!opened) {
        if (opened.error().code == Errc::kNotFound) {
            return Error{
                Errc::kNotFound,
                fmt::format("no image store at {}: import, pull or build an image first", dir)};
        }
        return std::move(opened).error().wrap(fmt::format("image store {}", dir));
    }
    HostDir top = std::move(opened).value();
    struct stat st {};
    if (::fstat(top.fd(), &st) != 0) {
        return errno_error(fmt::format("image store {}", dir), errno);
    }
    if (st.st_uid != ::geteuid()) {
        return Error{Errc::kPermissionDenied,
                     fmt::format("image store {} belongs to uid {}, not to you (uid {}): use a "
                                 "store of your own (--image-store DIR)",
                                 top.path(), st.st_uid, ::geteuid())};
    }
    if ((st.st_mode & 07777) != 0700 && ::fchmod(top.fd(), 0700) != 0) {
        return errno_error(fmt::format("make image store {} private (0700)", top.path()), errno);
    }
    const int fd = top.fd();
    ASSIGN_OR_RETURN(UniqueFd blobs_top, open_subdir(fd, "blobs", true));
    ASSIGN_OR_RETURN(UniqueFd blobs, open_subdir(blobs_top.get(), "sha256", true));
    ASSIGN_OR_RETURN(UniqueFd trees, open_subdir(fd, "trees", true));
    ASSIGN_OR_RETURN(UniqueFd meta, open_subdir(fd, "meta", true));
    ASSIGN_OR_RETURN(UniqueFd locks, open_subdir(fd, "locks", true));
    ASSIGN_OR_RETURN(UniqueFd tmp, open_subdir(fd, "tmp", true));
    ImageStore store(std::move(top), std::move(blobs), std::move(trees), std::move(meta),
                     std::move(locks), std::move(tmp));
    if (::faccessat(fd, "oci-layout", F_OK, AT_SYMLINK_NOFOLLOW) != 0) {
        RETURN_IF_ERROR(replace_at(fd, "oci-layout", R"({"imageLayoutVersion":"1.0.0"})"));
    }
    if (::faccessat(fd, "index.json", F_OK, AT_SYMLINK_NOFOLLOW) != 0) {
        RETURN_IF_ERROR(store.write_names(Names{}));
    }
    return store;
}

Result<UniqueFd> ImageStore::lock_store() const {
    ASSIGN_OR_RETURN(UniqueFd fd, open_at(dir_.fd(), "lock", O_RDWR | O_CREAT, 0600));
    if (retry_eintr([&] { return ::flock(fd.get(), LOCK_EX); }) != 0) {
        return errno_error("lock the image store", errno);
    }
    return fd;
}

Result<ImageStore::Names> ImageStore::read_names() const {
    ASSIGN_OR_RETURN(std::string text, read_at(dir_.fd(), "index.json", kMaxIndexBytes));
    auto index = parse_layout_index(text);
    if (!index) {
        return std::move(index).error().wrap(fmt::format("image store {}/index.json", dir_.path()));
    }
    Names names;
    for (const Descriptor& d : index->manifests) {
        const auto ref = d.annotations.find(std::string(kRefNameAnnotation));
        if (ref != d.annotations.end()) {
            names.by_name[ref->second] = d;
        }
    }
    return names;
}

Status ImageStore::write_names(const Names& names) const {
    json manifests = json::array();
    for (const auto& [name, d] : names.by_name) {
        manifests.push_back(json{{"mediaType", d.media_type},
                                 {"digest", d.digest.str()},
                                 {"size", d.size},
                                 {"annotations", json{{kRefNameAnnotation, name}}}});
    }
    const json index{
        {"schemaVersion", 2}, {"mediaType", media_type::kOciIndex}, {"manifests", manifests}};
    return replace_at(dir_.fd(), "index.json", index.dump());
}

Result<StoredImage> ImageStore::metadata(const Digest& digest) const {
    const std::string file = fmt::format("{}.json", digest.hex());
    auto text = read_at(meta_->get(), file, kMaxMetaBytes);
    if (!text) {
        return Error{Errc::kNotFound,
                     fmt::format("the store has no image {} (its metadata is missing: run "
                                 "`stockade image gc` and import it again)",
                                 digest.str())};
    }
    try {
        const json j = json::parse(*text);
        StoredImage image;
        ASSIGN_OR_RETURN(image.digest, Digest::parse(j.at("digest").get<std::string>()));
        ASSIGN_OR_RETURN(image.config, Digest::parse(j.at("config").get<std::string>()));
        for (const auto& layer : j.at("layers")) {
            ASSIGN_OR_RETURN(Digest d, Digest::parse(layer.get<std::string>()));
            image.layers.push_back(std::move(d));
        }
        image.size = j.at("size").get<uint64_t>();
        image.entries = j.at("entries").get<uint64_t>();
        image.source = j.value("source", "");
        image.created = j.value("created", "");
        image.os_release = j.value("os_release", "");
        if (j.contains("stats")) {
            image.stats = stats_from_json(j.at("stats"));
        }
        return image;
    } catch (const json::exception& e) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("image store: meta/{}: {}", file, e.what())};
    }
}

Result<std::vector<StoredImage>> ImageStore::list() const {
    ASSIGN_OR_RETURN(Names names, read_names());
    std::vector<StoredImage> out;
    for (const auto& [name, d] : names.by_name) {
        auto image = metadata(d.digest);
        if (!image) {
            continue;  // a name whose tree was never finished: not an image
        }
        image->name = name;
        out.push_back(std::move(image).value());
    }
    return out;
}

Result<StoredImage> ImageStore::find(std::string_view ref) const {
    if (ref.starts_with("sha256:")) {
        ASSIGN_OR_RETURN(Digest digest, Digest::parse(ref));
        if (!has_tree(digest)) {
            return Error{Errc::kNotFound,
                         fmt::format("the image store {} has no image {}; `stockade image list` "
                                     "shows what it has",
                                     dir_.path(), ref)};
        }
        return metadata(digest);
    }
    std::string_view name = ref;
    std::optional<Digest> pinned;
    if (const size_t at = ref.find('@'); at != std::string_view::npos) {
        name = ref.substr(0, at);
        ASSIGN_OR_RETURN(Digest d, Digest::parse(ref.substr(at + 1)));
        pinned = std::move(d);
    }
    ASSIGN_OR_RETURN(Names names, read_names());
    const auto it = names.by_name.find(std::string(name));
    if (it == names.by_name.end()) {
        std::string known;
        for (const auto& [n, d] : names.by_name) {
            known += (known.empty() ? "" : ", ") + n;
        }
        return Error{
            Errc::kNotFound,
            fmt::format("no image \"{}\" in the store {} ({}); import, pull or build "
                        "it first (`stockade image --help`)",
                        name, dir_.path(), known.empty() ? "it has none" : "it has " + known)};
    }
    if (pinned && *pinned != it->second.digest) {
        return Error{Errc::kFailedPrecondition,
                     fmt::format("image \"{}\" is {}, not the {} asked for: pull or import the "
                                 "pinned image, or drop the pin",
                                 name, it->second.digest.str(), pinned->str())};
    }
    ASSIGN_OR_RETURN(StoredImage image, metadata(it->second.digest));
    image.name = std::string(name);
    return image;
}

Result<HeldTree> ImageStore::hold_tree(const Digest& digest) const {
    const std::string hex(digest.hex());
    auto fd = open_at(trees_->get(), hex, O_RDONLY | O_DIRECTORY);
    if (!fd) {
        return Error{Errc::kNotFound,
                     fmt::format("the image store {} has no tree for {}: import the image again",
                                 dir_.path(), digest.str())};
    }
    if (retry_eintr([&] { return ::flock(fd->get(), LOCK_SH); }) != 0) {
        return errno_error(fmt::format("hold image tree {}", digest.str()), errno);
    }
    ASSIGN_OR_RETURN(HostDir dir, HostDir::adopt(std::move(fd).value()));
    return HeldTree{.dir = std::move(dir), .digest = digest};
}

Status ImageStore::remove(std::string_view name) {
    ASSIGN_OR_RETURN(UniqueFd lock, lock_store());
    ASSIGN_OR_RETURN(Names names, read_names());
    if (names.by_name.erase(std::string(name)) == 0) {
        return Error{Errc::kNotFound,
                     fmt::format("no image \"{}\" in the store {}", name, dir_.path())};
    }
    return write_names(names);
}

Status ImageStore::tag(std::string_view name, const Digest& digest) {
    RETURN_IF_ERROR(check_image_name(name));
    ASSIGN_OR_RETURN(UniqueFd blob, open_blob(digest));
    struct stat st {};
    if (::fstat(blob.get(), &st) != 0) {
        return errno_error("stat the manifest blob", errno);
    }
    ASSIGN_OR_RETURN(std::string manifest_text, read_all(blob.get(), kMaxDocumentBytes));
    ASSIGN_OR_RETURN(ManifestDocument doc, parse_manifest_document(manifest_text));
    const auto* manifest = std::get_if<ImageManifest>(&doc);
    std::string type = manifest != nullptr && !manifest->media_type.empty()
                           ? manifest->media_type
                           : std::string(media_type::kOciManifest);
    ASSIGN_OR_RETURN(UniqueFd lock, lock_store());
    ASSIGN_OR_RETURN(Names names, read_names());
    names.by_name[std::string(name)] = Descriptor{
        .media_type = std::move(type), .digest = digest, .size = static_cast<uint64_t>(st.st_size)};
    return write_names(names);
}

ImageStore::Staging::~Staging() {
    if (fd_) {
        fd_.reset();
        (void)remove_tree_at(tmp_fd_, name_);
    }
}

Result<ImageStore::Staging> ImageStore::make_staging() const {
    for (int attempt = 0; attempt < 8; ++attempt) {
        std::string name = fmt::format("import-{}", random_hex(8));
        if (::mkdirat(tmp_->get(), name.c_str(), 0700) != 0) {
            if (errno == EEXIST) {
                continue;
            }
            return errno_error("make a temporary directory in the image store", errno);
        }
        ASSIGN_OR_RETURN(UniqueFd fd, open_at(tmp_->get(), name, O_RDONLY | O_DIRECTORY));
        // Held until the import ends: gc removes only what no live import holds.
        (void)::flock(fd.get(), LOCK_EX | LOCK_NB);
        return Staging(tmp_->get(), std::move(fd), std::move(name));
    }
    return Error{Errc::kInternal, "no free temporary name in the image store"};
}

bool ImageStore::has_blob(const Digest& digest) const {
    return ::faccessat(blobs_->get(), std::string(digest.hex()).c_str(), F_OK,
                       AT_SYMLINK_NOFOLLOW) == 0;
}

Result<UniqueFd> ImageStore::open_blob(const Digest& digest) const {
    auto fd = open_at(blobs_->get(), std::string(digest.hex()), O_RDONLY);
    if (!fd) {
        return Error{Errc::kNotFound, fmt::format("the image store has no blob {}", digest.str())};
    }
    return fd;
}

Status ImageStore::adopt_blob(int dir_fd, const std::string& name, const Digest& digest) const {
    const std::string hex(digest.hex());
    if (has_blob(digest)) {
        (void)::unlinkat(dir_fd, name.c_str(), 0);
        return {};
    }
    if (::renameat(dir_fd, name.c_str(), blobs_->get(), hex.c_str()) != 0) {
        return errno_error(fmt::format("store blob {}", digest.str()), errno);
    }
    return {};
}

Status ImageStore::put_blob(const Digest& digest, std::string_view bytes) const {
    if (has_blob(digest)) {
        return {};
    }
    const std::string tmp = fmt::format(".{}.{}", digest.hex(), random_hex(4));
    {
        ASSIGN_OR_RETURN(UniqueFd fd,
                         open_at(blobs_->get(), tmp, O_WRONLY | O_CREAT | O_EXCL, 0600));
        RETURN_IF_ERROR(write_all(fd.get(), bytes));
    }
    return adopt_blob(blobs_->get(), tmp, digest);
}

Result<UniqueFd> ImageStore::lock_digest(const Digest& digest) const {
    ASSIGN_OR_RETURN(UniqueFd fd,
                     open_at(locks_->get(), std::string(digest.hex()), O_RDWR | O_CREAT, 0600));
    if (retry_eintr([&] { return ::flock(fd.get(), LOCK_EX); }) != 0) {
        return errno_error(fmt::format("lock image {}", digest.str()), errno);
    }
    return fd;
}

bool ImageStore::has_tree(const Digest& digest) const {
    const std::string hex(digest.hex());
    struct stat st {};
    return ::fstatat(trees_->get(), hex.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
           S_ISDIR(st.st_mode) &&
           ::faccessat(meta_->get(), fmt::format("{}.json", hex).c_str(), F_OK,
                       AT_SYMLINK_NOFOLLOW) == 0;
}

Status ImageStore::publish(int dir_fd, const std::string& tree, const StoredImage& image) {
    const std::string hex(image.digest.hex());
    json layers = json::array();
    for (const Digest& d : image.layers) {
        layers.push_back(d.str());
    }
    const json meta{{"digest", image.digest.str()},
                    {"config", image.config.str()},
                    {"layers", layers},
                    {"size", image.size},
                    {"entries", image.entries},
                    {"source", image.source},
                    {"created", image.created.empty() ? now_rfc3339() : image.created},
                    {"os_release", image.os_release},
                    {"stats", stats_json(image.stats)}};
    if (!has_tree(image.digest)) {
        // The tree first, its metadata after: has_tree() needs both, so a crash between them
        // leaves a tree that gc removes.
        struct stat st {};
        if (::fstatat(trees_->get(), hex.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
            RETURN_IF_ERROR(remove_tree_at(trees_->get(), hex));
        }
        if (::renameat(dir_fd, tree.c_str(), trees_->get(), hex.c_str()) != 0) {
            return errno_error(fmt::format("publish image tree {}", image.digest.str()), errno);
        }
        RETURN_IF_ERROR(replace_at(meta_->get(), fmt::format("{}.json", hex), meta.dump(2)));
    }
    if (!image.name.empty()) {
        RETURN_IF_ERROR(tag(image.name, image.digest));
    }
    return {};
}

Result<ImageStore::GcResult> ImageStore::gc() {
    ASSIGN_OR_RETURN(UniqueFd lock, lock_store());
    ASSIGN_OR_RETURN(Names names, read_names());
    GcResult result;
    std::set<std::string> kept_trees;
    std::set<std::string> kept_blobs;
    for (const auto& [name, d] : names.by_name) {
        kept_trees.insert(std::string(d.digest.hex()));
    }
    // Trees: unnamed ones go, unless a session holds them (its shared lock).
    ASSIGN_OR_RETURN(std::vector<std::string> trees, names_in(trees_->get()));
    for (const std::string& hex : trees) {
        if (kept_trees.contains(hex)) {
            continue;
        }
        auto fd = open_at(trees_->get(), hex, O_RDONLY | O_DIRECTORY);
        if (fd && ::flock(fd->get(), LOCK_EX | LOCK_NB) != 0) {
            kept_trees.insert(hex);
            ++result.trees_in_use;
            continue;
        }
        const uint64_t bytes = fd ? count_tree(fd->get()).value_or(TreeCount{}).bytes : 0;
        // Out of sight first, so that a session starting now cannot find it half-removed.
        const std::string doomed = fmt::format("gc-{}-{}", hex, random_hex(4));
        if (::renameat(trees_->get(), hex.c_str(), tmp_->get(), doomed.c_str()) != 0) {
            continue;
        }
        (void)::unlinkat(meta_->get(), fmt::format("{}.json", hex).c_str(), 0);
        (void)remove_tree_at(tmp_->get(), doomed);
        ++result.trees_removed;
        result.bytes_freed += bytes;
    }
    // Blobs: those of every kept image (its manifest, config and layers).
    for (const std::string& hex : kept_trees) {
        auto digest = Digest::parse("sha256:" + hex);
        if (!digest) {
            continue;
        }
        kept_blobs.insert(hex);
        if (auto image = metadata(*digest)) {
            kept_blobs.insert(std::string(image->config.hex()));
            for (const Digest& layer : image->layers) {
                kept_blobs.insert(std::string(layer.hex()));
            }
        }
    }
    ASSIGN_OR_RETURN(std::vector<std::string> blobs, names_in(blobs_->get()));
    for (const std::string& name : blobs) {
        if (kept_blobs.contains(name)) {
            continue;
        }
        if (!is_hex_digest_name(name)) {
            // A temporary blob of a live import is locked by its import's staging, not here:
            // only finished blobs are named by their digest. Leftovers of dead ones go.
            struct stat st {};
            if (::fstatat(blobs_->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                std::chrono::system_clock::now() -
                        std::chrono::system_clock::from_time_t(st.st_mtime) <
                    std::chrono::hours(1)) {
                continue;
            }
        }
        struct stat st {};
        if (::fstatat(blobs_->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            ::unlinkat(blobs_->get(), name.c_str(), 0) == 0) {
            ++result.blobs_removed;
            result.bytes_freed += static_cast<uint64_t>(st.st_size);
        }
    }
    // Metadata without a tree, and temporaries no live import holds.
    if (auto metas = names_in(meta_->get())) {
        for (const std::string& file : *metas) {
            const std::string hex = file.substr(0, file.find('.'));
            struct stat st {};
            if (::fstatat(trees_->get(), hex.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
                (void)::unlinkat(meta_->get(), file.c_str(), 0);
            }
        }
    }
    ASSIGN_OR_RETURN(std::vector<std::string> temporaries, names_in(tmp_->get()));
    for (const std::string& name : temporaries) {
        auto fd = open_at(tmp_->get(), name, O_RDONLY | O_DIRECTORY);
        if (fd && ::flock(fd->get(), LOCK_EX | LOCK_NB) != 0) {
            continue;  // an import in progress
        }
        fd = UniqueFd();
        if (remove_tree_at(tmp_->get(), name).has_value()) {
            ++result.temporaries_removed;
        }
    }
    return result;
}

Status remove_tree_at(int parent, const std::string& name) {
    struct stat top {};
    if (::fstatat(parent, name.c_str(), &top, AT_SYMLINK_NOFOLLOW) != 0) {
        return errno == ENOENT ? ok_status() : errno_error(fmt::format("remove {}", name), errno);
    }
    if (!S_ISDIR(top.st_mode)) {
        if (::unlinkat(parent, name.c_str(), 0) != 0) {
            return errno_error(fmt::format("remove {}", name), errno);
        }
        return {};
    }
    // Depth-first with one open directory at a time: the way down is a stack of names and the
    // way up is "..", checked against the device and inode seen on the way down (nobody else
    // writes in the store's directories).
    struct Frame {
        std::string name;
        dev_t dev;
        ino_t ino;
    };
    std::vector<Frame> stack;
    auto fd = open_at(parent, name, O_RDONLY | O_DIRECTORY);
    if (!fd) {
        return std::move(fd).error();
    }
    UniqueFd cur = std::move(fd).value();
    std::string cur_name = name;
    dev_t parent_dev = 0;
    ino_t parent_ino = 0;
    {
        struct stat st {};
        (void)::fstat(parent, &st);
        parent_dev = st.st_dev;
        parent_ino = st.st_ino;
    }
    for (;;) {
        (void)::fchmod(cur.get(), 0700);
        ASSIGN_OR_RETURN(std::vector<std::string> entries, names_in(cur.get()));
        std::optional<std::string> subdir;
        for (const std::string& entry : entries) {
            struct stat st {};
            if (::fstatat(cur.get(), entry.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
                continue;
            }
            if (S_ISDIR(st.st_mode)) {
                if (::unlinkat(cur.get(), entry.c_str(), AT_REMOVEDIR) != 0) {
                    subdir = entry;
                    break;
                }
            } else if (::unlinkat(cur.get(), entry.c_str(), 0) != 0 && errno != ENOENT) {
                return errno_error(fmt::format("remove {}", entry), errno);
            }
        }
        struct stat here {};
        (void)::fstat(cur.get(), &here);
        if (subdir) {
            ASSIGN_OR_RETURN(UniqueFd next, open_at(cur.get(), *subdir, O_RDONLY | O_DIRECTORY));
            stack.push_back(Frame{cur_name, here.st_dev, here.st_ino});
            cur = std::move(next);
            cur_name = *subdir;
            continue;
        }
        // Empty: remove it from its parent.
        if (stack.empty()) {
            cur = UniqueFd();
            if (::unlinkat(parent, cur_name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
                return errno_error(fmt::format("remove {}", cur_name), errno);
            }
            (void)parent_dev;
            (void)parent_ino;
            return {};
        }
        ASSIGN_OR_RETURN(UniqueFd up, open_at(cur.get(), "..", O_RDONLY | O_DIRECTORY));
        struct stat up_st {};
        if (::fstat(up.get(), &up_st) != 0 || up_st.st_dev != stack.back().dev ||
            up_st.st_ino != stack.back().ino) {
            return Error{Errc::kFailedPrecondition,
                         fmt::format("remove {}: a directory moved while it was removed", name)};
        }
        cur = std::move(up);
        if (::unlinkat(cur.get(), cur_name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
            return errno_error(fmt::format("remove {}", cur_name), errno);
        }
        cur_name = stack.back().name;
        stack.pop_back();
    }
}

Result<TreeCount> count_tree(int dir) {
    TreeCount count;
    // Directories still to read, as paths relative to `dir`, each opened beneath it without
    // following a symlink: one descriptor open at a time, however wide or deep the tree.
    std::vector<std::string> pending{"."};
    while (!pending.empty()) {
        const std::string rel = std::move(pending.back());
        pending.pop_back();
        open_how how{};
        how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW;
        how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
        const long got = ::syscall(SYS_openat2, dir, rel.c_str(), &how, sizeof how);
        if (got < 0) {
            continue;
        }
        const UniqueFd cur(static_cast<int>(got));
        ASSIGN_OR_RETURN(std::vector<std::string> entries, names_in(cur.get()));
        for (const std::string& entry : entries) {
            struct stat st {};
            if (::fstatat(cur.get(), entry.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
                continue;
            }
            ++count.entries;
            if (S_ISREG(st.st_mode)) {
                count.bytes += static_cast<uint64_t>(st.st_size);
            } else if (S_ISDIR(st.st_mode)) {
                pending.push_back(rel == "." ? entry : rel + "/" + entry);
            }
        }
    }
    return count;
}

std::string read_os_release(int root) {
    for (const char* path : {"etc/os-release", "usr/lib/os-release"}) {
        open_how how{};
        how.flags = O_RDONLY | O_CLOEXEC;
        how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
        const long fd = ::syscall(SYS_openat2, root, path, &how, sizeof how);
        if (fd < 0) {
            continue;
        }
        UniqueFd file(static_cast<int>(fd));
        struct stat st {};
        if (::fstat(file.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
            continue;
        }
        auto text = read_all(file.get(), 64 << 10);
        if (!text) {
            continue;
        }
        std::string_view rest = *text;
        while (!rest.empty()) {
            const size_t nl = rest.find('\n');
            std::string_view line = rest.substr(0, nl);
            rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
            if (!line.starts_with("PRETTY_NAME=")) {
                continue;
            }
            std::string_view value = line.substr(12);
            if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
                value.back() == value.front()) {
                value = value.substr(1, value.size() - 2);
            }
            std::string out;
            for (char c : value) {
                if (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f && c != '\\') {
                    out += c;
                }
            }
            return out.substr(0, 200);
        }
    }
    return {};
}

}  // namespace stockade::images
