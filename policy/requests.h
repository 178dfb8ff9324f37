// Building blocks of a tool call's capability requests (DESIGN.md §3, step 2). Each tool says
// what its own arguments ask (tools/*: capabilities()); these turn a path into the requests
// for reading or writing it. Pure: paths are resolved lexically against the context, nothing
// is opened. The policy knows no tool's argument names.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "policy/capability.h"

namespace stockade::policy {

// Where a relative path of the call starts: the cwd, else the workspace root (normalised).
std::string request_base(const RequestContext& ctx);

// file.read of `path` (resolved against request_base); `directory`: a search root (grep, glob).
CapabilityRequest file_read_request(std::string_view tool, std::string_view path,
                                    const RequestContext& ctx, bool directory = false);
// file.write of `path`, and file.write.outsideProject when it lies beyond the workspace.
std::vector<CapabilityRequest> file_write_requests(std::string_view tool, std::string_view path,
                                                   const RequestContext& ctx);

}  // namespace stockade::policy
