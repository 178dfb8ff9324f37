// How this process's heap gives memory back (serve, serve --http and the session worker).
#pragma once

namespace stockade {

// mallopt: large buffers are mmap'd, so they return to the kernel when freed, and the call
// threads share two arenas.
void release_large_buffers_on_free();

}  // namespace stockade
