#include "common/allocator.h"

#include <malloc.h>

namespace stockade {

// Buffers of a megabyte or more (file contents, diffs) come straight from mmap and go back to
// the kernel when freed: a session idles most of the time, and glibc would otherwise keep the
// high-water mark of the largest file it ever edited. Up to a megabyte stays at the top of the
// heap when freed (glibc's default is 128 KiB), so that the next call's buffers of the same
// size (a page of read, a grep's output) reuse pages instead of faulting fresh ones in.
// The call pool's threads share two arenas rather than one each (glibc allows eight per
// core): every arena keeps its own free memory, which an idle session would hold for nothing.
void release_large_buffers_on_free() {
    (void)::mallopt(M_MMAP_THRESHOLD, 1 << 20);
    (void)::mallopt(M_TRIM_THRESHOLD, 1 << 20);
    (void)::mallopt(M_ARENA_MAX, 2);
}

}  // namespace stockade
