// The proxy end to end over 127.0.0.1: a listening socket made here as the sandbox's child
// makes it, small upstream servers on threads of the test (echo, HTTP, server-first, discard),
// and clients that speak to the proxy through plain sockets. Every name reaches an upstream
// through a ResolvePin or is an IP literal or "localhost": nothing here asks DNS for a real
// name, and nothing leaves the loopback interface. Every blocking read and write has a timeout,
// so a bug fails a test rather than hanging it.
#include "network/proxy.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <boost/asio/ip/address.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "tests/testing/hex_vector.h"

namespace stockade::network {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using Clock = std::chrono::steady_clock;

constexpr auto kIoTimeout = std::chrono::seconds(3);
// "Basic " + base64("stockade:c7"): the credentials a command with tag c7 sends.
constexpr std::string_view kAuthC7 = "Proxy-Authorization: Basic c3RvY2thZGU6Yzc=\r\n";

boost::asio::ip::address loopback() {
    return boost::asio::ip::make_address("127.0.0.1");
}

void set_timeouts(int fd) {
    timeval tv{};
    tv.tv_sec = std::chrono::duration_cast<std::chrono::seconds>(kIoTimeout).count();
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

uint16_t port_of(int fd) {
    sockaddr_in addr{};
    socklen_t len = sizeof addr;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        return 0;
    }
    return ntohs(addr.sin_port);
}

// A TCP socket bound to 127.0.0.1 on a port of the kernel's choosing; listening unless
// `listen` is false (then it holds a port on which connections are refused).
UniqueFd bound_socket(bool nonblocking, bool listen = true) {
    UniqueFd fd(
        ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), 0));
    EXPECT_TRUE(fd.valid()) << "socket: " << errno;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << errno;
    if (listen) {
        EXPECT_EQ(::listen(fd.get(), 64), 0) << errno;
    }
    return fd;
}

// A client connected to 127.0.0.1:port, or an invalid fd (errno set) when the connect failed.
UniqueFd connect_to(uint16_t port) {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    set_timeouts(fd.get());
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        return UniqueFd();
    }
    return fd;
}

bool send_all(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
}

// Reads until `done(bytes)` holds, the peer closes, an error or the receive timeout.
std::string read_while(int fd, const std::function<bool(const std::string&)>& done) {
    std::string out;
    char buffer[16384];
    while (!done(out)) {
        const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        out.append(buffer, static_cast<size_t>(n));
    }
    return out;
}

std::string read_until(int fd, std::string_view marker) {
    return read_while(fd, [marker](const std::string& s) { return s.find(marker) != s.npos; });
}

std::string read_exactly(int fd, size_t size) {
    return read_while(fd, [size](const std::string& s) { return s.size() >= size; });
}

std::string read_to_end(int fd) {
    return read_while(fd, [](const std::string&) { return false; });
}

// What a recv() on `fd` says now (or within the receive timeout): 0 when the peer closed,
// -1 on an error such as a reset or the timeout (errno tells), or the bytes it read.
ssize_t probe(int fd, std::string* data = nullptr) {
    char buffer[4096];
    ssize_t n = 0;
    do {
        n = ::recv(fd, buffer, sizeof buffer, 0);
    } while (n < 0 && errno == EINTR);
    if (n > 0 && data != nullptr) {
        data->assign(buffer, static_cast<size_t>(n));
    }
    return n;
}

// One of this process's TCP sockets on 127.0.0.1 whose peer is at `peer_port`, and whose own
// port is `local_port` unless that is 0; -1 when there is none. The proxy runs on a thread of
// the test, so the sockets it made are among them.
int socket_to(uint16_t peer_port, uint16_t local_port = 0) {
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
        const int fd = std::stoi(entry.path().filename().string());
        struct stat st {};
        sockaddr_in peer{};
        socklen_t len = sizeof peer;
        if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode) ||
            ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0 ||
            peer.sin_family != AF_INET || ntohs(peer.sin_port) != peer_port) {
            continue;
        }
        if (local_port == 0 || port_of(fd) == local_port) {
            return fd;
        }
    }
    return -1;
}

// The socket's congestion control algorithm ("reno", "cubic", "bbr"), or "" on an error.
std::string congestion_control(int fd) {
    char name[16] = {};
    socklen_t len = sizeof name;
    if (::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) != 0) {
        return "";
    }
    return std::string(name, ::strnlen(name, len));
}

// The peer closed (EOF or reset), not a timeout and no data.
bool closed_by_peer(int fd) {
    errno = 0;
    const ssize_t n = probe(fd);
    return n == 0 || (n < 0 && errno == ECONNRESET);
}

std::string connect_head(std::string_view authority, bool auth = true) {
    std::string head = "CONNECT " + std::string(authority) +
                       " HTTP/1.1\r\nHost: " + std::string(authority) + "\r\n";
    if (auth) {
        head += kAuthC7;
    }
    return head + "\r\n";
}

// tests/unit/network/testdata/<name>.hex: a ClientHello as a real client sent it.
std::string hello_bytes(const std::string& name) {
    return ::stockade::testing::hex_vector(std::filesystem::path(__FILE__).parent_path() /
                                           "testdata" / (name + ".hex"));
}

// A server on 127.0.0.1 run by a thread with a blocking accept loop; each connection gets a
// thread of its own running `handle`. It records what it received and how many connections
// it accepted and saw end.
class Upstream {
public:
    using Handler = std::function<void(Upstream& self, int fd)>;

    explicit Upstream(Handler handle) : listener_(bound_socket(false)), handle_(std::move(handle)) {
        port_ = port_of(listener_.get());
        acceptor_ = std::thread([this] { accept_loop(); });
    }
    ~Upstream() {
        stopping_ = true;
        ::shutdown(listener_.get(), SHUT_RDWR);  // wakes the blocking accept()
        acceptor_.join();
        std::vector<std::thread> threads;
        {
            std::lock_guard lock(mu_);
            for (const auto& fd : fds_) {
                ::shutdown(fd->get(), SHUT_RDWR);
            }
            threads.swap(threads_);
        }
        for (auto& t : threads) {
            t.join();
        }
    }
    Upstream(const Upstream&) = delete;
    Upstream& operator=(const Upstream&) = delete;

    [[nodiscard]] uint16_t port() const { return port_; }

    void add_received(std::string_view bytes) {
        std::lock_guard lock(mu_);
        received_ += bytes;
    }
    void add_request(std::string request) {
        std::lock_guard lock(mu_);
        requests_.push_back(std::move(request));
    }
    std::string received() {
        std::lock_guard lock(mu_);
        return received_;
    }
    std::vector<std::string> requests() {
        std::lock_guard lock(mu_);
        return requests_;
    }
    size_t accepted() {
        std::lock_guard lock(mu_);
        return accepted_;
    }
    // Waits until `n` connections have ended (their handler returned).
    bool wait_ended(size_t n) {
        std::unique_lock lock(mu_);
        return cv_.wait_for(lock, kIoTimeout, [&] { return ended_ >= n; });
    }

private:
    void accept_loop() {
        for (;;) {
            const int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
            if (fd < 0) {
                if (errno == EINTR && !stopping_) {
                    continue;
                }
                return;
            }
            set_timeouts(fd);
            auto owned = std::make_shared<UniqueFd>(fd);
            std::lock_guard lock(mu_);
            if (stopping_) {
                return;
            }
            ++accepted_;
            fds_.push_back(owned);
            threads_.emplace_back([this, owned] {
                handle_(*this, owned->get());
                // The fd stays open (closed with the Upstream) so that no number is reused
                // while the destructor may still shut it down; the peer sees the end now.
                ::shutdown(owned->get(), SHUT_RDWR);
                std::lock_guard inner(mu_);
                ++ended_;
                cv_.notify_all();
            });
        }
    }

    UniqueFd listener_;
    uint16_t port_ = 0;
    Handler handle_;
    std::atomic<bool> stopping_{false};
    std::thread acceptor_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<std::shared_ptr<UniqueFd>> fds_;
    std::vector<std::thread> threads_;
    std::string received_;
    std::vector<std::string> requests_;
    size_t accepted_ = 0;
    size_t ended_ = 0;
};

// Echoes every byte until the peer closes.
void echo(Upstream& self, int fd) {
    char buffer[16384];
    for (;;) {
        const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0) {
            return;
        }
        self.add_received(std::string_view(buffer, static_cast<size_t>(n)));
        if (!send_all(fd, std::string_view(buffer, static_cast<size_t>(n)))) {
            return;
        }
    }
}

// Reads one request (head, then a Content-Length body), records it and answers 200 "hello".
void http_server(Upstream& self, int fd) {
    std::string request = read_until(fd, "\r\n\r\n");
    const size_t head_end = request.find("\r\n\r\n");
    if (head_end == std::string::npos) {
        self.add_request(request);
        return;
    }
    size_t length = 0;
    std::string lower = request.substr(0, head_end);
    for (char& c : lower) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (const size_t at = lower.find("\r\ncontent-length:"); at != std::string::npos) {
        length = std::stoul(lower.substr(at + 17));
    }
    const size_t total = head_end + 4 + length;
    if (request.size() < total) {
        request += read_exactly(fd, total - request.size());
    }
    self.add_request(request);
    send_all(fd,
             "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n"
             "Connection: close\r\n\r\nhello");
}

// Speaks first, like SMTP: a greeting, then one answer per line the client sends.
void smtp_server(Upstream& self, int fd) {
    if (!send_all(fd, "220 smtp.test ESMTP ready\r\n")) {
        return;
    }
    for (;;) {
        const std::string line = read_until(fd, "\r\n");
        if (line.empty()) {
            return;
        }
        self.add_received(line);
        if (line.starts_with("QUIT")) {
            send_all(fd, "221 bye\r\n");
            return;
        }
        send_all(fd, "250 ok\r\n");
    }
}

// Reads everything until the peer closes its side, then answers how many bytes it read.
void discard(Upstream& self, int fd) {
    size_t total = 0;
    char buffer[65536];
    for (;;) {
        const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0) {
            break;
        }
        total += static_cast<size_t>(n);
    }
    self.add_received(std::to_string(total));
    send_all(fd, std::to_string(total) + "\n");
}

// The reports the proxy made, in order.
class Records {
public:
    void add(const ConnectionRecord& record) {
        std::lock_guard lock(mu_);
        records_.push_back(record);
        cv_.notify_all();
    }
    size_t size() {
        std::lock_guard lock(mu_);
        return records_.size();
    }
    // Waits for `n` records (kIoTimeout at most) and returns them all.
    std::vector<ConnectionRecord> wait_for(size_t n) {
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, kIoTimeout, [&] { return records_.size() >= n; });
        return records_;
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<ConnectionRecord> records_;
};

class ProxyTest : public ::testing::Test {
protected:
    // Starts the proxy with these options and hands it a listener of the test's making.
    void start(ProxyOptions options = {}, Proxy::Ask ask = {}) {
        auto started = Proxy::start(
            std::move(options),
            [this](const std::string& host, uint16_t port) { return decide(host, port); },
            [this](const ConnectionRecord& record) { records_.add(record); }, std::move(ask));
        ASSERT_TRUE(started.has_value());
        proxy_ = std::move(*started);
        port_ = serve_new_listener();
    }

    // A new non-blocking listener on 127.0.0.1, as the sandbox's child makes it, given to
    // serve(); its port.
    uint16_t serve_new_listener() {
        UniqueFd listener = bound_socket(true);
        const uint16_t port = port_of(listener.get());
        proxy_->serve(std::move(listener));
        return port;
    }

    Verdict decide(const std::string& host, uint16_t port) {
        std::lock_guard lock(decide_mu_);
        decided_.push_back(host + ":" + std::to_string(port));
        if (host.starts_with("asked.")) {
            return Verdict{.allow = false,
                           .rule = "",
                           .reason = "not in the allowlist",
                           .hint = "the user can add network.access(asked.test)",
                           .ask = true};
        }
        if (host.starts_with("refused.")) {
            return Verdict{.allow = false,
                           .rule = "network.deny(refused.*)",
                           .reason = "not in the allowlist",
                           .hint = "the user can add network.access(refused.test)"};
        }
        return Verdict{.allow = true, .rule = "network.access(*)"};
    }

    // The count drops just after a connection is reported (the report comes first, so that the
    // client never sees an end that is not counted yet): wait a little for it.
    bool no_connections_left() const {
        for (int i = 0; i < 200 && proxy_->open_connections() != 0; ++i) {
            std::this_thread::sleep_for(milliseconds(5));
        }
        return proxy_->open_connections() == 0;
    }

    // A client connected to the proxy; CONNECTs to `authority` and reads the 200 when asked.
    UniqueFd tunnel(std::string_view authority) {
        UniqueFd client = connect_to(port_);
        EXPECT_TRUE(client.valid());
        EXPECT_TRUE(send_all(client.get(), connect_head(authority)));
        // A byte at a time: what a server that speaks first sends may follow in the same read.
        std::string answer;
        char c = 0;
        while (answer.find("\r\n\r\n") == std::string::npos &&
               ::recv(client.get(), &c, 1, 0) == 1) {
            answer += c;
        }
        EXPECT_EQ(answer, "HTTP/1.1 200 Connection established\r\n\r\n");
        return client;
    }

    static ResolvePin pin(std::string name, uint16_t port, uint16_t target_port) {
        return ResolvePin{.name = std::move(name),
                          .port = port,
                          .address = loopback(),
                          .target_port = target_port};
    }

    Records records_;  // outlives the proxy, which reports to it until it is destroyed
    std::mutex decide_mu_;
    std::vector<std::string> decided_;
    std::unique_ptr<Proxy> proxy_;
    uint16_t port_ = 0;
};

TEST_F(ProxyTest, ConnectRelaysBothWaysAndReportsOnce) {
    Upstream upstream(echo);
    start({.pins = {pin("echo.test", 7, upstream.port())}});
    UniqueFd client = tunnel("echo.test:7");
    ASSERT_TRUE(client.valid());

    ASSERT_TRUE(send_all(client.get(), "ping"));
    EXPECT_EQ(read_exactly(client.get(), 4), "ping");
    ASSERT_TRUE(send_all(client.get(), "second"));
    EXPECT_EQ(read_exactly(client.get(), 6), "second");
    EXPECT_EQ(proxy_->open_connections(), 1U);

    // The client closes its side: the upstream sees the end, closes too, and so does the proxy.
    ::shutdown(client.get(), SHUT_WR);
    EXPECT_EQ(read_to_end(client.get()), "");
    const auto records = records_.wait_for(1);
    ASSERT_EQ(records.size(), 1U);
    const ConnectionRecord& r = records[0];
    EXPECT_EQ(r.outcome, Outcome::kRelayed) << r.reason;
    EXPECT_EQ(r.host, "echo.test");
    EXPECT_EQ(r.port, 7);
    EXPECT_EQ(r.method, "CONNECT");
    EXPECT_EQ(r.address, "127.0.0.1:" + std::to_string(upstream.port()));
    EXPECT_EQ(r.tag, "c7");
    EXPECT_EQ(r.rule, "network.access(*)");
    EXPECT_EQ(r.bytes_sent, 10U);
    EXPECT_EQ(r.bytes_received, 10U);
    EXPECT_EQ(upstream.received(), "pingsecond");
    EXPECT_THAT(decided_, ::testing::ElementsAre("echo.test:7"));

    // Once only, and nothing stays open.
    std::this_thread::sleep_for(milliseconds(50));
    EXPECT_EQ(records_.size(), 1U);
    EXPECT_TRUE(no_connections_left()) << proxy_->open_connections();
}

// The sandbox's side of a connection is loopback: the proxy's socket there does not pace
// (Reno), whatever the host's default. The upstream's side keeps the host's default.
TEST_F(ProxyTest, TheSandboxSideOfATunnelDoesNotPace) {
    Upstream upstream(echo);
    start({.pins = {pin("echo.test", 7, upstream.port())}});
    UniqueFd client = tunnel("echo.test:7");
    ASSERT_TRUE(client.valid());
    ASSERT_TRUE(send_all(client.get(), "ping"));
    EXPECT_EQ(read_exactly(client.get(), 4), "ping");  // relaying: both sockets are open

    const int sandbox_side = socket_to(port_of(client.get()), port_);
    ASSERT_GE(sandbox_side, 0);
    EXPECT_EQ(congestion_control(sandbox_side), "reno");
    const int upstream_side = socket_to(upstream.port());
    ASSERT_GE(upstream_side, 0);
    const UniqueFd fresh(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    EXPECT_EQ(congestion_control(upstream_side), congestion_control(fresh.get()));
}

// After a bulk stream the relay waits for a batch before it wakes: a tail shorter than that,
// with no end after it, must arrive all the same. Each round sends 1 MiB, then ten bytes only
// once the client has read it all and asks, and waits for the client again.
TEST_F(ProxyTest, TheShortTailOfABulkStreamArrivesWithoutItsEnd) {
    constexpr int kRounds = 8;
    const std::string bulk(size_t{1} << 20, 'b');
    Upstream upstream([&bulk](Upstream&, int fd) {
        for (int round = 0; round < kRounds; ++round) {
            if (!send_all(fd, bulk) || read_until(fd, "more\n").empty() ||
                !send_all(fd, "0123456789") || read_until(fd, "next\n").empty()) {
                return;
            }
        }
    });
    start({.pins = {pin("bulk.test", 80, upstream.port())}});
    UniqueFd client = tunnel("bulk.test:80");
    ASSERT_TRUE(client.valid());
    for (int round = 0; round < kRounds; ++round) {
        ASSERT_EQ(read_exactly(client.get(), bulk.size()).size(), bulk.size()) << round;
        ASSERT_TRUE(send_all(client.get(), "more\n"));
        ASSERT_EQ(read_exactly(client.get(), 10), "0123456789") << round;
        ASSERT_TRUE(send_all(client.get(), "next\n"));
    }
    client.reset();
    const auto records = records_.wait_for(1);
    ASSERT_EQ(records.size(), 1U);
    EXPECT_EQ(records[0].bytes_received, kRounds * (bulk.size() + 10));
}

TEST_F(ProxyTest, BytesSentWithTheConnectHeadAreRelayed) {
    Upstream upstream(echo);
    start({.pins = {pin("echo.test", 7, upstream.port())}});
    UniqueFd client = connect_to(port_);
    ASSERT_TRUE(send_all(client.get(), connect_head("echo.test:7") + "early"));
    const std::string expected = "HTTP/1.1 200 Connection established\r\n\r\nearly";
    EXPECT_EQ(read_exactly(client.get(), expected.size()), expected);
    ::shutdown(client.get(), SHUT_WR);
    read_to_end(client.get());
    const auto records = records_.wait_for(1);
    ASSERT_EQ(records.size(), 1U);
    EXPECT_EQ(records[0].outcome, Outcome::kRelayed);
    EXPECT_EQ(records[0].bytes_sent, 5U);
    EXPECT_EQ(records[0].bytes_received, 5U);
}

TEST_F(ProxyTest, RefusedByTheRulesIsReportedBeforeTheClientReadsTheAnswer) {
    Upstream upstream(echo);
    start({.pins = {pin("refused.test", 443, upstream.port())}});
    UniqueFd client = connect_to(port_);
    ASSERT_TRUE(send_all(client.get(), connect_head("refused.test:443")));
    const std::string answer = read_to_end(client.get());
    // The report came first: it is there the moment the client has its answer.
    EXPECT_EQ(records_.size(), 1U);
    EXPECT_THAT(answer, StartsWith("HTTP/1.1 403"));
    EXPECT_THAT(answer, HasSubstr("not in the allowlist"));
    EXPECT_THAT(answer, HasSubstr("the user can add network.access(refused.test)"));
    const auto records = records_.wait_for(1);
    ASSERT_EQ(records.size(), 1U);
    EXPECT_EQ(records[0].outcome, Outcome::kRefused);
    EXPECT_EQ(records[0].reason, "not in the allowlist");
    EXPECT_EQ(records[0].hint, "the user can add network.access(refused.test)");
    EXPECT_EQ(records[0].rule, "network.deny(refused.*)");
    EXPECT_EQ(records[0].host, "refused.test");
    EXPECT_EQ(records[0].port, 443);
    EXPECT_EQ(records[0].tag, "c7");
    EXPECT_EQ(records[0].address, "");
    EXPECT_EQ(upstream.accepted(), 0U);  // pinned, but never connected
}

TEST_F(ProxyTest, ForwardedRequestRefusedByTheRules) {
    start();
    UniqueFd client = connect_to(port_);
    ASSERT_TRUE(
        send_all(client.get(), "GET http://refused.test/x HTTP/1.1\r\nHost: refused.test\r\n\r\n"));
    const std::string answer = read_to_end(client.get());
    EXPECT_EQ(records_.size(), 1U);
    EXPECT_THAT(answer, StartsWith("HTTP/1.1 403"));
    const auto records = records_.wait_for(1);
    ASSERT_EQ(records.size(), 1U);
    EXPECT_EQ(records[0].outcome, Outcome::kRefused);
    EXPECT_EQ(records[0].method, "GET");
    EXPECT_EQ(records[0].port, 80);
    EXPECT_EQ(records[0].tag, "");
}

TEST_F(ProxyTest, LoopbackAndMetadataAddressesAreRefusedUnlessPinned) {
    Upstream upstream(echo);
    start();
    const std::string echo_port = std::to_string(upstream.port());
    struct Case {
        std::string authority;
        std::string reason;
    };
    const std::vector<Case> cases = {
        // Allowed by the rules, but the name resolves (through /etc/hosts) to loopback.
        {"localhost:" + echo_port, "loopback"},
        {"127.0.0.1:" + echo_port, "loopback"},
        {"169.254.169.254:80", "metadata"},
    };
    for (size_t i = 0; i < cases.size(); ++i) {
        const Case& c = cases[i];
        UniqueFd client = connect_to(port_);
        ASSERT_TRUE(send_all(client.get(), connect_head(c.authority)));
        const std::string answer = read_to_end(client.get());
        EXPECT_EQ(records_.size(), i + 1) << c.authority;
        EXPECT_THAT(answer, StartsWith("HTTP/1.1 403")) << c.authority;
        EXPECT_THAT(answer, HasSubstr(c.reason)) << c.authority;
        const auto records = records_.wait_for(i + 1);
        ASSERT_EQ(records.size(), i + 1);
        const ConnectionRecord& r = records[i];
        EXPECT_EQ(r.outcome, Outcome::kRefused) << c.authority;
        EXPECT_THAT(r.reason, HasSubstr(c.reason)) << c.authority;
        EXPECT_THAT(r.reason, HasSubstr("never reached through the proxy")) << c.authority;
        EXPECT_EQ(r.address, "") << c.authority << ": refused before any connection";
        EXPECT_EQ(r.rule, "network.access(*)") << c.authority;
        // A name gets the exact pin that would allow it; a raw address none.
        if (c.authority.starts_with("localhost:")) {
            // 127.0.0.1 or ::1, whichever the resolver gave first.
            EXPECT_THAT(r.hint, StartsWith("if it is meant to be reached, the user can pin it: "
                                           "--resolve localhost="));
            EXPECT_THAT(r.hint, HasSubstr(" (settings: sandbox.network.resolve)"));
            EXPECT_THAT(answer, HasSubstr("--resolve localhost="));
        } else {
            EXPECT_EQ(r.hint, "") << c.authority;
        }
    }
    // The metadata address was refused before connecting: at once, not after a connect
    // attempt to an address that does not answer here.
    EXPECT_LT(records_.wait_for(3)[2].duration, milliseconds(500));
    EXPECT_EQ(upstream.accepted(), 0U);
}

TEST_F(ProxyTest, ForwardsPlainHttpInOriginForm) {
    Upstream upstream(http_server);
    start({.pins = {pin("name.test", 8080, upstream.port())}});
    UniqueFd client = connect_to(port_);
    ASSERT_TRUE(send_all(client.get(),
                         "GET http://name.test:8080/x?y HTTP/1.1\r\n"
                         "Host: name.test:8080\r\n" +
                             std::string(kAuthC7) +
                             "Proxy-Connection: keep-alive\r\n"
                             "Accept: */*\r\n\r\n"));
    const std::string answer = read_until(client.get(), "hello");
    EXPECT_THAT(answer, StartsWith("HTTP/1.1 200 OK\r\n"));
    EXPECT_THAT(answer, ::testing::EndsWith("\r\n\r\nhello"));
    client.reset();

    ASSERT_TRUE(upstream.wait_ended(1));
    const auto requests = upstream.requests();
    ASSERT_EQ(requests.size(), 1U);
    const std::string& head = requests[0];
    EXPECT_THAT(head, StartsWith("GET /x?y HTTP/1.1\r\n"));
    EXPECT_THAT(head, HasSubstr("\r\nHost: name.test:8080\r\n"));
    EXPECT_THAT(head, HasSubstr("\r\nAccept: */*\r\n"));
    EXPECT_THAT(head, HasSubstr("\r\nConnection: close\r\n"));
    EXPECT_THAT(head, ::testing::Not(HasSubstr("Proxy-Authorization")));
    EXPECT_THAT(head, ::testing::Not(HasSubstr("Proxy-Connection")));
    EXPECT_THAT(head, ::testing::EndsWith("\r\n\r\n"));

    const auto records = records_.wait_for(1);
    ASSERT_EQ(records.size(), 1U);
    EXPECT_EQ(records[0].outcome, Outcome::kRelayed) << records[0].reason;
    EXPECT_EQ(records[0].method, "GET");
    EXPECT_EQ(records[0].host, "name.test");
    EXPECT_EQ(records[0].port, 8080);
    EXPECT_EQ(records[0].tag, "c7");
    EXPECT_EQ(records[0].address, "127.0.0.1:" + std::to_string(upstream.port()));
    EXPECT_EQ(records[0].bytes_received, answer.size());
}

TEST_F(ProxyTest, ForwardsAPostWithItsBody) {
    Upstream upstream(http_server);
    start({.pins = {ResolvePin{.name = "name.test",
                               .port = std::nullopt,
                               .address = loopback(),
                               .target_port = upstream.port()}}});
    const std::string body(20000, 'b');  // more than one read's worth comes after the head
    UniqueFd client = connect_to(port_);
    ASSERT_TRUE(send_all(client.get(),
                         "POST http://name.test/upload HTTP/1.1\r\n"
                         "Host: name.test\r\nContent-Type: text/plain\r\n"
                         "Content-Length: 20000\r\n\r\n" +
                             body.substr(0, 100)));
    std::this_thread::sleep_for(milliseconds(20));
    ASSERT_TRUE(send_all(client.get(), std::string_view(body).substr(100)));
    const std::string answer = read_until(client.get(), "hello");
    EXPECT_THAT(answer, StartsWith("HTTP/1.1 200 OK\r\n"));
    client.reset();

    ASSERT_TRUE(upstream.wait_ended(1));
    const auto requests = upstream.requests();
    ASSERT_EQ(requests.size(), 1U);
    EXPECT_THAT(requests[0], StartsWith("POST /upload HTTP/1.1\r\n"));
    EXPECT_THAT(requests[0], HasSubstr("\r\nHost: name.test\r\n"));
    EXPECT_THAT(requests[0], HasSubstr("\r\nContent-Length: 20000\r\n"));
    const size_t head_end = requests[0].find("\r\n\r\n");
    ASSERT_NE(head_end, std::string::npos);
    EXPECT_EQ(requests[0].substr(head_end + 4), body);

    const auto records = records_.wait_for(1);
    ASSERT_EQ(records.size(), 1U);
    EXPECT_EQ(records[0].method, "POST");
    EXPECT_EQ(records[0].port, 80);
    EXPECT_EQ(records[0].bytes_sent, body.size());
}

TEST_F(ProxyTest, ClientHelloForAnotherNameIsRefusedBeforeReachingTheUpstream) {
    Upstream upstream(echo);
    start({.pins = {pin("allowed.test", 443, upstream.port())}});
    UniqueFd client = tunnel("allowed.test:443");
    ASSERT_TRUE(client.valid());
    ASSERT_TRUE(send_all(client.get(), hello_bytes("curl_sni")));  // registry.npmjs.org
    EXPECT_TRUE(closed_by_peer(client.get()));

    const auto records = records_.wait_for(1);
    ASSERT_EQ(records.size(), 1U);
    EXPECT_EQ(records[0].outcome, Outcome::kRefused);
    EXPECT_THAT(records[0].reason, HasSubstr("TLS server name"));
    EXPECT_THAT(records[0].reason, HasSubstr("registry.npmjs.org"));
    EXPECT_EQ(records[0].bytes_sent, 0U);
    ASSERT_TRUE(upstream.wait_ended(1));
    EXPECT_EQ(upstream.received(), "");
}

TEST_F(ProxyTest, ClientHelloSentWithTheConnectHeadIsCheckedToo) {
    Upstream upstream(echo);
    start({.pins = {pin("allowed.test", 443, upstream.port())}});
    UniqueFd client = connect_to(port_);
    ASSERT_TRUE(send_all(client.get(), connect_head("allowed.test:443") + hello_bytes("curl_sni")));
    EXPECT_EQ(read_until(client.get(), "\r\n\r\n"), "HTTP/1.1 200 Connection established\r\n\r\n");
    EXPECT_TRUE(closed_by_peer(client.get()));
    const auto records = records_.wait_for(1);
    ASSERT_EQ(records.size(), 1U);
    EXPECT_EQ(records[0].outcome, Outcome::kRefused);
    EXPECT_THAT(records[0].reason, HasSubstr("TLS server name"));
    ASSERT_TRUE(upstream.wait_ended(1));
    EXPECT_EQ(upstream.received(), "");
}

TEST_F(ProxyTest, ClientHelloForTheConnectNameIsRelayedUnchanged) {
    Upstream upstream(echo);
    start({.pins = {pin("registry.npmjs.org", 443, upstream.port()),
                    pin("pypi.org", 443, upstream.port())}});
    // The tls13 capture asks for "PyPI.org": names compare without case.
    for (const auto& [name, authority] :
         {std::pair{"curl_sni", "registry.npmjs.org:443"}, {"openssl_tls13_sni", "pypi.org:443"}}) {
        const std::string hello = hello_bytes(name);
        UniqueFd client = tunnel(authority);
        ASSERT_TRUE(client.valid());
        // In two pieces: the proxy reads until it has the whole ClientHello.
        ASSERT_TRUE(send_all(client.get(), std::string_view(hello).substr(0, 10)));
        std::this_thread::sleep_for(milliseconds(20));
        ASSERT_TRUE(send_all(client.get(), std::string_view(hello).substr(10)));
        EXPECT_EQ(read_exactly(client.get(), hello.size()), hello) << name;
        ::shutdown(client.get(), SHUT_WR);
        read_to_end(client.get());
    }
    const auto records = records_.wait_for(2);
    ASSERT_EQ(records.size(), 2U);
    for (const auto& r : records) {
        EXPECT_EQ(r.outcome, Outcome::kRelayed) << r.host << ": " << r.reason;
    }
    EXPECT_EQ(upstream.received(), hello_bytes("curl_sni") + hello_bytes("openssl_tls13_sni"));
}

TEST_F(ProxyTest, ServerSpeaksFirst) {
    Upstream upstream(smtp_server);
    start({.pins = {pin("smtp.test", 25, upstream.port())}});
    UniqueFd client = connect_to(port_);
    ASSERT_TRUE(send_all(client.get(), connect_head("smtp.test:25")));
    // Without sending a byte, the client gets the 200 and then the server's greeting.
    EXPECT_EQ(read_until(client.get(), "ready\r\n"),
              "HTTP/1.1 200 Connection established\r\n\r\n220 smtp.test ESMTP ready\r\n");
    ASSERT_TRUE(send_all(client.get(), "EHLO me\r\n"));
    EXPECT_EQ(read_until(client.get(), "\r\n"), "250 ok\r\n");
    ASSERT_TRUE(send_all(client.get(), "QUIT\r\n"));
    EXPECT_EQ(read_to_end(client.get()), "221 bye\r\n");
    client.reset();
    const auto records = records_.wait_for(1);
    ASSERT_EQ(records.size(), 1U);
    EXPECT_EQ(records[0].outcome, Outcome::kRelayed) << records[0].reason;
    EXPECT_EQ(records[0].bytes_sent, 15U);
    EXPECT_EQ(records[0].bytes_received, 27U + 8U + 9U);
}

TEST_F(ProxyTest, ServerThatTalksLongerThanTheHeadTimeoutWhileTheClientListens) {
    Upstream upstream([](Upstream&, int fd) {
        for (int i = 0; i < 5; ++i) {
            if (!send_all(fd, "line\n")) {
                return;
            }
            std::this_thread::sleep_for(milliseconds(100));
        }
    });
    start({.pins = {pin("stream.test", 9, upstream.port())}, .head_timeout = milliseconds(200)});
    UniqueFd client = tunnel("stream.test:9");
    EXPECT_EQ(read_to_end(client.get()), "line\nline\nline\nline\nline\n");
    client.reset();
    const auto records = records_.wait_for(1);
    ASSERT_EQ(records.size(), 1U);
    EXPECT_EQ(records[0].outcome, Outcome::kRelayed) << records[0].reason;
}

TEST_F(ProxyTest, ConnectionsOverTheLimitAreRefused) {
    Upstream upstream(echo);
    start({.pins = {pin("echo.test", 7, upstream.port())}, .max_connections = 2});
    UniqueFd first = tunnel("echo.test:7");
    UniqueFd second = tunnel("echo.test:7");
    EXPECT_EQ(proxy_->open_connections(), 2U);

    UniqueFd third = connect_to(port_);
    ASSERT_TRUE(third.valid());
    const std::string answer = read_to_end(third.get());  // refused before any head
    EXPECT_THAT(answer, StartsWith("HTTP/1.1 503"));
    EXPECT_EQ(records_.size(), 1U);
    auto records = records_.wait_for(1);
    ASSERT_EQ(records.size(), 1U);
    EXPECT_EQ(records[0].outcome, Outcome::kRefused);
    EXPECT_THAT(records[0].reason, HasSubstr("limit"));

    // The first two still work, and once one closes there is room again.
    ASSERT_TRUE(send_all(first.get(), "a"));
    EXPECT_EQ(read_exactly(first.get(), 1), "a");
    first.reset();
    records_.wait_for(2);
    UniqueFd fourth = tunnel("echo.test:7");
    ASSERT_TRUE(send_all(fourth.get(), "b"));
    EXPECT_EQ(read_exactly(fourth.get(), 1), "b");
}

TEST_F(ProxyTest, ClientThatSendsNothingIsClosedAfterTheHeadTimeout) {
    start({.head_timeout = milliseconds(200)});
    const auto began = Clock::now();
    UniqueFd client = connect_to(port_);
    ASSERT_TRUE(client.valid());
    EXPECT_TRUE(closed_by_peer(client.get()));
    const auto waited = Clock::now() - began;
    EXPECT_GE(waited, milliseconds(150));
    EXPECT_LT(waited, milliseconds(2000));
    const auto records = records_.wait_for(1);
    ASSERT_EQ(records.size(), 1U);
    EXPECT_EQ(records[0].outcome, Outcome::kRefused);
    EXPECT_THAT(records[0].reason, HasSubstr("did not arrive in time"));
    EXPECT_TRUE(no_connections_left()) << proxy_->open_connections();
}

TEST_F(ProxyTest, ATunnelMayStaySilentPastTheHeadTimeout) {
    // The head timeout is for the request; a tunnel has no deadline for its first bytes.
    Upstream upstream(echo);
    start({.pins = {pin("echo.test", 7, upstream.port())}, .head_timeout = milliseconds(200)});
    UniqueFd client = tunnel("echo.test:7");
    std::this_thread::sleep_for(milliseconds(500));
    ASSERT_TRUE(send_all(client.get(), "ping"));
    EXPECT_EQ(read_exactly(client.get(), 4), "ping");
    EXPECT_EQ(records_.size(), 0U);
}

TEST_F(ProxyTest, UpstreamRefusingConnectionsIs502) {
    UniqueFd closed_port = bound_socket(false, /*listen=*/false);  // connections refused
    start({.pins = {pin("down.test", 443, port_of(closed_port.get()))}});
    UniqueFd client = connect_to(port_);
    ASSERT_TRUE(send_all(client.get(), connect_head("down.test:443")));
    const std::string answer = read_to_end(client.get());
    EXPECT_EQ(records_.size(), 1U);
    EXPECT_THAT(answer, StartsWith("HTTP/1.1 502"));
    const auto records = records_.wait_for(1);
    ASSERT_EQ(records.size(), 1U);
    EXPECT_EQ(records[0].outcome, Outcome::kFailed);
    EXPECT_THAT(records[0].reason, HasSubstr("could not connect to down.test:443"));
    EXPECT_EQ(records[0].tag, "c7");
}

TEST_F(ProxyTest, BadRequestIs400) {
    start();
    UniqueFd client = connect_to(port_);
    ASSERT_TRUE(send_all(client.get(), "GET /relative HTTP/1.1\r\nHost: x.test\r\n\r\n"));
    const std::string answer = read_to_end(client.get());
    EXPECT_EQ(records_.size(), 1U);
    EXPECT_THAT(answer, StartsWith("HTTP/1.1 400"));
    const auto records = records_.wait_for(1);
    ASSERT_EQ(records.size(), 1U);
    EXPECT_EQ(records[0].outcome, Outcome::kRefused);
    EXPECT_TRUE(decided_.empty());
}

TEST_F(ProxyTest, DestroyingTheProxyReportsOpenTunnelsOnceAndClosesThem) {
    Upstream upstream(echo);
    start({.pins = {pin("echo.test", 7, upstream.port())}});
    UniqueFd first = tunnel("echo.test:7");
    UniqueFd second = tunnel("echo.test:7");
    ASSERT_TRUE(send_all(first.get(), "one"));
    EXPECT_EQ(read_exactly(first.get(), 3), "one");
    ASSERT_TRUE(send_all(second.get(), "two!"));
    EXPECT_EQ(read_exactly(second.get(), 4), "two!");
    UniqueFd idle = connect_to(port_);  // accepted, no head yet
    std::this_thread::sleep_for(milliseconds(50));
    EXPECT_EQ(proxy_->open_connections(), 3U);

    proxy_.reset();
    // Reported during the destructor, each once.
    EXPECT_EQ(records_.size(), 3U);
    EXPECT_TRUE(closed_by_peer(first.get()));
    EXPECT_TRUE(closed_by_peer(second.get()));
    EXPECT_TRUE(closed_by_peer(idle.get()));
    const auto records = records_.wait_for(3);
    ASSERT_EQ(records.size(), 3U);
    uint64_t sent = 0;
    size_t tunnels = 0;
    for (const auto& r : records) {
        if (r.method == "CONNECT") {
            ++tunnels;
            EXPECT_EQ(r.outcome, Outcome::kRelayed);
            sent += r.bytes_sent;
        }
    }
    EXPECT_EQ(tunnels, 2U);
    EXPECT_EQ(sent, 7U);
    EXPECT_TRUE(upstream.wait_ended(2));
}

TEST_F(ProxyTest, BandwidthIsBounded) {
    Upstream upstream(discard);
    start({.pins = {pin("sink.test", 9, upstream.port())}, .bytes_per_second = 1024 * 1024});
    UniqueFd client = tunnel("sink.test:9");
    const std::string data(512 * 1024, 'x');
    const auto began = Clock::now();
    ASSERT_TRUE(send_all(client.get(), data));
    ::shutdown(client.get(), SHUT_WR);
    EXPECT_EQ(read_to_end(client.get()), std::to_string(data.size()) + "\n");
    const auto took = Clock::now() - began;
    EXPECT_GE(took, milliseconds(400));
    const auto records = records_.wait_for(1);
    ASSERT_EQ(records.size(), 1U);
    EXPECT_EQ(records[0].bytes_sent, data.size());
}

TEST_F(ProxyTest, ServeReplacesTheListener) {
    Upstream upstream(echo);
    start({.pins = {pin("echo.test", 7, upstream.port())}});
    const uint16_t old_port = port_;
    {
        UniqueFd client = tunnel("echo.test:7");
        ASSERT_TRUE(send_all(client.get(), "1"));
        EXPECT_EQ(read_exactly(client.get(), 1), "1");
    }
    port_ = serve_new_listener();
    ASSERT_NE(port_, old_port);
    {
        // Through the new listener: serve() has taken effect once this works.
        UniqueFd client = tunnel("echo.test:7");
        ASSERT_TRUE(send_all(client.get(), "2"));
        EXPECT_EQ(read_exactly(client.get(), 1), "2");
    }
    // The old listener is closed: a connection is refused, or at least never answered.
    UniqueFd old_client = connect_to(old_port);
    if (old_client.valid()) {
        ASSERT_TRUE(send_all(old_client.get(), connect_head("echo.test:7")));
        std::string data;
        const ssize_t n = probe(old_client.get(), &data);
        EXPECT_LE(n, 0) << data;
    } else {
        EXPECT_EQ(errno, ECONNREFUSED);
    }
    records_.wait_for(2);
    EXPECT_EQ(upstream.accepted(), 2U);
}

TEST_F(ProxyTest, AnAskWaitsForTheAnswerFromAnotherThread) {
    Upstream upstream(echo);
    std::vector<std::jthread> answering;
    std::vector<std::string> asked;
    start({.pins = {pin("asked.test", 7, upstream.port())}},
          [&](const ConnectionRecord& pending, const Verdict&, Proxy::Answer answer) {
              asked.push_back(pending.host + " " + pending.tag);
              answering.emplace_back([answer = std::move(answer)] {
                  std::this_thread::sleep_for(milliseconds(50));
                  answer(Verdict{.allow = true, .rule = "the user's answer (once)"});
              });
          });
    UniqueFd client = tunnel("asked.test:7");
    ASSERT_TRUE(send_all(client.get(), "ping"));
    EXPECT_EQ(read_exactly(client.get(), 4), "ping");
    EXPECT_EQ(asked, std::vector<std::string>{"asked.test c7"});
    client.reset();
    const auto records = records_.wait_for(1);
    ASSERT_EQ(records.size(), 1U);
    EXPECT_EQ(records[0].outcome, Outcome::kRelayed);
    EXPECT_EQ(records[0].rule, "the user's answer (once)");
}

TEST_F(ProxyTest, AnUnansweredAskIsRefusedAtItsDeadline) {
    std::vector<Proxy::Answer> never;  // kept, never called
    start({.ask_timeout = milliseconds(200)},
          [&](const ConnectionRecord&, const Verdict&, Proxy::Answer answer) {
              never.push_back(std::move(answer));
          });
    UniqueFd client = connect_to(port_);
    ASSERT_TRUE(send_all(client.get(), connect_head("asked.test:443")));
    EXPECT_THAT(read_to_end(client.get()), StartsWith("HTTP/1.1 403"));
    const auto records = records_.wait_for(1);
    ASSERT_EQ(records.size(), 1U);
    EXPECT_EQ(records[0].outcome, Outcome::kRefused);
    EXPECT_EQ(records[0].reason, "not in the allowlist (the user did not answer in time)");
    EXPECT_EQ(records[0].hint, "the user can add network.access(asked.test)");
    proxy_.reset();  // before the answers it handed out
}

}  // namespace
}  // namespace stockade::network
