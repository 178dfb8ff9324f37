#include "runner/session/private_tmp.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "common/host_dir.h"
#include "common/syscall.h"
#include "runner/session/sandbox_config.h"

namespace stockade::runner {

PrivateTmp::~PrivateTmp() {
    if (dir_) {
        remove_tree_contents(dir_.get());  // by descriptor: what the sandbox left cannot redirect
        (void)::rmdir(path_.c_str());
    }
}

Status PrivateTmp::apply(sandbox::SandboxSpec& spec) {
    if (!dir_) {
        std::string tmpl = fmt::format("/tmp/stockade-{}-XXXXXX", label_);
        if (::mkdtemp(tmpl.data()) == nullptr) {
            return errno_error("create a private temporary directory", errno);
        }
        ASSIGN_OR_RETURN(dir_, open_path(tmpl, O_RDONLY | O_DIRECTORY | O_NOFOLLOW));
        path_ = std::move(tmpl);
    }
    if (privileged_caller() &&
        ::fchown(dir_.get(), spec.identity.host_uid, spec.identity.host_gid) != 0) {
        return errno_error(fmt::format("chown \"{}\"", path_), errno);
    }
    auto drop = [](std::vector<std::string>& paths, std::string_view gone) {
        paths.erase(std::remove(paths.begin(), paths.end(), gone), paths.end());
    };
    for (auto* list : {&spec.writable_paths, &spec.readable_paths}) {
        drop(*list, "/tmp");
        drop(*list, "/dev/shm");
        list->push_back(path_);
    }
    set_env(spec.env, "TMPDIR", path_);
    spec.cwd = spec.cwd == "/tmp" ? path_ : spec.cwd;
    return {};
}

}  // namespace stockade::runner
