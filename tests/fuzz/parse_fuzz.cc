// Fuzzes the operator-value parsers (sizes, counts, CPU fractions, durations): no crash, and
// every accepted value stays within its documented range.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "common/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    if (auto v = stockade::parse_size(text); v && *v >= (1ULL << 63)) {
        std::abort();
    }
    if (auto v = stockade::parse_uint(text, 2, 1000); v && (*v < 2 || *v > 1000)) {
        std::abort();
    }
    if (auto v = stockade::parse_cpu_fraction(text); v && !(*v > 0 && *v <= 1024)) {
        std::abort();
    }
    if (auto v = stockade::parse_duration(text); v && v->count() < 1) {
        std::abort();
    }
    return 0;
}
