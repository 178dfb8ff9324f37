#include "images/libarchive.h"

#include <dlfcn.h>

#include <string>
#include <vector>

#include <fmt/format.h>

namespace stockade::images {
namespace {

constexpr std::string_view kRemedy =
    "stockade image import, pull and build need libarchive 3.6 or later (Debian package "
    "libarchive13)";

// dlerror()'s message, or `fallback` when there is none.
std::string dl_message(std::string_view fallback) {
    // NOLINTNEXTLINE(concurrency-mt-unsafe): glibc keeps dlerror()'s state per thread.
    const char* text = ::dlerror();
    return text != nullptr ? std::string(text) : std::string(fallback);
}

// Sets `fn` to `symbol` in `handle`, or adds the symbol to `missing`.
template <class Fn>
void bind(void* handle, const char* symbol, Fn*& fn, std::vector<std::string>& missing) {
    void* address = ::dlsym(handle, symbol);
    if (address == nullptr) {
        missing.emplace_back(symbol);
        return;
    }
    // POSIX guarantees dlsym's void* converts back to the function it names.
    fn = reinterpret_cast<Fn*>(address);  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
}

}  // namespace

Result<LibArchive> load_libarchive(const char* soname) {
    // RTLD_LOCAL: its symbols (and its dependencies') stay out of the global scope.
    void* handle = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        return Error{Errc::kUnavailable,
                     fmt::format("{}: {}", kRemedy, dl_message("cannot be loaded"))};
    }
    LibArchive lib;
    std::vector<std::string> missing;
#define STOCKADE_LIBARCHIVE_BIND(name) bind(handle, "archive_" #name, lib.name, missing);
    STOCKADE_LIBARCHIVE_FUNCTIONS(STOCKADE_LIBARCHIVE_BIND)
#undef STOCKADE_LIBARCHIVE_BIND
    if (!missing.empty()) {
        // Unloaded again: nothing points into it.
        (void)::dlclose(handle);
        return Error{Errc::kUnavailable,
                     fmt::format("{}: {} lacks {}", kRemedy, soname, fmt::join(missing, ", "))};
    }
    return lib;
}

Result<const LibArchive*> libarchive() {
    static const Result<LibArchive> loaded = load_libarchive(kLibArchiveSoname);
    if (!loaded) {
        return loaded.error();
    }
    return &*loaded;
}

}  // namespace stockade::images
