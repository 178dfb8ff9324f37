// Fuzzes the image name parsers (images/reference.h, images/digest.h), whose input is typed by
// users and read from archives: no crash; an accepted reference or name has the shape promised
// and its canonical text reads back to the same value.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "images/reference.h"

namespace images = stockade::images;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);

    if (auto ref = images::parse_reference(text)) {
        if (ref->registry.empty() || ref->repository.empty() ||
            ref->registry.size() + 1 + ref->repository.size() > 255 ||
            (!ref->tag && !ref->digest) || (ref->tag && !images::is_valid_tag(*ref->tag))) {
            std::abort();
        }
        // A host with a '.' or ':' is in lower case; a one-label one may keep its upper case.
        if (ref->registry.find_first_of(".:") != std::string::npos) {
            for (char c : ref->registry) {
                if (c >= 'A' && c <= 'Z') {
                    std::abort();
                }
            }
        }
        auto again = images::parse_reference(ref->str());
        if (!again || !(*again == *ref)) {
            std::abort();
        }
    }

    if (auto name = images::parse_image_name(text)) {
        auto again = images::parse_image_name(name->str());
        if (name->name.empty() || name->name.find('/') != std::string::npos || !again ||
            !(*again == *name)) {
            std::abort();
        }
    }

    if (auto digest = images::Digest::parse(text)) {
        if (digest->str() != text || digest->hex().size() != 64) {
            std::abort();
        }
    }
    return 0;
}
