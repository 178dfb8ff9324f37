#include "tools/process_manager.h"

namespace stockade::tools {

std::string_view process_state_name(ProcessState state) noexcept {
    switch (state) {
        case ProcessState::kRunning:
            return "running";
        case ProcessState::kExited:
            return "exited";
        case ProcessState::kStopped:
            return "stopped";
        case ProcessState::kFailed:
            return "failed";
    }
    return "unknown";
}

}  // namespace stockade::tools
