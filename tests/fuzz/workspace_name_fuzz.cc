// Fuzzes the Stockade-Workspace name a tenant's client sends (split_dir_name) and its resolution
// beneath a root (open_dir_beneath, without creating anything): no crash; an accepted name is
// made of safe components only and spells the input back; and whatever opens lies beneath the
// root, though the root holds a link to / and a link that climbs out.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/host_dir.h"

namespace {

// The root every input resolves beneath: a/b (directories), esc -> /, up -> .. . Made once,
// removed at exit.
struct Root {
    std::string base;
    stockade::HostDir dir;
    Root() {
        char tmpl[] = "/tmp/stockade-fuzz-workspace-XXXXXX";
        if (::mkdtemp(tmpl) == nullptr) {
            std::abort();
        }
        base = tmpl;
        if (::mkdir((base + "/a").c_str(), 0755) != 0 ||
            ::mkdir((base + "/a/b").c_str(), 0755) != 0 ||
            ::symlink("/", (base + "/esc").c_str()) != 0 ||
            ::symlink("..", (base + "/up").c_str()) != 0) {
            std::abort();
        }
        auto opened = stockade::HostDir::open(base);
        if (!opened) {
            std::abort();
        }
        dir = *opened;
    }
    ~Root() {
        (void)::unlink((base + "/esc").c_str());
        (void)::unlink((base + "/up").c_str());
        (void)::rmdir((base + "/a/b").c_str());
        (void)::rmdir((base + "/a").c_str());
        (void)::rmdir(base.c_str());
    }
    Root(const Root&) = delete;
    Root& operator=(const Root&) = delete;
};

const stockade::HostDir& root() {
    static const Root made;
    return made.dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto components = stockade::split_dir_name(text);
    if (!components) {
        return 0;
    }
    std::string joined;
    for (const std::string& part : *components) {
        const bool safe = !part.empty() && part != "." && part != ".." &&
                          std::all_of(part.begin(), part.end(), [](char c) {
                              return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                     (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
                          });
        if (!safe) {
            std::abort();
        }
        joined += (joined.empty() ? "" : "/") + part;
    }
    if (joined != text || components->size() > 32) {
        std::abort();
    }
    auto opened = stockade::open_dir_beneath(root().fd(), *components);
    if (opened) {
        auto path = stockade::path_of_fd(opened->get());
        if (!path || !stockade::path_within(*path, root().path())) {
            std::abort();
        }
    }
    return 0;
}
