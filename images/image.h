// Images: what the sandbox's read-only root is made of. The default image, `host`, is derived
// from the host: /usr and the /lib* and /bin trees bound read-only, and a minimal /etc — a
// generated passwd, group, hosts and hostname, plus the few host files programs need to run
// (dynamic loader cache, certificates, resolver, alternatives). Never /etc/shadow, /root,
// /home, /var or /run. Every other image is a tree of the image store (store.h): its top-level
// directories bound read-only, its symlinks copied, and the same generated files over its own
// /etc/passwd, group, hosts and hostname; the host's resolver configuration over its
// resolv.conf (which a sandbox with a network namespace of its own replaces with one naming
// Stockade's resolver: runner::make_sandbox_spec). A stored image needs a mount namespace: at level
// landlock it cannot be used.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "images/store.h"
#include "sandbox/spec.h"

namespace stockade::images {

struct ImageInfo {
    std::string name;
    std::string description;
};

std::vector<ImageInfo> list_images();

// An image as found on this host: what load_image() read of it, so that adding it to a spec
// (add_image) reads nothing more. A value: a session loads its image once.
struct Image {
    std::string name{};
    std::vector<sandbox::Bind> binds{};  // read-only, each optional (skipped when missing)
    std::vector<sandbox::Symlink> symlinks{};
    std::vector<std::string> readable_paths{};  // image_readable_paths(name)
    // A stored image: its tree, held open (and from `gc`) for as long as a copy of this Image
    // lives. Empty for the host image.
    std::optional<HeldTree> tree{};
    // `stockade image build`: the tree is a copy being built, not the store's. Its directories
    // are bound writable, and its own /etc/passwd and /etc/group stay (what the packages in it
    // put there), rather than the generated ones.
    bool build_root = false;

    [[nodiscard]] bool stored() const noexcept { return tree.has_value(); }
};

// Reads what the image needs of the host (for `host`: which root trees are directories and
// which are symlinks, and where they point). Fails for an unknown image with the list of
// known ones (kNotFound).
Result<Image> load_image(std::string_view name);

// An image of the store: `ref` is NAME, NAME@sha256:… or sha256:… (ImageStore::find).
Result<Image> load_stored_image(const ImageStore& store, std::string_view ref);

// The tree being built at `dir` (a copy of a stored image's: unpack_image), as build_root.
Image build_root_image(HostDir dir);

// Adds the image's binds, symlinks and generated files to `spec` (identity and hostname must
// already be set: passwd and hosts are generated from them), ahead of the binds already there.
// A stored image's top-level directories are bound whole, except one that holds the target of
// a bind already in the spec (a workspace under /home): that one is made of its entries, bound
// one by one, so that the bind finds its mount point. Reads the tree's top levels.
void add_image(const Image& image, sandbox::SandboxSpec& spec);

// load_image, then add_image.
Status apply_image(std::string_view name, sandbox::SandboxSpec& spec);

// The host paths an image makes readable, for Landlock at isolation level `landlock`, where
// there is no mount namespace to hide the rest.
std::vector<std::string> image_readable_paths(std::string_view name);

// Pure pieces, exposed for tests.
std::string make_passwd(const sandbox::Identity& id, std::string_view home);
std::string make_group(const sandbox::Identity& id);
std::string make_hosts(std::string_view hostname);

}  // namespace stockade::images
