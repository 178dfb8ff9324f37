// What the user allowed "for the session" in answer to an ask: the executor consults it before
// asking again, and the allowlist proxy before putting a connection to the user.
#pragma once

#include <mutex>
#include <set>
#include <string>

namespace stockade::runner {

// Thread-safe.
class SessionGrants {
public:
    [[nodiscard]] bool has(const std::string& key) const;
    void add(std::string key);

private:
    mutable std::mutex mu_;
    std::set<std::string> keys_;  // guarded by mu_ (grant_key of a request)
};

}  // namespace stockade::runner
