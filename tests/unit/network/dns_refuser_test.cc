// DnsRefuser over real UDP sockets on 127.0.0.1 (nothing else): every query answered REFUSED,
// its question reported, and nothing handled once the registration is gone.
#include "network/dns_refuser.h"

#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

namespace stockade::network {
namespace {

std::string a_query(uint16_t id, const std::string& host) {
    std::string out;
    out += static_cast<char>(id >> 8);
    out += static_cast<char>(id & 0xff);
    out += std::string("\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00", 10);
    size_t start = 0;
    while (start <= host.size()) {
        const size_t dot = std::min(host.find('.', start), host.size());
        out += static_cast<char>(dot - start);
        out += host.substr(start, dot - start);
        start = dot + 1;
    }
    out += std::string("\0\0\1\0\1", 5);
    return out;
}

// A UDP socket on 127.0.0.1 and a port of the kernel's choice.
UniqueFd bound_socket(sockaddr_in& addr) {
    UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    addr = sockaddr_in{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (!fd || ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        ADD_FAILURE() << "bind 127.0.0.1:0: " << errno;
    }
    return fd;
}

// Sends `message` to `to` from a socket of its own and returns the reply ("" after 5 s).
std::string ask(const sockaddr_in& to, const std::string& message) {
    UniqueFd client(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (::connect(client.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0 ||
        ::send(client.get(), message.data(), message.size(), 0) !=
            static_cast<ssize_t>(message.size())) {
        return "";
    }
    pollfd p{client.get(), POLLIN, 0};
    if (::poll(&p, 1, 5000) != 1) {
        return "";
    }
    std::string reply(kMaxDnsMessageBytes, '\0');
    const ssize_t n = ::recv(client.get(), reply.data(), reply.size(), 0);
    return n < 0 ? "" : reply.substr(0, static_cast<size_t>(n));
}

struct Asked {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::string> names;

    void add(const DnsQuestion& q) {
        std::lock_guard lock(mu);
        names.push_back(q.name);
        cv.notify_all();
    }
    bool wait_for(size_t n) {
        std::unique_lock lock(mu);
        return cv.wait_for(lock, std::chrono::seconds(5), [&] { return names.size() >= n; });
    }
};

TEST(DnsRefuserTest, AnswersEveryQueryRefusedAndReportsItsName) {
    sockaddr_in addr{};
    Asked asked;
    auto served =
        DnsRefuser::serve(bound_socket(addr), [&asked](const DnsQuestion& q) { asked.add(q); });
    ASSERT_TRUE(served.has_value()) << served.error().message;
    EXPECT_TRUE(served->active());

    const std::string query = a_query(0x4242, "Registry.npmjs.org");
    const std::string reply = ask(addr, query);
    ASSERT_EQ(reply.size(), query.size());
    EXPECT_EQ(reply.substr(0, 2), "\x42\x42");
    EXPECT_EQ(reply[3] & 0x0f, 5) << "REFUSED";
    ASSERT_TRUE(asked.wait_for(1));
    EXPECT_EQ(asked.names.front(), "registry.npmjs.org");

    // Garbage gets FORMERR and is not reported; an answer sent to it gets nothing.
    EXPECT_EQ(ask(addr, std::string(12, '\0')).size(), 12U);
    std::string response = query;
    response[2] = static_cast<char>(0x81);
    UniqueFd sender(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    ASSERT_EQ(::sendto(sender.get(), response.data(), response.size(), 0,
                       reinterpret_cast<const sockaddr*>(&addr), sizeof addr),
              static_cast<ssize_t>(response.size()));
    EXPECT_EQ(ask(addr, a_query(1, "pypi.org"))[3] & 0x0f, 5) << "still answering";
    ASSERT_TRUE(asked.wait_for(2));
    std::lock_guard lock(asked.mu);
    EXPECT_EQ(asked.names, (std::vector<std::string>{"registry.npmjs.org", "pypi.org"}));
}

TEST(DnsRefuserTest, SocketsAreServedApartAndNothingRunsOnceARegistrationIsGone) {
    sockaddr_in first_addr{};
    sockaddr_in second_addr{};
    Asked first;
    Asked second;
    auto one = DnsRefuser::serve(bound_socket(first_addr),
                                 [&first](const DnsQuestion& q) { first.add(q); });
    auto two = DnsRefuser::serve(bound_socket(second_addr),
                                 [&second](const DnsQuestion& q) { second.add(q); });
    ASSERT_TRUE(one.has_value() && two.has_value());
    EXPECT_FALSE(ask(first_addr, a_query(1, "one.example")).empty());
    EXPECT_FALSE(ask(second_addr, a_query(2, "two.example")).empty());
    ASSERT_TRUE(first.wait_for(1) && second.wait_for(1));
    EXPECT_EQ(first.names, std::vector<std::string>{"one.example"});
    EXPECT_EQ(second.names, std::vector<std::string>{"two.example"});

    // Moved, it stays served; reset, its socket is closed: a query then has nobody to answer.
    DnsRefuser::Registration moved = std::move(*one);
    EXPECT_FALSE(one->active());
    EXPECT_FALSE(ask(first_addr, a_query(3, "again.example")).empty());
    moved = {};
    EXPECT_FALSE(moved.active());
    EXPECT_TRUE(ask(first_addr, a_query(4, "late.example")).empty());
    std::lock_guard lock(first.mu);
    EXPECT_EQ(first.names.size(), 2U);
    EXPECT_EQ(first.names.back(), "again.example");
}

TEST(DnsRefuserTest, NoSocketIsAnError) {
    auto served = DnsRefuser::serve(UniqueFd{}, nullptr);
    ASSERT_FALSE(served.has_value());
}

}  // namespace
}  // namespace stockade::network
