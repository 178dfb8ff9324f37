// FdLeakChecker: records the open descriptors at construction and fails the test if the set
// differs at destruction (after folly's checkFdLeak).
#pragma once

#include <set>
#include <string>

namespace stockade::testing {

std::set<int> open_fds();
std::string describe_fd(int fd);

class FdLeakChecker {
public:
    FdLeakChecker();
    ~FdLeakChecker();
    FdLeakChecker(const FdLeakChecker&) = delete;
    FdLeakChecker& operator=(const FdLeakChecker&) = delete;

private:
    std::set<int> before_;
};

}  // namespace stockade::testing
