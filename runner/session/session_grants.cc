#include "runner/session/session_grants.h"

namespace stockade::runner {

bool SessionGrants::has(const std::string& key) const {
    std::lock_guard lock(mu_);
    return keys_.contains(key);
}

void SessionGrants::add(std::string key) {
    std::lock_guard lock(mu_);
    keys_.insert(std::move(key));
}

}  // namespace stockade::runner
