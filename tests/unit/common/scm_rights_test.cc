#include "common/scm_rights.h"

#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <vector>

#include <gtest/gtest.h>

#include "common/unique_fd.h"

namespace stockade {
namespace {

struct Pair {
    UniqueFd a;
    UniqueFd b;
};

Pair socket_pair() {
    std::array<int, 2> fds{-1, -1};
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds.data()), 0);
    return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

ssize_t send_with(int sock, std::span<const int> fds) {
    char byte = 'x';
    iovec iov{&byte, 1};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    FdControl<3> control;
    attach_fds(msg, control, fds);
    return ::sendmsg(sock, &msg, 0);
}

// Receives one message with room for N descriptors; returns them (the caller's) and the flags.
template <size_t N>
std::vector<UniqueFd> receive(int sock, int* flags) {
    char byte = 0;
    iovec iov{&byte, 1};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    FdControl<N> control;
    expect_fds(msg, control);
    EXPECT_EQ(::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC), 1);
    std::vector<UniqueFd> out;
    for_each_passed_fd(msg, [&](int fd) { out.emplace_back(fd); });
    *flags = msg.msg_flags;
    return out;
}

TEST(ScmRightsTest, DescriptorsArriveInOrderAndReferToTheSameFiles) {
    Pair sock = socket_pair();
    std::array<int, 2> p1{};
    std::array<int, 2> p2{};
    ASSERT_EQ(::pipe(p1.data()), 0);
    ASSERT_EQ(::pipe(p2.data()), 0);
    UniqueFd r1(p1[0]), w1(p1[1]), r2(p2[0]), w2(p2[1]);
    const std::array<int, 2> sent = {w1.get(), w2.get()};
    ASSERT_EQ(send_with(sock.a.get(), sent), 1);
    int flags = 0;
    std::vector<UniqueFd> got = receive<2>(sock.b.get(), &flags);
    EXPECT_EQ(flags & MSG_CTRUNC, 0);
    ASSERT_EQ(got.size(), 2U);
    ASSERT_EQ(::write(got[0].get(), "1", 1), 1);
    ASSERT_EQ(::write(got[1].get(), "2", 1), 1);
    char c = 0;
    ASSERT_EQ(::read(r1.get(), &c, 1), 1);
    EXPECT_EQ(c, '1');
    ASSERT_EQ(::read(r2.get(), &c, 1), 1);
    EXPECT_EQ(c, '2');
}

TEST(ScmRightsTest, MoreThanTheRoomForIsReportedAsTruncated) {
    Pair sock = socket_pair();
    std::array<int, 2> p{};
    ASSERT_EQ(::pipe(p.data()), 0);
    UniqueFd r(p[0]), w(p[1]);
    const std::array<int, 3> sent = {w.get(), w.get(), w.get()};
    ASSERT_EQ(send_with(sock.a.get(), sent), 1);
    int flags = 0;
    std::vector<UniqueFd> got = receive<1>(sock.b.get(), &flags);
    EXPECT_NE(flags & MSG_CTRUNC, 0);
    // The space rounds up to cmsghdr's alignment, so room for one holds two on x86_64; the
    // kernel closes what does not fit, and nothing beyond the room reaches the caller.
    EXPECT_GE(got.size(), 1U);
    EXPECT_LT(got.size(), 3U);
}

}  // namespace
}  // namespace stockade
