// A stored image's tree as binds of a sandbox's root. Internal to images/ (image.h's
// add_image is the way in).
#pragma once

#include "images/store.h"
#include "sandbox/spec.h"

namespace stockade::images {

// See add_image in image.h.
// `writable`: bound writable, and Landlock lets the sandbox write there (a build root).
void add_stored_tree(const HeldTree& tree, bool writable, sandbox::SandboxSpec& spec);

}  // namespace stockade::images
