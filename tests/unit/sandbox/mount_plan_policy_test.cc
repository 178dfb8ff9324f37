// The masked and read-only paths of a SandboxSpec in the mount plan: after every bind, pins of
// their parents first, then read-only binds, then masks.
#include <algorithm>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sandbox/mount_plan.h"

namespace stockade::sandbox {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

SandboxSpec spec_with_workspace() {
    SandboxSpec spec;
    spec.binds = {
        Bind{.source = "/usr", .target = "/usr"},
        Bind{.source = "/home/u/ws", .target = "/home/u/ws", .writable = true},
        Bind{.source = "/home/u/.config/gh", .target = "/home/u/.config/gh"},
        Bind{.source = "/home/u/ws/vendor", .target = "/home/u/ws/vendor"},
    };
    return spec;
}

std::vector<const MountOp*> ops_of(const MountPlan& plan, MountOpKind kind) {
    std::vector<const MountOp*> out;
    for (const MountOp& op : plan.ops) {
        if (op.kind == kind) {
            out.push_back(&op);
        }
    }
    return out;
}

std::vector<std::string> targets_of(const MountPlan& plan, MountOpKind kind) {
    std::vector<std::string> out;
    for (const MountOp* op : ops_of(plan, kind)) {
        out.push_back(op->target);
    }
    return out;
}

size_t index_of(const MountPlan& plan, MountOpKind kind, const std::string& target) {
    auto it = std::find_if(plan.ops.begin(), plan.ops.end(), [&](const MountOp& op) {
        return op.kind == kind && op.target == target;
    });
    return static_cast<size_t>(it - plan.ops.begin());
}

TEST(MountPlanPolicyTest, NoPathsNoOps) {
    MountPlan plan = make_mount_plan(spec_with_workspace(), {});
    EXPECT_THAT(ops_of(plan, MountOpKind::kPin), IsEmpty());
    EXPECT_THAT(ops_of(plan, MountOpKind::kReadOnlyPath), IsEmpty());
    EXPECT_THAT(ops_of(plan, MountOpKind::kMaskPath), IsEmpty());
}

TEST(MountPlanPolicyTest, AppliedAfterEveryBindPinsThenReadOnlyThenMasks) {
    SandboxSpec spec = spec_with_workspace();
    spec.masked_paths = {"/home/u/ws/.env", "/home/u/ws/config/secrets"};
    spec.read_only_paths = {"/home/u/ws/.git/hooks"};
    MountPlan plan = make_mount_plan(spec, {});
    size_t last_bind = 0;
    for (size_t i = 0; i < plan.ops.size(); ++i) {
        if (plan.ops[i].kind == MountOpKind::kBind) {
            last_bind = i;
        }
    }
    size_t first_pin = index_of(plan, MountOpKind::kPin, "/home/u/ws/.git");
    size_t hooks = index_of(plan, MountOpKind::kReadOnlyPath, "/home/u/ws/.git/hooks");
    size_t env = index_of(plan, MountOpKind::kMaskPath, "/home/u/ws/.env");
    size_t secrets = index_of(plan, MountOpKind::kMaskPath, "/home/u/ws/config/secrets");
    ASSERT_LT(secrets, plan.ops.size());
    EXPECT_LT(last_bind, first_pin) << "the workspace bind must exist before anything in it";
    EXPECT_LT(first_pin, hooks);
    EXPECT_LT(hooks, env);
    EXPECT_LT(hooks, secrets);
    for (MountOpKind kind :
         {MountOpKind::kPin, MountOpKind::kReadOnlyPath, MountOpKind::kMaskPath}) {
        for (const MountOp* op : ops_of(plan, kind)) {
            EXPECT_TRUE(op->optional) << op->target << ": missing paths are skipped";
            EXPECT_FALSE(op->writable) << op->target;
        }
    }
}

TEST(MountPlanPolicyTest, ParentsOfReadOnlyPathsArePinnedBelowTheWritableBindOnly) {
    SandboxSpec spec = spec_with_workspace();
    spec.read_only_paths = {"/home/u/ws/.git/hooks", "/home/u/ws/.github/workflows/ci.yml",
                            "/home/u/ws/a/b/c/.env", "/home/u/ws/Makefile"};
    EXPECT_THAT(pinned_directories(spec),
                ElementsAre("/home/u/ws/.git", "/home/u/ws/.github", "/home/u/ws/.github/workflows",
                            "/home/u/ws/a", "/home/u/ws/a/b", "/home/u/ws/a/b/c"));
    MountPlan plan = make_mount_plan(spec, {});
    EXPECT_EQ(targets_of(plan, MountOpKind::kPin), pinned_directories(spec));
}

TEST(MountPlanPolicyTest, ParentsOfMaskedPathsArePinnedToo) {
    // Moving a masked file's parent away would take the mask along, and the next sandbox,
    // which masks the rule's paths, would show the file under its new name.
    SandboxSpec spec = spec_with_workspace();
    spec.masked_paths = {"/home/u/ws/a/b/.env"};
    EXPECT_THAT(pinned_directories(spec), ElementsAre("/home/u/ws/a", "/home/u/ws/a/b"));
    // Masked and read-only: masked, and pinned.
    spec.read_only_paths = {"/home/u/ws/a/b/.env"};
    EXPECT_THAT(pinned_directories(spec), ElementsAre("/home/u/ws/a", "/home/u/ws/a/b"));
    MountPlan plan = make_mount_plan(spec, {});
    EXPECT_THAT(targets_of(plan, MountOpKind::kMaskPath), ElementsAre("/home/u/ws/a/b/.env"));
    EXPECT_THAT(targets_of(plan, MountOpKind::kReadOnlyPath), IsEmpty());
}

TEST(MountPlanPolicyTest, NothingIsPinnedInReadOnlyBinds) {
    SandboxSpec spec = spec_with_workspace();
    // In a read-only bind nothing can be renamed; the deepest bind holding the path decides.
    spec.read_only_paths = {"/home/u/.config/gh/hosts.yml", "/home/u/ws/vendor/pkg/key.pem",
                            "/usr/share/secret/x"};
    EXPECT_THAT(pinned_directories(spec), IsEmpty());
}

TEST(MountPlanPolicyTest, BindTargetsAreNotPinnedAgain) {
    SandboxSpec spec = spec_with_workspace();
    spec.binds.push_back(
        Bind{.source = "/home/u/ws/data", .target = "/home/u/ws/data", .writable = true});
    spec.read_only_paths = {"/home/u/ws/data/x/.env", "/home/u/ws/data"};
    EXPECT_THAT(pinned_directories(spec), ElementsAre("/home/u/ws/data/x"));
}

TEST(MountPlanPolicyTest, PathsAreSortedParentsFirstAndDeduplicated) {
    SandboxSpec spec = spec_with_workspace();
    spec.read_only_paths = {"/home/u/ws/b/c", "/home/u/ws/b", "/home/u/ws/b", "/home/u/ws/a"};
    spec.masked_paths = {"/home/u/ws/z", "/home/u/ws/y/.env", "/home/u/ws/z"};
    MountPlan plan = make_mount_plan(spec, {});
    EXPECT_THAT(targets_of(plan, MountOpKind::kReadOnlyPath),
                ElementsAre("/home/u/ws/a", "/home/u/ws/b", "/home/u/ws/b/c"));
    EXPECT_THAT(targets_of(plan, MountOpKind::kMaskPath),
                ElementsAre("/home/u/ws/y/.env", "/home/u/ws/z"));
}

TEST(MountPlanPolicyTest, AMaskedPathIsNotAlsoMadeReadOnly) {
    SandboxSpec spec = spec_with_workspace();
    spec.read_only_paths = {"/home/u/ws/.env", "/home/u/ws/.git/config"};
    spec.masked_paths = {"/home/u/ws/.env"};
    MountPlan plan = make_mount_plan(spec, {});
    EXPECT_THAT(targets_of(plan, MountOpKind::kReadOnlyPath),
                ElementsAre("/home/u/ws/.git/config"));
    EXPECT_THAT(targets_of(plan, MountOpKind::kMaskPath), ElementsAre("/home/u/ws/.env"));
}

TEST(MountPlanPolicyTest, ProcMasksKeepTheirOwnKind) {
    SandboxSpec spec = spec_with_workspace();
    spec.masked_paths = {"/home/u/ws/.env"};
    MountPlan plan = make_mount_plan(spec, {});
    EXPECT_LT(index_of(plan, MountOpKind::kMask, "/proc/kcore"), plan.ops.size());
    EXPECT_EQ(index_of(plan, MountOpKind::kMaskPath, "/proc/kcore"), plan.ops.size());
    // Policy ops come last: after /proc's masks and the late binds.
    EXPECT_LT(index_of(plan, MountOpKind::kMask, "/proc/kcore"),
              index_of(plan, MountOpKind::kMaskPath, "/home/u/ws/.env"));
    EXPECT_EQ(plan.ops.back().kind, MountOpKind::kMaskPath);
}

}  // namespace
}  // namespace stockade::sandbox
