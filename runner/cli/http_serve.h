// `stockade serve --http ADDRESS`: MCP over Streamable HTTP for many sessions of many tenants
// (docs/http.md). The tenants come from --tenants FILE (runner/host/tenants.h), or are one default
// tenant whose token hashes are in --token-file (or who needs none: --no-auth, loopback only).
// Each session is a Session (runner/session/session.h) like serve's over stdio, opened by the
// host (runner/host/tenant_backend.h) with serve's flags and its tenant's root, policy, limits
// and host uid range.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "common/result.h"

namespace stockade::runner {

struct ServeOptions;
int http_serve_command(const ServeOptions& options);

// `stockade token hash`: the token on stdin (one line; the newline is not part of it) as the
// hex SHA-256 a --token-file or tenants file holds.
int token_hash_command();

}  // namespace stockade::runner
