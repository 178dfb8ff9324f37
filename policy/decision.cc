#include "policy/decision.h"

namespace stockade::policy {

const char* decision_name(Decision decision) noexcept {
    switch (decision) {
        case Decision::kAllow:
            return "allow";
        case Decision::kAsk:
            return "ask";
        case Decision::kDeny:
            return "deny";
    }
    return "unknown";
}

const char* layer_name(Layer layer) noexcept {
    switch (layer) {
        case Layer::kManaged:
            return "managed";
        case Layer::kCommandLine:
            return "command-line";
        case Layer::kProject:
            return "project";
        case Layer::kUser:
            return "user";
    }
    return "unknown";
}

}  // namespace stockade::policy
