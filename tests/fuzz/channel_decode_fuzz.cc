// Fuzzes the worker channel decoders (workspace/channel.h) with whole frames: no crash, no
// exception, and every frame that decodes as a request or as a reply re-encodes to a frame
// that decodes to the same message (encode(decode(encode(m))) == encode(m)).
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>

#include "workspace/channel.h"

namespace {

namespace channel = stockade::workspace::channel;

std::span<const std::byte> bytes_of(const std::string& s) {
    return std::as_bytes(std::span(s.data(), s.size()));
}

void check_request(channel::Frame frame) {  // a copy: decoding moves the payload out
    auto request = channel::decode_request(frame);
    if (!request) {
        return;
    }
    auto encoded = channel::encode_request(*request);
    if (!encoded) {
        std::abort();  // a decoded request always passes validate_request and is UTF-8
    }
    auto again = channel::decode_frame(bytes_of(*encoded));
    if (!again) {
        std::abort();
    }
    auto request2 = channel::decode_request(*again);
    if (!request2) {
        std::abort();
    }
    auto encoded2 = channel::encode_request(*request2);
    if (!encoded2 || *encoded2 != *encoded) {
        std::abort();
    }
}

void check_reply(channel::Frame frame, channel::Op op) {
    auto reply = channel::decode_reply(frame, op);
    if (!reply) {
        return;
    }
    auto encoded = channel::encode_reply(*reply);
    if (!encoded) {
        std::abort();
    }
    auto again = channel::decode_frame(bytes_of(*encoded));
    if (!again) {
        std::abort();
    }
    auto reply2 = channel::decode_reply(*again, op);
    if (!reply2 || reply2->id != reply->id) {
        std::abort();
    }
    auto encoded2 = channel::encode_reply(*reply2);
    if (!encoded2 || *encoded2 != *encoded) {
        std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto frame = channel::decode_frame(std::as_bytes(std::span(data, size)));
    if (size >= channel::kPrefixBytes) {
        // The streaming path must agree with decode_frame on the length prefix.
        (void)channel::decode_length_prefix(
            std::as_bytes(std::span(data, size)).first<channel::kPrefixBytes>());
    }
    if (!frame) {
        return 0;
    }
    (void)channel::recover_id(*frame);
    check_request(*frame);
    for (channel::Op op : {channel::Op::kHello, channel::Op::kStat, channel::Op::kRead,
                           channel::Op::kWrite, channel::Op::kMkdirs, channel::Op::kList,
                           channel::Op::kRg, channel::Op::kSpawn, channel::Op::kSignal,
                           channel::Op::kCommands, channel::Op::kSnapshot, channel::Op::kRestore}) {
        // A spawn reply needs its descriptors: without them it must be refused, never trusted.
        check_reply(*frame, op);
    }
    return 0;
}
