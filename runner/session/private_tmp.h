// At level landlock a sandbox has no mount namespace: it would share the host's /tmp and
// /dev/shm, where other users' and other jobs' files live. PrivateTmp gives it a private
// temporary directory instead (TMPDIR), removed with the object, and takes /tmp and /dev/shm
// off its Landlock paths. start_sandbox uses it, for `stockade run` and every session worker.
#pragma once

#include <string>

#include "common/result.h"
#include "common/unique_fd.h"
#include "sandbox/spec.h"

namespace stockade::runner {

class PrivateTmp {
public:
    // `label` names the directory: /tmp/stockade-<label>-XXXXXX.
    explicit PrivateTmp(std::string label) : label_(std::move(label)) {}
    PrivateTmp(const PrivateTmp&) = delete;
    PrivateTmp& operator=(const PrivateTmp&) = delete;
    ~PrivateTmp();

    // Creates the directory (once: a second spec gets the same one), owned by the sandbox's
    // host ids when root runs this, and puts it in the spec in place of /tmp and /dev/shm.
    Status apply(sandbox::SandboxSpec& spec);
    [[nodiscard]] const std::string& path() const noexcept { return path_; }

private:
    std::string label_;
    std::string path_;
    UniqueFd dir_;  // of path_: the sandbox writes in it, so it is changed only through this
};

}  // namespace stockade::runner
