// `stockade image import`: an image from a file or directory into the store (store.h).
//
// Three kinds of input, told apart by what they hold, not by their names:
//   - an OCI image layout: a directory with `oci-layout`, `index.json` and `blobs/`, or a tar
//     of one (`skopeo copy … oci-archive:`, `umoci`'s layouts tarred up);
//   - a docker-archive: a tar with `manifest.json` (`docker save`, `skopeo copy …
//     docker-archive:`), whose config and layers are turned into an OCI manifest of ours;
//   - a root file system: any other tar (plain, .gz, .zst, .xz), which becomes a one-layer
//     image for this host's platform.
// Every blob is checked against its digest before it is used, and copied into the store's
// blobs/ as it is checked. An index selects the manifest for this host's platform. The tree is
// written by the layer applier (layer_apply.h), beneath a temporary directory of the store,
// and appears only when it is whole. Refusals — a hostile entry, a digest mismatch, a missing
// blob, a limit — are kInvalidArgument or kResourceExhausted and name the entry or the blob;
// `stockade image import` exits 65 on them.
//
// The tree's /etc gets empty placeholders for the files a sandbox generates (passwd, group,
// hosts, hostname, resolv.conf) where the image lacks them, so that the launcher can cover them
// in the image's read-only /etc.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"
#include "images/store.h"

namespace stockade::images {

struct ImportOptions {
    std::string name{};  // the name to give the image; empty: none (reached by digest)
    // Owners from the archive (only a privileged caller can give them); otherwise everything
    // belongs to the caller.
    bool preserve_owner = false;
    uint64_t max_bytes = uint64_t{8} << 30;  // uncompressed, over all layers
    uint64_t max_entries = 1'000'000;
    // import_layout: the layout's blobs were checked against their digests as they were written
    // (the registry client's, beneath the store's tmp/, which nobody else can write): they are
    // moved into blobs/ rather than read and copied a second time.
    bool layout_verified = false;
};

struct ImportResult {
    StoredImage image{};
    std::string format{};          // "oci-layout", "oci-archive", "docker-archive", "rootfs"
    bool already_present = false;  // the store had the tree: nothing was unpacked
};

// Imports the file or directory at `path` (the operator's own, given on the command line).
Result<ImportResult> import_image(ImageStore& store, const std::string& path,
                                  const ImportOptions& options);

// Imports the manifest `ref` ("" for the only one, a name from index.json's ref.name
// annotations, or a digest) of the OCI image layout open at `layout_fd` (what the registry
// client writes). `source` says where it came from ("docker://…").
Result<ImportResult> import_layout(ImageStore& store, int layout_fd, const std::string& ref,
                                   const std::string& source, const ImportOptions& options);

// Writes the tree of `image` (its layers, from the store's blobs) beneath the empty directory
// `dir_fd`, as an import would: what `stockade image build` runs its steps over.
Status unpack_image(const ImageStore& store, const StoredImage& image, int dir_fd,
                    const ImportOptions& options);

// A new image: `base` with the layer in `layer_fd` (an uncompressed tar: layer_diff.h) on top,
// its config's history saying `created_by`. Imported as import_layout does, so the store holds
// its tree; `source` says where it came from ("build:FILE").
Result<ImportResult> import_with_layer(ImageStore& store, const StoredImage& base, int layer_fd,
                                       const std::string& created_by, const std::string& source,
                                       const ImportOptions& options);

// The files a sandbox generates in /etc, over the image's own.
inline constexpr const char* kGeneratedEtcFiles[] = {"passwd", "group", "hosts", "hostname",
                                                     "resolv.conf"};

}  // namespace stockade::images
