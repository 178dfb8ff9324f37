// Decisions: allow < ask < deny, ordered by strictness so that a call's decision is the
// maximum over its requests; and the record of how each request was decided.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "policy/capability.h"

namespace stockade::policy {

enum class Decision : uint8_t { kAllow, kAsk, kDeny };

const char* decision_name(Decision decision) noexcept;  // "allow", "ask", "deny"

inline Decision strictest(Decision a, Decision b) {
    return a > b ? a : b;
}

// Sources of rules, highest first: a higher layer's rule is reported when several layers hold
// a matching rule of the same decision.
enum class Layer : uint8_t { kManaged, kCommandLine, kProject, kUser };
inline constexpr size_t kLayerCount = 4;

const char* layer_name(Layer layer) noexcept;  // "managed", "command-line", "project", "user"

// The rule that decided a request, copied out of the policy so a decision outlives it.
struct RuleRef {
    std::string text{};    // as written: "Bash(npm run test:*)"
    std::string origin{};  // "file:line"
    Layer layer = Layer::kProject;
    Decision decision = Decision::kDeny;  // the list it came from

    friend bool operator==(const RuleRef&, const RuleRef&) = default;
};

struct RequestOutcome {
    CapabilityRequest request{};
    Decision decision = Decision::kDeny;     // final, after the mode
    Decision before_mode = Decision::kDeny;  // from the rule or the preset's default
    std::optional<RuleRef> rule{};           // empty: no rule matched, the default applied
    std::string reason{};                    // one sentence: which rule, or which default
};

struct CallDecision {
    Decision decision = Decision::kAllow;  // the strictest over the requests
    // The first request with that decision (its rule is the one to report); empty when the
    // call made no request.
    std::optional<size_t> deciding{};
    std::vector<RequestOutcome> outcomes{};

    [[nodiscard]] const RequestOutcome* deciding_outcome() const {
        return deciding ? &outcomes[*deciding] : nullptr;
    }
};

}  // namespace stockade::policy
