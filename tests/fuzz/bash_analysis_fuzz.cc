// Fuzzes the bash analysis. Input: a command line. Invariants: no crash and no hang; the
// analysis is deterministic; an opaque command yields exactly one opaque process.execute
// request; every call yields at least one process.execute request; file requests carry
// absolute normalised paths, and each file.write.outsideProject has its file.write and lies
// outside the workspace; destructive warnings have no duplicates.
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "policy/bash_analysis.h"

namespace {

using namespace stockade::policy;  // NOLINT(google-build-using-namespace): a fuzz target

void check(bool ok) {
    if (!ok) {
        std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view command(reinterpret_cast<const char*>(data), size);
    const RequestContext ctx{.workspace_root = "/ws", .cwd = "/ws/pkg", .home = "/home/u"};

    const BashAnalysis analysis = analyse_bash(command);
    const BashAnalysis again = analyse_bash(command);
    check(analysis.opaque == again.opaque && analysis.commands.size() == again.commands.size());
    for (const SimpleCommand& cmd : analysis.commands) {
        check(cmd.command_start <= cmd.words.size());
    }

    const std::vector<CapabilityRequest> requests = bash_requests(command, ctx);
    check(requests == bash_requests(command, ctx));
    size_t executes = 0;
    for (const CapabilityRequest& request : requests) {
        check(request.tool == "bash");
        switch (request.kind) {
            case CapabilityKind::kProcessExecute:
                ++executes;
                check(request.opaque == analysis.opaque);
                break;
            case CapabilityKind::kFileRead:
            case CapabilityKind::kFileWrite:
                check(normalise_path(request.path, "/") == request.path);
                break;
            case CapabilityKind::kFileWriteOutsideProject: {
                check(!inside_project(request.path, ctx));
                bool has_write = false;
                for (const CapabilityRequest& other : requests) {
                    has_write = has_write || (other.kind == CapabilityKind::kFileWrite &&
                                              other.path == request.path);
                }
                check(has_write);
                break;
            }
            case CapabilityKind::kNetworkAccess:
            case CapabilityKind::kGitModify:
                check(!analysis.opaque);
                break;
            case CapabilityKind::kTool:
                check(false);
                break;
        }
    }
    check(executes >= 1);
    check(!analysis.opaque || requests.size() == 1);

    const std::vector<std::string> warnings = destructive_warnings(analysis, command);
    check(std::set<std::string>(warnings.begin(), warnings.end()).size() == warnings.size());
    check(warnings == destructive_warnings(command));
    return 0;
}
