// `stockade image import|list|inspect|rm|gc`: the image store (images/store.h) from the shell.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stockade::runner {

struct ImageOptions {
    std::string store{};  // --image-store; default $STOCKADE_IMAGE_STORE, else STATE_DIR/images
    std::string input{};  // import: FILE, DIR or DIR:REF
    std::string name{};   // import --name; inspect and rm: NAME, NAME@sha256:… or sha256:…
    std::string max_size = "8G";  // import: uncompressed bytes, all layers together
    uint64_t max_entries = 1'000'000;
    bool json = false;
    // pull
    std::string authfile{};  // --authfile; else $REGISTRY_AUTH_FILE, containers', docker's
    std::string ca_file{};   // --ca-file PEM, trusted besides the system's CAs
    std::vector<std::string> insecure_registries{};  // --insecure-registry HOST:PORT (loopback)
};

// The store an image verb, or --image, uses: `flag` if given, else the default.
std::string image_store_dir(const std::string& flag);

// Exit 0; 65 when the image is refused (a hostile entry, a digest mismatch, a missing blob, a
// limit), 66 when the input is not there, 1 on other errors.
int image_import_command(const ImageOptions& options);
// `image pull REF`: input is the reference; name defaults to it as given. Exit codes as
// import's; a registry that cannot be reached or refuses the credentials is 1.
int image_pull_command(const ImageOptions& options);
int image_list_command(const ImageOptions& options);
int image_inspect_command(const ImageOptions& options);
int image_rm_command(const ImageOptions& options);
int image_gc_command(const ImageOptions& options);

}  // namespace stockade::runner
