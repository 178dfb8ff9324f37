// The capability requests of a tool call (DESIGN.md §3, step 2), from its validated
// arguments. Pure: paths are resolved lexically against the context, nothing is opened.
//   read, grep, glob     file.read of the resolved path (grep and glob: a directory; glob adds
//                        the literal directories its pattern starts with: "src/**/*.ts" →
//                        <path>/src)
//   write, edit          file.write, and file.write.outsideProject beyond the workspace
//   bash                 bash_requests(command) with the cwd moved to `workdir`
//   process start        the same, with tool "process"
//   process list/read/write/stop   one `tool` request: only whole-tool Process rules match it
#pragma once

#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "policy/capability.h"

namespace stockade::policy {

CapabilityRequest file_read_request(std::string_view tool, std::string_view path,
                                    const RequestContext& ctx, bool directory = false);
std::vector<CapabilityRequest> file_write_requests(std::string_view tool, std::string_view path,
                                                   const RequestContext& ctx);
// `action` is process's action; `command` matters for "start" only.
std::vector<CapabilityRequest> process_requests(std::string_view action, std::string_view command,
                                                const RequestContext& ctx);

// Dispatches on our tool name with the call's MCP arguments (file_path, path, pattern,
// command, workdir, action). Fails on an unknown tool or a missing required argument.
Result<std::vector<CapabilityRequest>> tool_requests(std::string_view tool,
                                                     const nlohmann::json& args,
                                                     const RequestContext& ctx);

}  // namespace stockade::policy
