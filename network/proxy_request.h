// The head of a request a sandboxed client sends to the proxy: `CONNECT host:port` (a tunnel,
// for https) or an absolute-form request `GET http://host/path HTTP/1.1` (plain http, which the
// proxy forwards). Parsed with Boost.Beast's HTTP/1 parser; what this file adds is the proxy's
// reading of it: the target, the credentials, and the head rewritten for the origin server.
// Pure: the proxy feeds it the bytes it has read so far.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "network/address.h"

namespace stockade::network {

struct ProxyRequest {
    enum class Kind { kConnect, kForward } kind = Kind::kConnect;
    std::string method;  // "CONNECT", "GET", "POST", ...
    // kConnect: the authority (a port is required). kForward: the URL's host and port (80 when
    // the URL has none).
    Authority target;
    // kForward: the head to send to the origin server, ending in CRLFCRLF: the origin-form
    // target ("/path?q"), the same method and version; the headers in their order without
    // Proxy-Authorization, Proxy-Connection, Connection, Keep-Alive and those Connection names;
    // Host added when missing; "Connection: close" last. Empty for kConnect.
    std::string origin_head;
    // From "Proxy-Authorization: Basic base64(user:password)", split at the first ':'; empty
    // when the header is missing, of another scheme or not valid base64.
    std::string proxy_user;
    std::string proxy_password;
    // The bytes of the head, request line to CRLFCRLF: what follows in the same read is the
    // request's body (kForward) or the tunnel's first bytes (kConnect) and is the proxy's to pass
    // on.
    size_t head_size = 0;
    // kForward: how the body that follows the head is framed, as the parser read it (a request
    // with neither has no body). The proxy passes the body on as it came, framing included.
    bool chunked = false;
    std::optional<uint64_t> content_length;
};

struct HeadParse {
    enum class Status {
        kNeedMore,  // no end of head yet: read more and parse again from the start
        kDone,      // `request` is set
        kBad,       // answer `http_status` with `error` and close
    } status = Status::kNeedMore;
    ProxyRequest request;
    int http_status = 0;  // kBad: 400, or 431 for a head over max_head
    std::string error;    // kBad: for the client (and a model reading it): what is wrong
};

// `bytes` are the connection's bytes from its start; a head longer than `max_head` is kBad 431.
HeadParse parse_proxy_head(std::string_view bytes, size_t max_head = 64 * 1024);

}  // namespace stockade::network
