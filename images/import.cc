// `stockade image import`: see import.h.
#include "images/import.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/crypto.h"
#include "common/syscall.h"
#include "images/archive_reader.h"
#include "images/entry_path.h"
#include "images/libarchive.h"
#include "images/oci_document.h"

namespace stockade::images {
namespace {

using json = nlohmann::json;

constexpr size_t kCopyBlock = size_t{1} << 20;
constexpr int kMaxIndexDepth = 4;
constexpr std::string_view kRefNameAnnotation = "org.opencontainers.image.ref.name";
constexpr std::string_view kDefaultPath =
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// Opens a blob of the image being imported for reading, from its start; kNotFound when the
// input does not have it.
using BlobOpener = std::function<Result<UniqueFd>(const Digest&)>;

Error missing_blob(const Digest& digest, std::string_view what) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("{} {} is missing from the image: the archive or layout is "
                             "incomplete; export the image again",
                             what, digest.str())};
}

// Reads a document blob (a manifest, an index, a config) whole and checks its digest.
Result<std::string> read_document(const BlobOpener& open, const Digest& digest,
                                  std::string_view what) {
    auto fd = open(digest);
    if (!fd) {
        return missing_blob(digest, what);
    }
    auto text = read_all(fd->get(), kMaxDocumentBytes + 1);
    if (!text) {
        return std::move(text).error().wrap(fmt::format("read {} {}", what, digest.str()));
    }
    if (text->size() > kMaxDocumentBytes) {
        return Error{Errc::kResourceExhausted,
                     fmt::format("{} {} is larger than {} bytes: not an image document", what,
                                 digest.str(), kMaxDocumentBytes)};
    }
    if (auto ok = verify(*text, digest); !ok) {
        return std::move(ok).error().wrap(fmt::format("{} {}", what, digest.str()));
    }
    return text;
}

// Copies a blob into the store, checking its digest and size as it goes; nothing unverified
// ever lands in blobs/.
// Moves a blob already verified into the store's blobs/; false when it is not there to move.
using BlobAdopter = std::function<bool(const Descriptor&)>;

Status store_blob(ImageStore& store, int staging_fd, const BlobOpener& open, const Descriptor& blob,
                  std::string_view what, const BlobAdopter& adopt) {
    if (store.has_blob(blob.digest) || (adopt && adopt(blob))) {
        return {};
    }
    auto in = open(blob.digest);
    if (!in) {
        return missing_blob(blob.digest, what);
    }
    const std::string tmp = fmt::format("blob-{}", blob.digest.hex());
    const int fd = ::openat(staging_fd, tmp.c_str(),
                            O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        return errno_error("write a blob into the image store", errno);
    }
    UniqueFd out(fd);
    DigestVerifier verifier(blob.digest, blob.size);
    std::vector<char> buf(kCopyBlock);
    for (;;) {
        const ssize_t n = retry_eintr([&] { return ::read(in->get(), buf.data(), buf.size()); });
        if (n < 0) {
            return errno_error(fmt::format("read {} {}", what, blob.digest.str()), errno);
        }
        if (n == 0) {
            break;
        }
        const std::string_view chunk(buf.data(), static_cast<size_t>(n));
        if (auto ok = verifier.update(chunk); !ok) {
            return std::move(ok).error().wrap(fmt::format("{} {}", what, blob.digest.str()));
        }
        RETURN_IF_ERROR(write_all(out.get(), chunk));
    }
    if (auto ok = verifier.finish(); !ok) {
        return std::move(ok).error().wrap(fmt::format("{} {}", what, blob.digest.str()));
    }
    out.reset();
    return store.adopt_blob(staging_fd, tmp, blob.digest);
}

// The placeholders a sandbox's generated files cover (import.h).
Status make_etc_placeholders(int tree) {
    struct stat st {};
    if (::fstatat(tree, "etc", &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)) {
        if (::unlinkat(tree, "etc", 0) != 0) {
            return errno_error("replace the image's /etc, which is not a directory", errno);
        }
    }
    const bool made_etc = ::mkdirat(tree, "etc", 0755) == 0;
    if (!made_etc && errno != EEXIST) {
        return errno_error("make the image's /etc", errno);
    }
    const int etc = ::openat(tree, "etc", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (etc < 0) {
        return errno_error("open the image's /etc", errno);
    }
    const UniqueFd etc_fd(etc);
    // The placeholders, and /etc around them, keep fixed times: two unpackings of one image
    // are the same tree (what `image build` compares its steps' changes against).
    struct stat etc_st {};
    if (::fstat(etc, &etc_st) != 0) {
        return errno_error("stat the image's /etc", errno);
    }
    bool made = false;
    const struct timespec epoch[2] = {{0, 0}, {0, 0}};
    for (const char* name : kGeneratedEtcFiles) {
        if (::fstatat(etc, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
            if (S_ISREG(st.st_mode)) {
                continue;
            }
            RETURN_IF_ERROR(remove_tree_at(etc, name));
        }
        const int fd =
            ::openat(etc, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0) {
            return errno_error(fmt::format("make /etc/{} in the image", name), errno);
        }
        const UniqueFd placeholder(fd);
        if (::futimens(placeholder.get(), epoch) != 0) {
            return errno_error(fmt::format("set the time of /etc/{} in the image", name), errno);
        }
        made = true;
    }
    if (made) {
        const struct timespec kept[2] = {etc_st.st_atim, etc_st.st_mtim};
        if (::futimens(etc, made_etc ? epoch : kept) != 0) {
            return errno_error("set the time of the image's /etc", errno);
        }
    }
    return {};
}

// Applies `layers` (blobs of the store), lowest first, beneath `tree_fd`, and makes the /etc
// placeholders.
Result<ApplyStats> write_tree(const ImageStore& store, const std::vector<Digest>& layers,
                              int tree_fd, const ImportOptions& options) {
    LayerApplier applier(tree_fd, ApplyOptions{.preserve_owner = options.preserve_owner,
                                               .max_bytes = options.max_bytes,
                                               .max_entries = options.max_entries});
    for (size_t i = 0; i < layers.size(); ++i) {
        ASSIGN_OR_RETURN(UniqueFd blob, store.open_blob(layers[i]));
        RETURN_IF_ERROR(applier.apply(LayerSource::from_fd(
            fmt::format("layer {} of {} ({})", i + 1, layers.size(), layers[i].str()),
            blob.get())));
    }
    RETURN_IF_ERROR(applier.finish());
    RETURN_IF_ERROR(make_etc_placeholders(tree_fd));
    return applier.stats();
}

// The heart of every import: a manifest (or an index, resolved for this host) whose blobs
// `open` finds, into the store.
Result<ImportResult> import_manifest(ImageStore& store, ImageStore::Staging& staging,
                                     const BlobOpener& open, Digest digest, std::string format,
                                     const std::string& source, const ImportOptions& options,
                                     const BlobAdopter& adopt = {}) {
    std::string text;
    ImageManifest manifest;
    for (int depth = 0;; ++depth) {
        ASSIGN_OR_RETURN(text, read_document(open, digest, "manifest"));
        ASSIGN_OR_RETURN(ManifestDocument doc, parse_manifest_document(text));
        if (auto* m = std::get_if<ImageManifest>(&doc)) {
            manifest = std::move(*m);
            break;
        }
        if (depth >= kMaxIndexDepth) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("image index {} nests more than {} indexes deep", digest.str(),
                                     kMaxIndexDepth)};
        }
        ASSIGN_OR_RETURN(Descriptor chosen,
                         select_manifest(std::get<ImageIndex>(doc), host_platform()));
        digest = chosen.digest;
    }
    ASSIGN_OR_RETURN(std::string config_text,
                     read_document(open, manifest.config.digest, "config"));
    ASSIGN_OR_RETURN(ImageConfig config, parse_image_config(config_text));
    RETURN_IF_ERROR(check_manifest_config(manifest, config));
    if (!platform_matches(config.platform, host_platform())) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("image {} is for {}; this host runs {}: import the image for "
                                 "this platform",
                                 digest.str(), config.platform.str(), host_platform().str())};
    }

    // One importer per image at a time; the second finds the first one's tree.
    ASSIGN_OR_RETURN(UniqueFd lock, store.lock_digest(digest));
    ImportResult result;
    result.format = std::move(format);
    for (size_t i = 0; i < manifest.layers.size(); ++i) {
        RETURN_IF_ERROR(store_blob(store, staging.fd(), open, manifest.layers[i],
                                   fmt::format("layer {} of {}", i + 1, manifest.layers.size()),
                                   adopt));
    }
    RETURN_IF_ERROR(store.put_blob(manifest.config.digest, config_text));
    RETURN_IF_ERROR(store.put_blob(digest, text));
    if (store.has_tree(digest)) {
        ASSIGN_OR_RETURN(result.image, store.metadata(digest));
        if (!options.name.empty()) {
            RETURN_IF_ERROR(store.tag(options.name, digest));
        }
        result.image.name = options.name;
        result.already_present = true;
        return result;
    }

    if (::mkdirat(staging.fd(), "tree", 0755) != 0) {
        return errno_error("make the image's tree", errno);
    }
    const int tree_fd =
        ::openat(staging.fd(), "tree", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (tree_fd < 0) {
        return errno_error("open the image's tree", errno);
    }
    const UniqueFd tree(tree_fd);
    std::vector<Digest> layers;
    for (const Descriptor& layer : manifest.layers) {
        layers.push_back(layer.digest);
    }
    ASSIGN_OR_RETURN(ApplyStats stats, write_tree(store, layers, tree.get(), options));
    ASSIGN_OR_RETURN(TreeCount count, count_tree(tree.get()));

    StoredImage& image = result.image;
    image.name = options.name;
    image.digest = digest;
    image.config = manifest.config.digest;
    for (const Descriptor& layer : manifest.layers) {
        image.layers.push_back(layer.digest);
    }
    image.size = count.bytes;
    image.entries = count.entries;
    image.source = source;
    image.os_release = read_os_release(tree.get());
    image.stats = stats;
    RETURN_IF_ERROR(store.publish(staging.fd(), "tree", image));
    ASSIGN_OR_RETURN(StoredImage published, store.metadata(digest));
    published.name = options.name;
    image = std::move(published);
    return result;
}

Result<UniqueFd> open_beneath(int dir, const std::string& path) {
    open_how how{};
    how.flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    const long fd = ::syscall(SYS_openat2, dir, path.c_str(), &how, sizeof how);
    if (fd < 0) {
        return errno_error(fmt::format("open {}", path), errno);
    }
    return UniqueFd(static_cast<int>(fd));
}

// The manifest an OCI layout's index.json names: `ref` as a ref.name annotation or a digest,
// or the only one there is.
Result<Digest> choose_in_layout(const ImageIndex& index, const std::string& ref) {
    if (ref.empty()) {
        if (index.manifests.size() == 1) {
            return index.manifests.front().digest;
        }
        std::string names;
        for (const Descriptor& d : index.manifests) {
            const auto name = d.annotations.find(std::string(kRefNameAnnotation));
            names += fmt::format("{}{}", names.empty() ? "" : ", ",
                                 name != d.annotations.end() ? name->second : d.digest.str());
        }
        return Error{Errc::kInvalidArgument,
                     fmt::format("the layout's index.json lists {} images ({}): name one with "
                                 "PATH:REF",
                                 index.manifests.size(), names.empty() ? "none" : names)};
    }
    for (const Descriptor& d : index.manifests) {
        const auto name = d.annotations.find(std::string(kRefNameAnnotation));
        if (d.digest.str() == ref || (name != d.annotations.end() && name->second == ref)) {
            return d.digest;
        }
    }
    return Error{Errc::kNotFound, fmt::format("the layout's index.json has no image \"{}\"", ref)};
}

// A regular file of an archive, copied into the staging directory.
struct ExtractedFile {
    std::string file;  // its name in the staging directory
    Digest digest;
    uint64_t size = 0;
};

Status check_limits(uint64_t entries, uint64_t bytes, const ImportOptions& options,
                    std::string_view entry) {
    if (entries > options.max_entries) {
        return Error{Errc::kResourceExhausted,
                     fmt::format("the archive has more than {} entries (at {}): raise "
                                 "--max-entries if it is right",
                                 options.max_entries, quote_entry_name(entry))};
    }
    if (bytes > options.max_bytes) {
        return Error{Errc::kResourceExhausted,
                     fmt::format("the archive holds more than {} bytes uncompressed (at {}): "
                                 "raise --max-size if it is right",
                                 options.max_bytes, quote_entry_name(entry))};
    }
    return {};
}

// The regular files of the archive at `fd` whose names `wanted` accepts, copied into
// `staging_fd`, by their normalised names. Counted against the limits as they are read.
Result<std::map<std::string, ExtractedFile>> extract_files(
    int fd, int staging_fd, const ImportOptions& options,
    const std::function<bool(const std::string&)>& wanted) {
    if (::lseek(fd, 0, SEEK_SET) != 0) {
        return errno_error("rewind the archive", errno);
    }
    ASSIGN_OR_RETURN(const LibArchive* lib, libarchive());
    ASSIGN_OR_RETURN(ArchivePtr a, open_reader(*lib, LayerSource::from_fd("the archive", fd)));
    std::map<std::string, ExtractedFile> files;
    uint64_t entries = 0;
    uint64_t bytes = 0;
    std::vector<char> buf(kCopyBlock);
    for (;;) {
        archive_entry* entry = nullptr;
        const int r = lib->read_next_header(a.get(), &entry);
        if (r == ARCHIVE_EOF) {
            break;
        }
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("read the archive: {}", archive_message(*lib, a.get()))};
        }
        const char* raw = lib->entry_pathname(entry);
        const std::string raw_name = raw != nullptr ? raw : "";
        ++entries;
        RETURN_IF_ERROR(check_limits(entries, bytes, options, raw_name));
        auto name = normalize_entry_path(raw_name);
        if (!name) {
            return std::move(name).error();
        }
        if (lib->entry_filetype(entry) != AE_IFREG || !wanted(*name)) {
            continue;
        }
        const std::string file = fmt::format("file-{}", files.size());
        const int out_fd = ::openat(staging_fd, file.c_str(),
                                    O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (out_fd < 0) {
            return errno_error("write into the image store", errno);
        }
        const UniqueFd out(out_fd);
        Sha256Hasher hasher;
        for (;;) {
            const la_ssize_t n = lib->read_data(a.get(), buf.data(), buf.size());
            if (n < 0) {
                return Error{Errc::kInvalidArgument,
                             fmt::format("read entry {}: {}", quote_entry_name(*name),
                                         archive_message(*lib, a.get()))};
            }
            if (n == 0) {
                break;
            }
            bytes += static_cast<uint64_t>(n);
            RETURN_IF_ERROR(check_limits(entries, bytes, options, *name));
            const std::string_view chunk(buf.data(), static_cast<size_t>(n));
            hasher.update(chunk);
            RETURN_IF_ERROR(write_all(out.get(), chunk));
        }
        const uint64_t size = hasher.size();
        files[*name] = ExtractedFile{file, Digest::from_sha256(hasher.finish()), size};
    }
    return files;
}

// Names a tar's regular files, reading headers only.
Result<std::set<std::string>> tar_names(int fd) {
    if (::lseek(fd, 0, SEEK_SET) != 0) {
        return errno_error("rewind the archive", errno);
    }
    ASSIGN_OR_RETURN(const LibArchive* lib, libarchive());
    ASSIGN_OR_RETURN(ArchivePtr a, open_reader(*lib, LayerSource::from_fd("the archive", fd)));
    std::set<std::string> names;
    for (;;) {
        archive_entry* entry = nullptr;
        const int r = lib->read_next_header(a.get(), &entry);
        if (r == ARCHIVE_EOF) {
            break;
        }
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
            return Error{Errc::kInvalidArgument, fmt::format("read the archive: {}; is it a tar?",
                                                             archive_message(*lib, a.get()))};
        }
        const char* raw = lib->entry_pathname(entry);
        if (raw == nullptr) {
            continue;
        }
        if (auto name = normalize_entry_path(raw); name && lib->entry_filetype(entry) == AE_IFREG) {
            names.insert(*name);
        }
        // Only the top of the archive says what it is: stop once it is clear.
        if (names.contains("oci-layout") || names.contains("manifest.json")) {
            break;
        }
    }
    return names;
}

// A blob opener over extracted files, by content digest.
BlobOpener extracted_opener(int staging_fd, const std::map<std::string, ExtractedFile>& files) {
    std::map<Digest, std::string> by_digest;
    for (const auto& [name, file] : files) {
        by_digest.emplace(file.digest, file.file);
    }
    return [staging_fd, by_digest](const Digest& digest) -> Result<UniqueFd> {
        const auto it = by_digest.find(digest);
        if (it == by_digest.end()) {
            return Error{Errc::kNotFound, digest.str()};
        }
        return open_beneath(staging_fd, it->second);
    };
}

// Files extracted from an archive were hashed on their way out: one whose digest and size
// are a layer's becomes that blob by a rename, rather than being copied and hashed again.
BlobAdopter extracted_adopter(const ImageStore& store, int staging_fd,
                              const std::map<std::string, ExtractedFile>& files) {
    std::map<Digest, ExtractedFile> by_digest;
    for (const auto& [name, file] : files) {
        by_digest.emplace(file.digest, file);
    }
    return [&store, staging_fd, by_digest](const Descriptor& d) {
        const auto it = by_digest.find(d.digest);
        return it != by_digest.end() && it->second.size == d.size &&
               store.adopt_blob(staging_fd, it->second.file, d.digest).has_value();
    };
}

// What compression a blob's first bytes show.
Result<LayerCompression> sniff_compression(int fd) {
    std::array<unsigned char, 4> magic{};
    const ssize_t n = ::pread(fd, magic.data(), magic.size(), 0);
    if (n < 0) {
        return errno_error("read a layer", errno);
    }
    if (n >= 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
        return LayerCompression::kGzip;
    }
    if (n >= 4 && magic[0] == 0x28 && magic[1] == 0xb5 && magic[2] == 0x2f && magic[3] == 0xfd) {
        return LayerCompression::kZstd;
    }
    return LayerCompression::kNone;
}

std::string_view layer_media_type(LayerCompression c) {
    switch (c) {
        case LayerCompression::kGzip:
            return media_type::kOciLayerGzip;
        case LayerCompression::kZstd:
            return media_type::kOciLayerZstd;
        case LayerCompression::kNone:
            break;
    }
    return media_type::kOciLayer;
}

json descriptor_json(std::string_view type, const Digest& digest, uint64_t size) {
    return json{{"mediaType", type}, {"digest", digest.str()}, {"size", size}};
}

// An OCI manifest of ours for a config and layers that came without one. Deterministic: the
// same inputs give the same bytes, so the same digest.
std::string make_manifest(const Digest& config, uint64_t config_size,
                          const std::vector<json>& layers) {
    const json manifest{{"schemaVersion", 2},
                        {"mediaType", media_type::kOciManifest},
                        {"config", descriptor_json(media_type::kOciConfig, config, config_size)},
                        {"layers", layers}};
    return manifest.dump();
}

// Writes `bytes` as a file of the staging directory and registers it with `files`.
Status add_document(int staging_fd, std::map<std::string, ExtractedFile>& files,
                    const std::string& name, const std::string& bytes) {
    const std::string file = fmt::format("doc-{}", files.size());
    const int fd = ::openat(staging_fd, file.c_str(),
                            O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        return errno_error("write into the image store", errno);
    }
    const UniqueFd out(fd);
    RETURN_IF_ERROR(write_all(out.get(), bytes));
    files[name] = ExtractedFile{file, Digest::of(bytes), bytes.size()};
    return {};
}

Result<ImportResult> import_docker_archive(ImageStore& store, ImageStore::Staging& staging, int fd,
                                           const std::string& source,
                                           const ImportOptions& options) {
    ASSIGN_OR_RETURN(auto files, extract_files(fd, staging.fd(), options,
                                               [](const std::string&) { return true; }));
    const auto manifest_file = files.find("manifest.json");
    if (manifest_file == files.end()) {
        return Error{Errc::kInvalidArgument, "the docker-archive has no manifest.json"};
    }
    ASSIGN_OR_RETURN(UniqueFd mfd, open_beneath(staging.fd(), manifest_file->second.file));
    ASSIGN_OR_RETURN(std::string text, read_all(mfd.get(), kMaxDocumentBytes));
    ASSIGN_OR_RETURN(auto images, parse_docker_archive_manifest(text));
    if (images.empty()) {
        return Error{Errc::kInvalidArgument, "the docker-archive's manifest.json lists no image"};
    }
    if (images.size() > 1) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("the docker-archive holds {} images: save one image per "
                                 "archive to import it",
                                 images.size())};
    }
    const DockerArchiveImage& image = images.front();
    auto find = [&](const std::string& name, std::string_view what) -> Result<ExtractedFile> {
        const auto it = files.find(name);
        if (it == files.end()) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("the docker-archive names {} {} but does not hold it", what,
                                     quote_entry_name(name))};
        }
        return it->second;
    };
    ASSIGN_OR_RETURN(ExtractedFile config, find(image.config, "config"));
    std::vector<json> layers;
    for (const std::string& name : image.layers) {
        ASSIGN_OR_RETURN(ExtractedFile layer, find(name, "layer"));
        ASSIGN_OR_RETURN(UniqueFd lfd, open_beneath(staging.fd(), layer.file));
        ASSIGN_OR_RETURN(LayerCompression c, sniff_compression(lfd.get()));
        layers.push_back(descriptor_json(layer_media_type(c), layer.digest, layer.size));
    }
    const std::string manifest = make_manifest(config.digest, config.size, layers);
    RETURN_IF_ERROR(add_document(staging.fd(), files, "(manifest)", manifest));
    return import_manifest(store, staging, extracted_opener(staging.fd(), files),
                           Digest::of(manifest), "docker-archive", source, options,
                           extracted_adopter(store, staging.fd(), files));
}

Result<ImportResult> import_layout_tar(ImageStore& store, ImageStore::Staging& staging, int fd,
                                       const std::string& ref, const std::string& source,
                                       const ImportOptions& options) {
    ASSIGN_OR_RETURN(
        auto files, extract_files(fd, staging.fd(), options, [](const std::string& name) {
            return name == "oci-layout" || name == "index.json" || name.starts_with("blobs/");
        }));
    for (const auto& [name, file] : files) {
        if (name.starts_with("blobs/sha256/") && name.substr(13) != file.digest.hex()) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("digest mismatch: entry {} holds {}", quote_entry_name(name),
                                     file.digest.str())};
        }
    }
    auto read_named = [&](const std::string& name) -> Result<std::string> {
        const auto it = files.find(name);
        if (it == files.end()) {
            return Error{Errc::kInvalidArgument, fmt::format("the OCI layout has no {}", name)};
        }
        ASSIGN_OR_RETURN(UniqueFd f, open_beneath(staging.fd(), it->second.file));
        return read_all(f.get(), kMaxDocumentBytes);
    };
    ASSIGN_OR_RETURN(std::string layout, read_named("oci-layout"));
    RETURN_IF_ERROR(parse_oci_layout(layout));
    ASSIGN_OR_RETURN(std::string index_text, read_named("index.json"));
    ASSIGN_OR_RETURN(ImageIndex index, parse_layout_index(index_text));
    ASSIGN_OR_RETURN(Digest digest, choose_in_layout(index, ref));
    return import_manifest(store, staging, extracted_opener(staging.fd(), files), digest,
                           "oci-archive", source, options,
                           extracted_adopter(store, staging.fd(), files));
}

// The digest of what a compressed layer decompresses to (its diff_id).
Result<Digest> uncompressed_digest(int fd) {
    if (::lseek(fd, 0, SEEK_SET) != 0) {
        return errno_error("rewind the archive", errno);
    }
    ASSIGN_OR_RETURN(const LibArchive* lib, libarchive());
    ArchivePtr a(lib->read_new(), ArchiveDeleter{lib});
    if (!a || lib->read_support_filter_gzip(a.get()) != ARCHIVE_OK ||
        lib->read_support_filter_zstd(a.get()) != ARCHIVE_OK ||
        lib->read_support_filter_xz(a.get()) != ARCHIVE_OK ||
        lib->read_support_filter_bzip2(a.get()) != ARCHIVE_OK ||
        lib->read_support_format_raw(a.get()) != ARCHIVE_OK ||
        lib->read_open_fd(a.get(), fd, kReadBlock) != ARCHIVE_OK) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("read the archive: {}", a ? archive_message(*lib, a.get()) : "")};
    }
    archive_entry* entry = nullptr;
    if (lib->read_next_header(a.get(), &entry) != ARCHIVE_OK) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("read the archive: {}", archive_message(*lib, a.get()))};
    }
    Sha256Hasher hasher;
    std::vector<char> buf(kCopyBlock);
    for (;;) {
        const la_ssize_t n = lib->read_data(a.get(), buf.data(), buf.size());
        if (n < 0) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("decompress the archive: {}", archive_message(*lib, a.get()))};
        }
        if (n == 0) {
            break;
        }
        hasher.update(std::string_view(buf.data(), static_cast<size_t>(n)));
    }
    return Digest::from_sha256(hasher.finish());
}

// The digest and size of the whole file `fd`, read from its start.
Result<std::pair<Digest, uint64_t>> digest_file(int fd) {
    if (::lseek(fd, 0, SEEK_SET) != 0) {
        return errno_error("rewind the archive", errno);
    }
    Sha256Hasher hasher;
    std::vector<char> buf(kCopyBlock);
    for (;;) {
        const ssize_t n = retry_eintr([&] { return ::read(fd, buf.data(), buf.size()); });
        if (n < 0) {
            return errno_error("read the archive", errno);
        }
        if (n == 0) {
            break;
        }
        hasher.update(std::string_view(buf.data(), static_cast<size_t>(n)));
    }
    const uint64_t size = hasher.size();
    return std::pair{Digest::from_sha256(hasher.finish()), size};
}

// An opener of the file `fd` as the blob `digest`, and of `documents` otherwise.
BlobOpener with_file(int fd, const Digest& digest, BlobOpener documents) {
    return [fd, digest, documents = std::move(documents)](const Digest& d) -> Result<UniqueFd> {
        if (d == digest) {
            const int dup = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
            if (dup < 0 || ::lseek(dup, 0, SEEK_SET) != 0) {
                return errno_error("reopen the archive", errno);
            }
            return UniqueFd(dup);
        }
        return documents(d);
    };
}

// A root file system tar: a one-layer image of ours around it.
Result<ImportResult> import_rootfs(ImageStore& store, ImageStore::Staging& staging, int fd,
                                   const std::string& source, const ImportOptions& options) {
    ASSIGN_OR_RETURN(const auto digested, digest_file(fd));
    const auto& [layer, size] = digested;
    ASSIGN_OR_RETURN(LayerCompression compression, sniff_compression(fd));
    Digest diff_id = layer;
    if (compression != LayerCompression::kNone) {
        ASSIGN_OR_RETURN(diff_id, uncompressed_digest(fd));
    }
    const Platform platform = host_platform();
    json config{{"architecture", platform.architecture},
                {"os", platform.os},
                {"config", json{{"Env", json::array({kDefaultPath})}}},
                {"rootfs", json{{"type", "layers"}, {"diff_ids", json::array({diff_id.str()})}}}};
    if (!platform.variant.empty()) {
        config["variant"] = platform.variant;
    }
    const std::string config_text = config.dump();
    const std::string manifest =
        make_manifest(Digest::of(config_text), config_text.size(),
                      {descriptor_json(layer_media_type(compression), layer, size)});
    std::map<std::string, ExtractedFile> files;
    RETURN_IF_ERROR(add_document(staging.fd(), files, "(config)", config_text));
    RETURN_IF_ERROR(add_document(staging.fd(), files, "(manifest)", manifest));
    const BlobOpener open = with_file(fd, layer, extracted_opener(staging.fd(), files));
    return import_manifest(store, staging, open, Digest::of(manifest), "rootfs", source, options);
}

}  // namespace

Status unpack_image(const ImageStore& store, const StoredImage& image, int dir_fd,
                    const ImportOptions& options) {
    ASSIGN_OR_RETURN(ApplyStats stats, write_tree(store, image.layers, dir_fd, options));
    (void)stats;
    return {};
}

Result<ImportResult> import_with_layer(ImageStore& store, const StoredImage& base, int layer_fd,
                                       const std::string& created_by, const std::string& source,
                                       const ImportOptions& options) {
    if (!options.name.empty()) {
        RETURN_IF_ERROR(check_image_name(options.name));
    }
    ASSIGN_OR_RETURN(const auto digested, digest_file(layer_fd));
    const auto& [layer, size] = digested;
    ASSIGN_OR_RETURN(UniqueFd config_blob, store.open_blob(base.config));
    ASSIGN_OR_RETURN(std::string config_text, read_all(config_blob.get(), kMaxDocumentBytes));
    ASSIGN_OR_RETURN(UniqueFd manifest_blob, store.open_blob(base.digest));
    ASSIGN_OR_RETURN(std::string base_manifest, read_all(manifest_blob.get(), kMaxDocumentBytes));
    json config = json::parse(config_text, nullptr, false);
    const json manifest_json = json::parse(base_manifest, nullptr, false);
    if (!config.is_object() || !config["rootfs"]["diff_ids"].is_array() ||
        !manifest_json.is_object() || !manifest_json["layers"].is_array()) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("image {}: its manifest or config is not one an image can be "
                                 "built on",
                                 base.digest.str())};
    }
    // History has one entry per layer (and none that is empty): the base's, made up where it
    // has none, then this layer's.
    json& history = config["history"];
    if (!history.is_array()) {
        history = json::array();
        for (size_t i = 0; i < base.layers.size(); ++i) {
            history.push_back(json{{"comment", "from " + base.digest.str()}});
        }
    }
    history.push_back(json{{"created_by", created_by}});
    config["rootfs"]["diff_ids"].push_back(layer.str());
    config_text = config.dump();
    std::vector<json> layers(manifest_json["layers"].begin(), manifest_json["layers"].end());
    layers.push_back(descriptor_json(media_type::kOciLayer, layer, size));
    const std::string manifest = make_manifest(Digest::of(config_text), config_text.size(), layers);

    ASSIGN_OR_RETURN(ImageStore::Staging staging, store.make_staging());
    std::map<std::string, ExtractedFile> files;
    RETURN_IF_ERROR(add_document(staging.fd(), files, "(config)", config_text));
    RETURN_IF_ERROR(add_document(staging.fd(), files, "(manifest)", manifest));
    const BlobOpener documents = extracted_opener(staging.fd(), files);
    const BlobOpener open = with_file(layer_fd, layer, [&](const Digest& d) -> Result<UniqueFd> {
        auto doc = documents(d);
        if (!doc && store.has_blob(d)) {
            return store.open_blob(d);
        }
        return doc;
    });
    return import_manifest(store, staging, open, Digest::of(manifest), "build", source, options);
}

Result<ImportResult> import_layout(ImageStore& store, int layout_fd, const std::string& ref,
                                   const std::string& source, const ImportOptions& options) {
    ASSIGN_OR_RETURN(UniqueFd layout_file, open_beneath(layout_fd, "oci-layout"));
    ASSIGN_OR_RETURN(std::string layout, read_all(layout_file.get(), 4096));
    RETURN_IF_ERROR(parse_oci_layout(layout));
    ASSIGN_OR_RETURN(UniqueFd index_file, open_beneath(layout_fd, "index.json"));
    ASSIGN_OR_RETURN(std::string index_text, read_all(index_file.get(), kMaxDocumentBytes));
    ASSIGN_OR_RETURN(ImageIndex index, parse_layout_index(index_text));
    ASSIGN_OR_RETURN(Digest digest, choose_in_layout(index, ref));
    ASSIGN_OR_RETURN(ImageStore::Staging staging, store.make_staging());
    // A blob the layout lacks may be in the store already (a pull skips those it has).
    const BlobOpener open = [layout_fd, &store](const Digest& d) -> Result<UniqueFd> {
        auto fd = open_beneath(layout_fd, fmt::format("blobs/sha256/{}", d.hex()));
        if (!fd && fd.error().code == Errc::kNotFound && store.has_blob(d)) {
            return store.open_blob(d);
        }
        return fd;
    };
    BlobAdopter adopt;
    UniqueFd blobs;
    if (options.layout_verified) {
        blobs.reset(
            ::openat(layout_fd, "blobs/sha256", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        adopt = [&store, dir = blobs.get()](const Descriptor& d) {
            const std::string hex(d.digest.hex());
            struct stat st {};
            return dir >= 0 && ::fstatat(dir, hex.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                   S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) == d.size &&
                   store.adopt_blob(dir, hex, d.digest).has_value();
        };
    }
    return import_manifest(store, staging, open, digest, "oci-layout", source, options, adopt);
}

Result<ImportResult> import_image(ImageStore& store, const std::string& path,
                                  const ImportOptions& options) {
    if (!options.name.empty()) {
        RETURN_IF_ERROR(check_image_name(options.name));
    }
    // PATH:REF picks one image of a layout that holds several.
    std::string file = path;
    std::string ref;
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) {
        const int err = errno;
        const size_t colon = path.rfind(':');
        if (colon == std::string::npos || colon == 0 ||
            ::stat(path.substr(0, colon).c_str(), &st) != 0) {
            return errno_error(fmt::format("image import {}", path), err);
        }
        file = path.substr(0, colon);
        ref = path.substr(colon + 1);
    }
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return errno_error(fmt::format("image import {}", file), errno);
    }
    const UniqueFd input(fd);
    ASSIGN_OR_RETURN(std::string absolute, path_of_fd(input.get()));
    if (::fstat(input.get(), &st) != 0) {
        return errno_error(fmt::format("image import {}", file), errno);
    }
    if (S_ISDIR(st.st_mode)) {
        if (::faccessat(input.get(), "oci-layout", F_OK, AT_SYMLINK_NOFOLLOW) != 0) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("{} is a directory but not an OCI image layout (it has no "
                                     "oci-layout file); for a root file system, import a tar "
                                     "of it (tar -C DIR -cf root.tar .)",
                                     absolute)};
        }
        return import_layout(store, input.get(), ref, "oci-layout:" + absolute, options);
    }
    if (!S_ISREG(st.st_mode)) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("{} is neither a file nor a directory", absolute)};
    }
    ASSIGN_OR_RETURN(std::set<std::string> names, tar_names(input.get()));
    ASSIGN_OR_RETURN(ImageStore::Staging staging, store.make_staging());
    if (names.contains("oci-layout")) {
        return import_layout_tar(store, staging, input.get(), ref, "oci-archive:" + absolute,
                                 options);
    }
    if (names.contains("manifest.json")) {
        return import_docker_archive(store, staging, input.get(), "docker-archive:" + absolute,
                                     options);
    }
    return import_rootfs(store, staging, input.get(), "rootfs:" + absolute, options);
}

}  // namespace stockade::images
