#include "sandbox/mount_plan.h"

#include <algorithm>

#include <gtest/gtest.h>

namespace stockade::sandbox {
namespace {

SandboxSpec sample_spec() {
    SandboxSpec spec;
    spec.binds = {
        Bind{.source = "/usr", .target = "/usr"},
        Bind{.source = "/tmp/ws", .target = "/tmp/ws", .writable = true},
        Bind{.source = "/etc/resolv.conf", .target = "/etc/resolv.conf", .optional = true},
        Bind{.source = "/srv/data", .target = "/srv/data"},
    };
    spec.symlinks = {Symlink{"/bin", "usr/bin"}};
    spec.files = {GeneratedFile{"/etc/passwd", "x", 0644}};
    spec.limits.tmp_bytes = 8 << 20;
    return spec;
}

size_t index_of(const MountPlan& plan, MountOpKind kind, const std::string& target) {
    auto it = std::find_if(plan.ops.begin(), plan.ops.end(), [&](const MountOp& op) {
        return op.kind == kind && op.target == target;
    });
    return static_cast<size_t>(it - plan.ops.begin());
}

TEST(MountPlanTest, ImageFirstThenFreshTreesThenWritableBindsOnTop) {
    MountPlan plan = make_mount_plan(sample_spec(), {true, true, false, true});
    size_t usr = index_of(plan, MountOpKind::kBind, "/usr");
    size_t tmp = index_of(plan, MountOpKind::kTmpfs, "/tmp");
    size_t proc = index_of(plan, MountOpKind::kProc, "/proc");
    size_t ws = index_of(plan, MountOpKind::kBind, "/tmp/ws");
    ASSERT_LT(ws, plan.ops.size());
    EXPECT_LT(usr, tmp);
    EXPECT_LT(tmp, proc);
    EXPECT_LT(proc, ws) << "the workspace below /tmp must be mounted over the fresh /tmp";
    EXPECT_TRUE(plan.ops[ws].writable);
    EXPECT_FALSE(plan.ops[usr].writable);
}

TEST(MountPlanTest, TmpSizeAndDevicesComeFromTheSpec) {
    MountPlan plan = make_mount_plan(sample_spec(), {});
    const MountOp& tmp = plan.ops[index_of(plan, MountOpKind::kTmpfs, "/tmp")];
    EXPECT_EQ(tmp.data, "mode=1777,size=8388608");
    for (const char* dev : {"/dev/null", "/dev/zero", "/dev/urandom", "/dev/tty"}) {
        size_t i = index_of(plan, MountOpKind::kBind, dev);
        ASSERT_LT(i, plan.ops.size()) << dev;
        EXPECT_TRUE(plan.ops[i].device);
        EXPECT_FALSE(plan.ops[i].is_dir);
    }
    EXPECT_LT(index_of(plan, MountOpKind::kDevpts, "/dev/pts"), plan.ops.size());
}

TEST(MountPlanTest, FileBindsAndSourcesLineUp) {
    MountPlan plan = make_mount_plan(sample_spec(), {true, true, false, true});
    for (const MountOp& op : plan.ops) {
        if (op.kind != MountOpKind::kBind) {
            continue;
        }
        ASSERT_GE(op.source_index, 0);
        EXPECT_EQ(plan.sources[static_cast<size_t>(op.source_index)], op.data);
    }
    const MountOp& resolv = plan.ops[index_of(plan, MountOpKind::kBind, "/etc/resolv.conf")];
    EXPECT_FALSE(resolv.is_dir);
    EXPECT_TRUE(resolv.optional);
}

TEST(MountPlanTest, ProcIsMaskedAndSysIsReadOnly) {
    MountPlan plan = make_mount_plan(sample_spec(), {});
    size_t proc = index_of(plan, MountOpKind::kProc, "/proc");
    size_t kcore = index_of(plan, MountOpKind::kMask, "/proc/kcore");
    size_t sysrq = index_of(plan, MountOpKind::kMask, "/proc/sysrq-trigger");
    size_t sys = index_of(plan, MountOpKind::kReadOnly, "/proc/sys");
    ASSERT_LT(sys, plan.ops.size());
    EXPECT_LT(proc, kcore);
    EXPECT_LT(proc, sysrq);
    EXPECT_LT(proc, sys);
}

}  // namespace
}  // namespace stockade::sandbox
