// The image store (DESIGN.md §8; issue 23): where `stockade image import|pull|build` put images
// and where `--image NAME` finds them. One directory, by default the state directory's
// `images/`, that only its owner can enter (0700): an image is someone else's tree — world-
// writable directories, executables — and nothing in it may be reachable by other host users.
//
//   STORE/oci-layout, index.json   an OCI image layout: `skopeo`, `umoci` and friends read the
//                                  store as `oci:STORE:NAME`; index.json is where names live
//                                  (each manifest's org.opencontainers.image.ref.name)
//   STORE/blobs/sha256/HEX         every manifest, config and layer, by digest, shared
//   STORE/trees/HEX/               one flattened root per manifest digest, shared by every
//                                  session on it; never changed once it is there
//   STORE/meta/HEX.json            what `image inspect` says of the tree
//   STORE/lock, STORE/locks/HEX    the store's lock (index.json, gc) and one per digest (two
//                                  imports of one image do the work once)
//   STORE/tmp/                     imports in progress, each in a directory of its own
//
// The store is opened once by its path (the operator's: a flag, the environment, the state
// directory) and everything beneath it is reached by descriptor, never following a symlink.
// Nothing appears half-made: an import writes under tmp/ and appears by rename(2), and a name
// appears only when index.json is replaced. A session holds its tree open with a shared lock
// (flock) for as long as it runs; `gc` removes a tree only when it can take that lock.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/host_dir.h"
#include "common/result.h"
#include "common/unique_fd.h"
#include "images/digest.h"
#include "images/layer_apply.h"

namespace stockade::images {

// What the store knows of one image.
struct StoredImage {
    std::string name{};  // a name (one of possibly several) pointing at it; empty: none
    Digest digest{};     // the manifest's: the image's identity
    Digest config{};
    std::vector<Digest> layers{};
    uint64_t size = 0;      // bytes of regular files in the tree
    uint64_t entries = 0;   // files, directories and links in the tree
    std::string source{};   // where it came from: "oci-layout:/path", "docker://host/name:tag"…
    std::string created{};  // when it entered the store (RFC 3339, UTC)
    std::string os_release{};  // the tree's /etc/os-release PRETTY_NAME, if it has one
    ApplyStats stats{};        // what the layers held and what was skipped or changed
};

// A tree held for a session: open, and locked shared so that `gc` leaves it alone, until the
// last copy is dropped.
struct HeldTree {
    HostDir dir{};
    Digest digest{};
};

class ImageStore {
public:
    // `dir` is the store's directory; with `create`, it (and its parents) are made when missing.
    // Its mode is set to 0700. kNotFound when missing and not `create`.
    static Result<ImageStore> open(const std::string& dir, bool create);

    // $STOCKADE_IMAGE_STORE, else `state_dir`/images.
    static std::string default_dir(std::string_view state_dir);

    [[nodiscard]] const HostDir& dir() const noexcept { return dir_; }

    // Every named image, sorted by name (an image with two names is listed twice).
    [[nodiscard]] Result<std::vector<StoredImage>> list() const;
    // "NAME", "NAME@sha256:…" (the name must point at that digest) or "sha256:…" (any image
    // the store has a tree of). kNotFound names what the store has.
    [[nodiscard]] Result<StoredImage> find(std::string_view ref) const;
    // Opens the tree of `digest` for a session (see HeldTree).
    [[nodiscard]] Result<HeldTree> hold_tree(const Digest& digest) const;
    // Removes a name. The tree and blobs stay until `gc`.
    Status remove(std::string_view name);

    struct GcResult {
        uint64_t trees_removed = 0;
        uint64_t trees_in_use = 0;  // unnamed, but a session holds them: kept
        uint64_t blobs_removed = 0;
        uint64_t bytes_freed = 0;
        uint64_t temporaries_removed = 0;  // what killed imports left under tmp/
    };
    // Removes trees no name points at and no session holds, blobs no kept image uses, and what
    // dead imports left.
    Result<GcResult> gc();

    // --- For importers (import.cc, the registry client) ---------------------------------------

    // A fresh directory under tmp/, locked for as long as the Staging lives, and removed with
    // it unless its contents were moved out.
    class Staging {
    public:
        [[nodiscard]] int fd() const noexcept { return fd_.get(); }
        [[nodiscard]] const std::string& name() const noexcept { return name_; }
        ~Staging();
        Staging(Staging&&) noexcept = default;
        Staging& operator=(Staging&&) noexcept = delete;
        Staging(const Staging&) = delete;
        Staging& operator=(const Staging&) = delete;

    private:
        friend class ImageStore;
        Staging(int tmp_fd, UniqueFd fd, std::string name)
            : tmp_fd_(tmp_fd), fd_(std::move(fd)), name_(std::move(name)) {}
        int tmp_fd_;
        UniqueFd fd_;
        std::string name_;
    };
    Result<Staging> make_staging() const;

    [[nodiscard]] bool has_blob(const Digest& digest) const;
    // A blob for reading, or kNotFound.
    [[nodiscard]] Result<UniqueFd> open_blob(const Digest& digest) const;
    // Moves file `name` of directory `dir_fd` (already verified to hold `digest`) into blobs/;
    // a blob already there is kept and the file removed.
    Status adopt_blob(int dir_fd, const std::string& name, const Digest& digest) const;
    // Writes `bytes` (whose digest is `digest`) as a blob, unless it is there.
    Status put_blob(const Digest& digest, std::string_view bytes) const;

    // Held while an image of `digest` is made: a second importer waits, then finds it there.
    [[nodiscard]] Result<UniqueFd> lock_digest(const Digest& digest) const;
    [[nodiscard]] bool has_tree(const Digest& digest) const;
    // Publishes directory `tree` of `dir_fd` as the tree of `image.digest` with its metadata,
    // and points `image.name` (if not empty) at it. The caller holds lock_digest().
    Status publish(int dir_fd, const std::string& tree, const StoredImage& image);
    // Points `name` at `digest`, whose tree and metadata must be in the store.
    Status tag(std::string_view name, const Digest& digest);
    [[nodiscard]] Result<StoredImage> metadata(const Digest& digest) const;

private:
    explicit ImageStore(HostDir dir, UniqueFd blobs, UniqueFd trees, UniqueFd meta, UniqueFd locks,
                        UniqueFd tmp)
        : dir_(std::move(dir)),
          blobs_(std::make_shared<UniqueFd>(std::move(blobs))),
          trees_(std::make_shared<UniqueFd>(std::move(trees))),
          meta_(std::make_shared<UniqueFd>(std::move(meta))),
          locks_(std::make_shared<UniqueFd>(std::move(locks))),
          tmp_(std::make_shared<UniqueFd>(std::move(tmp))) {}

    struct Names;
    Result<Names> read_names() const;
    Status write_names(const Names& names) const;
    Result<UniqueFd> lock_store() const;

    HostDir dir_;
    std::shared_ptr<UniqueFd> blobs_;  // blobs/sha256
    std::shared_ptr<UniqueFd> trees_;
    std::shared_ptr<UniqueFd> meta_;
    std::shared_ptr<UniqueFd> locks_;
    std::shared_ptr<UniqueFd> tmp_;
};

// A name for an image: what a reference allows before '@' ("debian:12", "registry:5000/a/b:v1",
// "my-image"), at most 255 bytes. kInvalidArgument says what is allowed.
Status check_image_name(std::string_view name);

// What --image, a tenant's "image" and Stockade-Image take: "host", NAME, NAME@sha256:… or
// sha256:…. kInvalidArgument says what is allowed.
Status check_image_ref(std::string_view ref);

// Removes directory `name` of `parent` and everything beneath it, by descriptor, without
// following a symlink and without a bound on depth; directories the caller owns are made
// writable first (an image's read-only ones).
Status remove_tree_at(int parent, const std::string& name);

// Counts the regular files' bytes and the entries beneath `dir` (symlinks are not followed).
struct TreeCount {
    uint64_t bytes = 0;
    uint64_t entries = 0;
};
Result<TreeCount> count_tree(int dir);

// PRETTY_NAME of /etc/os-release (or /usr/lib/os-release) in the tree `root`, its symlinks
// resolved inside the tree; empty when there is none.
std::string read_os_release(int root);

}  // namespace stockade::images
