// docs/sandbox-lifecycle.md lists the child's steps in a table, in the order of the ChildStep
// enum, with the name child_step_name() gives each in errors. They must not drift apart.
#include <algorithm>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sandbox/child.h"
#include "tests/testing/golden.h"

namespace stockade::sandbox {
namespace {

// Every enumerator from the first to kExec, the last, with its name in errors.
std::vector<std::pair<std::string, std::string>> enum_steps() {
    static const char* const kIdentifiers[] = {
        "kDeathSignal",     "kWaitForGo",    "kDumpable",      "kUserNamespaceLimits",
        "kDropGroups",      "kMountPrivate", "kCaptureSource", "kSetGid",
        "kSetUid",          "kMountRoot",    "kMountOp",       "kPivotRoot",
        "kHostname",        "kLoopback",     "kProxyListener", "kDnsSocket",
        "kCgroupNamespace", "kDropCaps",     "kNoNewPrivs",    "kLandlock",
        "kCloseFds",        "kRlimit",       "kPty",           "kSendPty",
        "kSeccomp",         "kFork",         "kChdir",         "kExec",
    };
    std::vector<std::pair<std::string, std::string>> out;
    for (uint32_t i = 0; i <= static_cast<uint32_t>(ChildStep::kExec); ++i) {
        out.emplace_back(i < std::size(kIdentifiers) ? kIdentifiers[i] : "?",
                         child_step_name(static_cast<ChildStep>(i)));
    }
    return out;
}

TEST(ChildStepsTest, TheLifecycleDocListsEveryStepInTheEnumsOrderWithItsName) {
    const std::string doc = stockade::testing::read_text(stockade::testing::source_root() / "docs" /
                                                         "sandbox-lifecycle.md");
    ASSERT_FALSE(doc.empty()) << "docs/sandbox-lifecycle.md not found";
    // "| `kDeathSignal` | set the parent-death signal | 4a |"
    const std::regex row(R"(\n\| `(k\w+)` \| ([^|]+?) \|)");
    std::vector<std::pair<std::string, std::string>> listed;
    for (auto it = std::sregex_iterator(doc.begin(), doc.end(), row); it != std::sregex_iterator();
         ++it) {
        listed.emplace_back((*it)[1].str(), (*it)[2].str());
    }
    EXPECT_EQ(listed, enum_steps());
}

// The identifiers above follow the enum: a step added to it without a name here would be
// listed as "?" and fail the comparison, and every step has a name of its own.
TEST(ChildStepsTest, EveryStepHasADistinctName) {
    std::vector<std::string> names;
    for (const auto& [identifier, name] : enum_steps()) {
        EXPECT_NE(identifier, "?");
        EXPECT_NE(name, "unknown step") << identifier;
        names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
}

}  // namespace
}  // namespace stockade::sandbox
