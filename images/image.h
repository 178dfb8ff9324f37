// Images: what the sandbox's read-only root is made of. The default image, `host`, is derived
// from the host: /usr and the /lib* and /bin trees bound read-only, and a minimal /etc — a
// generated passwd, group, hosts and hostname, plus the few host files programs need to run
// (dynamic loader cache, certificates, resolver, alternatives). Never /etc/shadow, /root,
// /home, /var or /run. Built rootfs images are recipes here, never committed trees.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "sandbox/spec.h"

namespace stockade::images {

struct ImageInfo {
    std::string name;
    std::string description;
};

std::vector<ImageInfo> list_images();

// Adds the image's binds, symlinks and generated files to `spec` (identity and hostname must
// already be set: passwd and hosts are generated from them). Fails for an unknown image with
// the list of known ones.
Status apply_image(std::string_view name, sandbox::SandboxSpec& spec);

// The host paths an image makes readable, for Landlock at isolation level `landlock`, where
// there is no mount namespace to hide the rest.
std::vector<std::string> image_readable_paths(std::string_view name);

// Pure pieces, exposed for tests.
std::string make_passwd(const sandbox::Identity& id, std::string_view home);
std::string make_group(const sandbox::Identity& id);
std::string make_hosts(std::string_view hostname);

}  // namespace stockade::images
