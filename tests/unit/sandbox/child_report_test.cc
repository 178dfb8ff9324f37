#include "sandbox/child_report.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/scm_rights.h"
#include "tests/testing/matchers.h"

namespace stockade::sandbox {
namespace {

using ::stockade::testing::IsOk;
using ::testing::HasSubstr;

// The two ends of a sync socket: [0] the supervisor's, [1] the child's.
struct SyncPair {
    UniqueFd supervisor;
    UniqueFd child;
};

SyncPair make_pair() {
    std::array<int, 2> fds{};
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds.data()), 0);
    return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

void send_message(int fd, ChildMessage msg, int passed = -1) {
    iovec iov{&msg, sizeof msg};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    FdControl<1> control;
    if (passed >= 0) {
        attach_fds(mh, control, std::span<const int>(&passed, 1));
    }
    ASSERT_EQ(::sendmsg(fd, &mh, 0), static_cast<ssize_t>(sizeof msg));
}

ChildMessage error_message(ChildStep step, int err, int index) {
    ChildMessage msg;
    msg.kind = ChildMessage::kError;
    msg.error = ChildError{step, err, index};
    return msg;
}

TEST(ChildReportTest, EndOfFileWithoutAnErrorIsACommandThatRuns) {
    SyncPair pair = make_pair();
    pair.child.reset();
    auto report = receive_child_report(pair.supervisor.get());
    ASSERT_THAT(report, IsOk());
    EXPECT_FALSE(report->error);
    EXPECT_FALSE(report->terminal.valid());
}

TEST(ChildReportTest, AnErrorEndsTheReportWithItsStepErrnoAndIndex) {
    SyncPair pair = make_pair();
    send_message(pair.child.get(), error_message(ChildStep::kCaptureSource, ESTALE, 2));
    auto report = receive_child_report(pair.supervisor.get());
    ASSERT_THAT(report, IsOk());
    EXPECT_TRUE(report->error);
    EXPECT_EQ(report->child_error.step, ChildStep::kCaptureSource);
    EXPECT_EQ(report->child_error.err, ESTALE);
    EXPECT_EQ(report->child_error.index, 2);
}

// The race the tenant escape test met: the supervisor sent "in" while the child, still
// capturing its sources, failed and exited without reading it. The kernel reports the reset
// before the child's queued error; the error must still reach the caller.
TEST(ChildReportTest, AChildThatFailedWithTheSupervisorsByteUnreadStillReportsItsError) {
    SyncPair pair = make_pair();
    const char in = 'i';
    ASSERT_EQ(::send(pair.supervisor.get(), &in, 1, 0), 1);
    send_message(pair.child.get(), error_message(ChildStep::kCaptureSource, ESTALE, 0));
    pair.child.reset();
    auto report = receive_child_report(pair.supervisor.get());
    ASSERT_THAT(report, IsOk());
    EXPECT_TRUE(report->error);
    EXPECT_EQ(report->child_error.step, ChildStep::kCaptureSource);
    EXPECT_EQ(report->child_error.err, ESTALE);
}

TEST(ChildReportTest, AChildKilledBeforeReadingTheSupervisorsByteIsNotACommandThatRuns) {
    SyncPair pair = make_pair();
    const char in = 'i';
    ASSERT_EQ(::send(pair.supervisor.get(), &in, 1, 0), 1);
    pair.child.reset();
    auto report = receive_child_report(pair.supervisor.get());
    ASSERT_FALSE(report.has_value());
    EXPECT_THAT(report.error().message, HasSubstr("stopped during its setup"));
}

TEST(ChildReportTest, ThePassedTerminalIsKeptAndTheReportGoesOnToEndOfFile) {
    SyncPair pair = make_pair();
    UniqueFd terminal(::open("/dev/null", O_RDWR | O_CLOEXEC));
    ASSERT_TRUE(terminal.valid());
    ChildMessage msg;
    msg.kind = ChildMessage::kPtyMaster;
    send_message(pair.child.get(), msg, terminal.get());
    pair.child.reset();
    auto report = receive_child_report(pair.supervisor.get());
    ASSERT_THAT(report, IsOk());
    EXPECT_FALSE(report->error);
    ASSERT_TRUE(report->terminal.valid());
    EXPECT_NE(report->terminal.get(), terminal.get());
    EXPECT_EQ(::fcntl(report->terminal.get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
}

TEST(ChildReportTest, AMessageOfTheWrongSizeIsAnError) {
    SyncPair pair = make_pair();
    const char junk[3] = {1, 2, 3};
    ASSERT_EQ(::send(pair.child.get(), junk, sizeof junk, 0), 3);
    auto report = receive_child_report(pair.supervisor.get());
    ASSERT_FALSE(report.has_value());
    EXPECT_THAT(report.error().message, HasSubstr("wrong size"));
}

}  // namespace
}  // namespace stockade::sandbox
