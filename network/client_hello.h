// The server name a TLS client asks for (SNI, RFC 6066), read from the first bytes it sends
// through a CONNECT tunnel. The proxy compares it with the CONNECT's host: a client that
// CONNECTs to an allowed host and then asks that server's front for another name (domain
// fronting) is refused. Pure and bounded: the bytes are untrusted, nothing is read outside them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace stockade::network {

// The most the ClientHello's records may take, headers included. parse_client_hello never asks
// for more (kNeedMore) once it has this many bytes, so a proxy that buffers at most this much
// always reaches a verdict.
inline constexpr size_t kMaxClientHelloBytes = size_t{64} * 1024;

enum class HelloStatus {
    kNeedMore,      // a prefix of a plausible ClientHello: read more and parse again
    kNotTls,        // the stream does not start with a TLS handshake record
    kNoServerName,  // a whole ClientHello without a host_name in server_name
    kServerName,    // server_name holds the name asked for
    kMalformed,     // TLS, but not a well-formed ClientHello (or one over the size limit)
};

struct HelloParse {
    HelloStatus status = HelloStatus::kNeedMore;
    std::string server_name;  // lower case, without a trailing dot; set for kServerName only
};

// `bytes` are the stream from its start. The ClientHello may be fragmented over several
// handshake records (type 22), which are reassembled. Bytes after the ClientHello are ignored.
// A server_name extension that appears twice, or names two host_names, is kMalformed: the
// proxy and the server must not be able to read different names from one hello.
HelloParse parse_client_hello(std::string_view bytes);

}  // namespace stockade::network
