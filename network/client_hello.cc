#include "network/client_hello.h"

#include <cstdint>
#include <optional>

#include "network/address.h"

namespace stockade::network {
namespace {

constexpr uint8_t kHandshakeRecord = 22;
constexpr uint8_t kClientHelloType = 1;
constexpr size_t kRecordHeaderSize = 5;
constexpr size_t kHandshakeHeaderSize = 4;
constexpr size_t kMaxRecordPayload = size_t{16} * 1024;  // 2^14: a plaintext record (RFC 8446 §5.1)
constexpr uint16_t kServerNameExtension = 0;
constexpr uint8_t kHostNameType = 0;

HelloParse verdict(HelloStatus status) {
    return HelloParse{.status = status, .server_name = {}};
}

uint8_t byte_at(std::string_view s, size_t i) {
    return static_cast<uint8_t>(s[i]);
}

// A record header's version: SSL 3.0 to TLS 1.3 all write 3.x (TLS 1.3 writes 3.1 or 3.3).
bool plausible_version(uint8_t major, uint8_t minor) {
    return major == 3 && minor <= 4;
}

// Reads big-endian integers and length-prefixed vectors; any read past the end clears ok() and
// every later read fails too, so a parse can check once at the end of a step.
class Reader {
public:
    explicit Reader(std::string_view data) : data_(data) {}

    [[nodiscard]] bool ok() const { return ok_; }
    [[nodiscard]] bool empty() const { return data_.empty(); }

    uint32_t uint(size_t width) {
        if (!take(width)) {
            return 0;
        }
        uint32_t value = 0;
        for (size_t i = 0; i < width; ++i) {
            value = (value << 8) | byte_at(last_, i);
        }
        return value;
    }
    std::string_view bytes(size_t n) { return take(n) ? last_ : std::string_view(); }
    // A vector with a `width`-byte length prefix.
    std::string_view vector(size_t width) { return bytes(uint(width)); }

private:
    bool take(size_t n) {
        if (!ok_ || n > data_.size()) {
            ok_ = false;
            return false;
        }
        last_ = data_.substr(0, n);
        data_.remove_prefix(n);
        return true;
    }

    std::string_view data_;
    std::string_view last_;
    bool ok_ = true;
};

// The host_name of a server_name extension's data (RFC 6066 §3), "" when the list has none, or
// nullopt when the data is malformed or names two host_names.
std::optional<std::string_view> host_name_of(std::string_view extension) {
    Reader outer(extension);
    Reader list(outer.vector(2));
    if (!outer.ok() || !outer.empty() || list.empty()) {
        return std::nullopt;
    }
    std::optional<std::string_view> host;
    while (!list.empty()) {
        const uint32_t type = list.uint(1);
        const std::string_view name = list.vector(2);
        if (!list.ok()) {
            return std::nullopt;
        }
        if (type == kHostNameType) {
            if (host || name.empty()) {
                return std::nullopt;
            }
            host = name;
        }
    }
    return host.value_or(std::string_view());
}

// The body of a ClientHello handshake message (RFC 8446 §4.1.2; RFC 5246 §7.4.1.2).
HelloParse parse_body(std::string_view body) {
    Reader r(body);
    const uint32_t legacy_version = r.uint(2);
    r.bytes(32);                                      // random
    const std::string_view session_id = r.vector(1);  // legacy_session_id
    const std::string_view suites = r.vector(2);
    const std::string_view compression = r.vector(1);
    if (!r.ok() || (legacy_version >> 8) != 3 || session_id.size() > 32 || suites.size() < 2 ||
        suites.size() % 2 != 0 || compression.empty()) {
        return verdict(HelloStatus::kMalformed);
    }
    if (r.empty()) {  // no extensions at all (SSL 3.0 style)
        return verdict(HelloStatus::kNoServerName);
    }
    Reader extensions(r.vector(2));
    if (!r.ok() || !r.empty()) {
        return verdict(HelloStatus::kMalformed);
    }
    std::optional<std::string_view> host;
    while (!extensions.empty()) {
        const uint32_t type = extensions.uint(2);
        const std::string_view data = extensions.vector(2);
        if (!extensions.ok()) {
            return verdict(HelloStatus::kMalformed);
        }
        if (type != kServerNameExtension) {
            continue;
        }
        if (host) {  // a second server_name extension
            return verdict(HelloStatus::kMalformed);
        }
        host = host_name_of(data);
        if (!host) {
            return verdict(HelloStatus::kMalformed);
        }
    }
    if (!host || host->empty()) {
        return verdict(HelloStatus::kNoServerName);
    }
    std::optional<std::string> name = normalize_host_name(*host);
    if (!name) {
        return verdict(HelloStatus::kMalformed);
    }
    return HelloParse{.status = HelloStatus::kServerName, .server_name = std::move(*name)};
}

}  // namespace

HelloParse parse_client_hello(std::string_view bytes) {
    // What can be judged of the first record's header before all of it has come.
    if (!bytes.empty() && byte_at(bytes, 0) != kHandshakeRecord) {
        return verdict(HelloStatus::kNotTls);
    }
    if (bytes.size() >= 2 && byte_at(bytes, 1) != 3) {
        return verdict(HelloStatus::kNotTls);
    }
    if (bytes.size() >= 3 && !plausible_version(byte_at(bytes, 1), byte_at(bytes, 2))) {
        return verdict(HelloStatus::kNotTls);
    }

    // Reassemble the handshake message from the records, until it is whole.
    std::string message;
    size_t offset = 0;
    std::optional<size_t> message_size;
    while (!message_size || message.size() < *message_size) {
        if (offset + kRecordHeaderSize > kMaxClientHelloBytes) {
            return verdict(HelloStatus::kMalformed);
        }
        if (bytes.size() < offset + kRecordHeaderSize) {
            return verdict(HelloStatus::kNeedMore);
        }
        const std::string_view header = bytes.substr(offset, kRecordHeaderSize);
        const size_t length = size_t{byte_at(header, 3)} << 8 | byte_at(header, 4);
        // A record of another type (an alert, ChangeCipherSpec) inside the hello is not TLS.
        if (byte_at(header, 0) != kHandshakeRecord ||
            !plausible_version(byte_at(header, 1), byte_at(header, 2)) || length == 0 ||
            length > kMaxRecordPayload) {
            return verdict(HelloStatus::kMalformed);
        }
        const size_t end = offset + kRecordHeaderSize + length;
        if (end > kMaxClientHelloBytes) {
            return verdict(HelloStatus::kMalformed);
        }
        if (bytes.size() < end) {
            return verdict(HelloStatus::kNeedMore);
        }
        message.append(bytes.substr(offset + kRecordHeaderSize, length));
        offset = end;
        if (!message_size && message.size() >= kHandshakeHeaderSize) {
            if (byte_at(message, 0) != kClientHelloType) {
                return verdict(HelloStatus::kMalformed);
            }
            const size_t body = size_t{byte_at(message, 1)} << 16 |
                                size_t{byte_at(message, 2)} << 8 | byte_at(message, 3);
            message_size = kHandshakeHeaderSize + body;
            if (*message_size > kMaxClientHelloBytes) {
                return verdict(HelloStatus::kMalformed);
            }
        }
    }
    return parse_body(std::string_view{message}.substr(kHandshakeHeaderSize,
                                                       *message_size - kHandshakeHeaderSize));
}

}  // namespace stockade::network
