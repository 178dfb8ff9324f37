#include "network/proxy.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <thread>
#include <utility>

#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/spdlog.h>

#include "common/log.h"
#include "network/client_hello.h"
#include "network/proxy_request.h"
#include "network/reachability.h"

namespace stockade::network {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;

const char* outcome_name(Outcome outcome) noexcept {
    switch (outcome) {
        case Outcome::kRelayed:
            return "relayed";
        case Outcome::kRefused:
            return "refused";
        case Outcome::kFailed:
            return "failed";
    }
    return "unknown";
}

namespace {

constexpr size_t kRelayChunk = 64 * 1024;  // a pipe's default capacity
constexpr int kBulkPipe = 1 << 20;         // the largest an unprivileged process may ask for
// A stream that brought this much between two waits is woken only once this much is queued
// again, or after kBatchLinger (Connection::batch).
constexpr int kBatch = 256 * 1024;
constexpr std::chrono::milliseconds kBatchLinger{1};
constexpr size_t kMaxHead = 64 * 1024;
constexpr size_t kHeadChunk = 8192;  // read at a time while a head or a ClientHello comes

std::string status_line(int status) {
    switch (status) {
        case 400:
            return "400 Bad Request";
        case 403:
            return "403 Forbidden";
        case 405:
            return "405 Method Not Allowed";
        case 431:
            return "431 Request Header Fields Too Large";
        case 502:
            return "502 Bad Gateway";
        case 503:
            return "503 Service Unavailable";
        case 504:
            return "504 Gateway Timeout";
        default:
            return fmt::format("{} Error", status);
    }
}

// A response the client's own error message shows: curl prints the status, pip and npm the
// reason phrase and often the body.
std::string error_response(int status, std::string_view text) {
    std::string body = fmt::format("stockade: {}\n", text);
    return fmt::format(
        "HTTP/1.1 {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n"
        "Connection: close\r\nX-Stockade-Refused: 1\r\n\r\n{}",
        status_line(status), body.size(), body);
}

bool equal_host(std::string_view a, std::string_view b) {
    while (!a.empty() && a.back() == '.') {
        a.remove_suffix(1);
    }
    while (!b.empty() && b.back() == '.') {
        b.remove_suffix(1);
    }
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
        auto lower = [](char c) {
            return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
        };
        return lower(x) == lower(y);
    });
}

// A bandwidth bound shared by every connection of a proxy: each chunk takes its share of
// time on one virtual clock, and waits while that clock runs ahead of the real one.
class Throttle {
public:
    explicit Throttle(uint64_t bytes_per_second) : rate_(bytes_per_second) {}
    Clock::duration take(size_t bytes) {
        if (rate_ == 0) {
            return Clock::duration::zero();
        }
        const Clock::time_point now = Clock::now();
        std::lock_guard lock(mu_);
        next_ = std::max(next_, now) +
                std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                    static_cast<double>(bytes) / static_cast<double>(rate_)));
        return next_ - now;
    }

private:
    uint64_t rate_;
    std::mutex mu_;
    Clock::time_point next_{};
};

// The sandbox's side of a connection is loopback in its own network namespace: nothing there
// to congest or to pace for. The host's default congestion control may pace: BBR arms a timer
// for every burst it sends (in a VM, programming a timer may trap to the hypervisor), and the
// relay, which sends every byte a second time, spent about a sixth of its samples there; its
// CPU per GiB fell from 0.29-0.38 s to 0.14-0.25 s without (bench/network.sh, README).
// Reno is always built in, open to unprivileged sockets, and does not pace. Best effort, like
// TCP_NODELAY: a kernel that refuses leaves the default. The upstream side, the real network,
// keeps the host's choice.
void stop_pacing(tcp::socket& socket) {
    static constexpr std::string_view kReno = "reno";
    (void)::setsockopt(socket.native_handle(), IPPROTO_TCP, TCP_CONGESTION, kReno.data(),
                       static_cast<socklen_t>(kReno.size()));
}

class Connection;

}  // namespace

struct Proxy::Impl {
    Impl(ProxyOptions opts, Decide d, Report r, Ask a)
        : options(std::move(opts)),
          decide(std::move(d)),
          report(std::move(r)),
          ask(std::move(a)),
          throttle(options.bytes_per_second),
          own(own_addresses()) {}

    void accept();
    void close_all();

    asio::io_context io{1};
    asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
    ProxyOptions options;
    Decide decide;
    Report report;
    Ask ask;
    Throttle throttle;
    std::vector<asio::ip::address> own;
    std::unique_ptr<tcp::acceptor> acceptor;     // proxy thread only
    std::set<std::shared_ptr<Connection>> live;  // proxy thread only
    std::atomic<size_t> open{0};
    std::thread thread;
};

namespace {

// One client connection, from its request head to the end of its relay. Lives while an
// operation of its holds a reference (and in Impl::live until it finishes).
class Connection : public std::enable_shared_from_this<Connection> {
public:
    Connection(Proxy::Impl& proxy, tcp::socket client)
        : proxy_(proxy),
          client_(std::move(client)),
          upstream_(proxy.io),
          resolver_(proxy.io),
          timer_(proxy.io),
          started_(Clock::now()) {}

    void start() {
        arm_timer(proxy_.options.head_timeout, "the request head did not arrive in time",
                  Outcome::kRefused);
        read_head();
    }

    // Over the proxy's bound on open connections: refused before its head is read.
    void refuse_over_limit(size_t limit) {
        record_.outcome = Outcome::kRefused;
        record_.reason = fmt::format(
            "the sandbox already has {} connections open through the proxy, its limit", limit);
        respond_and_finish(503, record_.reason);
    }

    // Ends the connection now and reports it (a stopping proxy, a timeout, an error).
    void finish() {
        if (finished_) {
            return;
        }
        finished_ = true;
        report();
        error_code ignored;
        timer_.cancel();
        resolver_.cancel();
        client_.close(ignored);
        upstream_.close(ignored);
        auto self = shared_from_this();
        proxy_.live.erase(self);
        proxy_.open.fetch_sub(1, std::memory_order_relaxed);
    }

private:
    // Reported once, before the client can see the end: a command that exits because it was
    // refused finds the refusal already counted against it.
    void report() {
        if (reported_) {
            return;
        }
        reported_ = true;
        record_.duration =
            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_);
        if (proxy_.report) {
            proxy_.report(record_);
        }
    }

    struct Direction {
        tcp::socket* from = nullptr;
        tcp::socket* to = nullptr;
        uint64_t* count = nullptr;
        UniqueFd pipe_read;  // the relay's pipe, made when the first bytes come
        UniqueFd pipe_write;
        size_t in_pipe = 0;                          // bytes read from `from`, not yet written
        size_t chunk = kRelayChunk;                  // the pipe's capacity
        size_t moved = 0;                            // read from `from` since it was last empty
        bool batching = false;                       // `from` has SO_RCVLOWAT kBatch
        std::unique_ptr<asio::steady_timer> linger;  // ends a batching wait after kBatchLinger
        std::unique_ptr<asio::steady_timer> wait;    // the bandwidth bound's pauses
        bool done = false;
    };

    // A deadline for the current step; when it passes the connection ends with `outcome`.
    void arm_timer(std::chrono::milliseconds after, std::string why, Outcome outcome) {
        timer_.expires_after(after);
        timer_.async_wait(
            [self = shared_from_this(), why = std::move(why), outcome](error_code ec) {
                if (ec || self->finished_) {
                    return;
                }
                self->record_.outcome = outcome;
                self->record_.reason = why;
                self->finish();
            });
    }

    void read_head() {
        read_more([this](bool ok) {
            if (!ok) {
                record_.outcome = Outcome::kRefused;
                record_.reason = "the client closed before its request was complete";
                finish();
                return;
            }
            on_head_bytes();
        });
    }

    // Appends what the client sends next to head_, then calls next(true); next(false) when it
    // closed or failed. Nothing runs once the connection has finished.
    template <class Next>
    void read_more(Next next) {
        const size_t have = head_.size();
        head_.resize(have + kHeadChunk);
        client_.async_read_some(asio::buffer(head_.data() + have, kHeadChunk),
                                [self = shared_from_this(), have, next = std::move(next)](
                                    error_code ec, size_t n) mutable {
                                    self->head_.resize(have + n);
                                    if (!self->finished_) {
                                        next(!ec);
                                    }
                                });
    }

    // Writes `bytes` to `socket`, then calls next(); a failed write ends the connection.
    template <class Next>
    void write_then(tcp::socket& socket, std::string bytes, Next next) {
        auto out = std::make_shared<std::string>(std::move(bytes));
        asio::async_write(socket, asio::buffer(*out),
                          [self = shared_from_this(), out, next = std::move(next)](error_code ec,
                                                                                   size_t) mutable {
                              if (self->finished_) {
                                  return;
                              }
                              if (ec) {
                                  self->finish();
                                  return;
                              }
                              next();
                          });
    }

    void on_head_bytes() {
        HeadParse parsed = parse_proxy_head(head_, kMaxHead);
        if (parsed.status == HeadParse::Status::kNeedMore) {
            read_head();
            return;
        }
        if (parsed.status == HeadParse::Status::kBad) {
            refuse(parsed.http_status == 0 ? 400 : parsed.http_status, parsed.error, "");
            return;
        }
        request_ = std::move(parsed.request);
        record_.host = request_.target.host;
        record_.port = request_.target.port;
        record_.method = request_.method;
        record_.tag = request_.proxy_user == "stockade" || request_.proxy_password.empty()
                          ? request_.proxy_password
                          : request_.proxy_user;
        decide();
    }

    void decide() {
        Verdict verdict;
        if (proxy_.decide) {
            verdict = proxy_.decide(request_.target.host, request_.target.port);
        }
        if (verdict.ask && proxy_.ask) {
            ask_user(std::move(verdict));
            return;
        }
        proceed(verdict);
    }

    // The connection waits, the ask's deadline its own, for the user's answer to come back on
    // the proxy's thread; unanswered, it is refused as `unanswered` says.
    void ask_user(Verdict unanswered) {
        asking_ = true;
        timer_.expires_after(proxy_.options.ask_timeout);
        timer_.async_wait([self = shared_from_this(), unanswered](error_code ec) mutable {
            if (ec || self->finished_ || !self->asking_) {
                return;
            }
            self->asking_ = false;
            unanswered.allow = false;
            unanswered.reason += " (the user did not answer in time)";
            self->proceed(unanswered);
        });
        Proxy::Answer answer = [self = shared_from_this()](Verdict verdict) {
            asio::post(self->proxy_.io, [self, verdict = std::move(verdict)] {
                if (self->finished_ || !self->asking_) {
                    return;
                }
                self->asking_ = false;
                self->timer_.cancel();
                self->proceed(verdict);
            });
        };
        proxy_.ask(record_, unanswered, std::move(answer));
    }

    void proceed(const Verdict& verdict) {
        record_.rule = verdict.rule;
        if (!verdict.allow) {
            record_.hint = verdict.hint;
            refuse(403,
                   fmt::format("refused {}:{}: {}", request_.target.host, request_.target.port,
                               verdict.reason.empty() ? "not in the allowlist" : verdict.reason),
                   verdict.hint, verdict.reason.empty() ? "not in the allowlist" : verdict.reason);
            return;
        }
        // A pin is the operator's word: it may name a private or loopback address.
        if (auto pinned =
                find_pin(proxy_.options.pins, request_.target.host, request_.target.port)) {
            connect({*pinned});
            return;
        }
        if (request_.target.ip_literal) {
            error_code ec;
            const auto address = asio::ip::make_address(request_.target.host, ec);
            if (ec) {
                refuse(400, fmt::format("\"{}\" is not an address", request_.target.host), "");
                return;
            }
            std::vector<tcp::endpoint> endpoints{tcp::endpoint(address, request_.target.port)};
            if (!filter(endpoints)) {
                return;
            }
            connect(std::move(endpoints));
            return;
        }
        arm_timer(proxy_.options.connect_timeout,
                  fmt::format("resolving {} took too long", request_.target.host),
                  Outcome::kFailed);
        resolver_.async_resolve(
            request_.target.host, std::to_string(request_.target.port),
            [self = shared_from_this()](error_code ec, tcp::resolver::results_type results) {
                if (self->finished_) {
                    return;
                }
                if (ec) {
                    self->fail(502, fmt::format("{} could not be resolved ({})",
                                                self->request_.target.host, ec.message()));
                    return;
                }
                std::vector<tcp::endpoint> endpoints;
                for (const auto& entry : results) {
                    endpoints.push_back(entry.endpoint());
                }
                if (self->filter(endpoints)) {
                    self->connect(std::move(endpoints));
                }
            });
    }

    // Drops the endpoints no rule may open (private, loopback, this host's: reachability.h);
    // false (and the connection refused) when none is left.
    bool filter(std::vector<tcp::endpoint>& endpoints) {
        std::vector<asio::ip::address> addresses;
        for (const tcp::endpoint& e : endpoints) {
            addresses.push_back(e.address());
        }
        const std::optional<Unreachable> first = drop_unreachable(addresses, proxy_.own);
        std::erase_if(endpoints, [&](const tcp::endpoint& e) {
            return std::find(addresses.begin(), addresses.end(), e.address()) == addresses.end();
        });
        if (!endpoints.empty() || !first) {
            return !endpoints.empty();
        }
        // Only a name the operator pins leads to such an address (a mirror, a registry on a
        // private network): the hint names the exact pin, for the user to decide on.
        const bool literal = request_.target.ip_literal;
        const std::string reason = unreachable_reason(request_.target.host, literal, *first);
        refuse(403,
               fmt::format("refused {}:{}: {}", request_.target.host, request_.target.port, reason),
               unreachable_hint(request_.target.host, literal, *first), reason);
        return false;
    }

    void connect(std::vector<tcp::endpoint> endpoints) {
        arm_timer(proxy_.options.connect_timeout,
                  fmt::format("connecting to {} took too long", request_.target.host),
                  Outcome::kFailed);
        asio::async_connect(
            upstream_, endpoints,
            [self = shared_from_this()](error_code ec, const tcp::endpoint& endpoint) {
                if (self->finished_) {
                    return;
                }
                if (ec) {
                    self->fail(502, fmt::format("could not connect to {}:{} ({})",
                                                self->request_.target.host,
                                                self->request_.target.port, ec.message()));
                    return;
                }
                self->timer_.cancel();
                self->record_.address = format_endpoint(endpoint);
                error_code ignored;
                self->upstream_.set_option(tcp::no_delay(true), ignored);
                self->connected();
            });
    }

    void connected() {
        std::string leftover = head_.substr(std::min(request_.head_size, head_.size()));
        head_.clear();
        if (request_.kind == ProxyRequest::Kind::kForward) {
            // The origin gets the head rewritten for it, and the body that came with it.
            record_.bytes_sent += leftover.size();
            write_then(upstream_, std::move(request_.origin_head) + leftover,
                       [this] { relay(true, true); });
            return;
        }
        write_then(client_, "HTTP/1.1 200 Connection established\r\n\r\n",
                   [this, leftover = std::move(leftover)]() mutable {
                       // The server may speak first (SSH, SMTP): its bytes flow at once; the
                       // client's wait until their ClientHello is checked. No deadline for
                       // those: a tunnel whose server does the talking may stay silent.
                       relay(false, true);
                       head_ = std::move(leftover);
                       check_hello();
                   });
    }

    // The first bytes of a tunnel: a TLS ClientHello must name the host the CONNECT asked for.
    void check_hello() {
        const HelloParse hello = parse_client_hello(head_);
        switch (hello.status) {
            case HelloStatus::kNeedMore:
                read_more([this](bool ok) {
                    if (ok) {
                        check_hello();
                    } else {
                        finish();
                    }
                });
                return;
            case HelloStatus::kMalformed:
                refuse_tunnel("its TLS ClientHello could not be read");
                return;
            case HelloStatus::kServerName:
                if (!request_.target.ip_literal &&
                    !equal_host(hello.server_name, request_.target.host)) {
                    refuse_tunnel(fmt::format("its TLS server name \"{}\" is not {}",
                                              hello.server_name, request_.target.host));
                    return;
                }
                break;
            case HelloStatus::kNotTls:
            case HelloStatus::kNoServerName:
                break;
        }
        record_.bytes_sent += head_.size();
        write_then(upstream_, std::exchange(head_, {}), [this] { relay(true, false); });
    }

    void refuse_tunnel(std::string reason) {
        record_.outcome = Outcome::kRefused;
        record_.reason = std::move(reason);
        record_.hint = "";
        finish();
    }

    // Starts relaying client to upstream (`up`) and upstream to client (`down`).
    void relay(bool up, bool down) {
        // splice() would block on a blocking socket whatever its flags say.
        error_code ignored;
        client_.native_non_blocking(true, ignored);
        upstream_.native_non_blocking(true, ignored);
        if (up) {
            up_.from = &client_;
            up_.to = &upstream_;
            up_.count = &record_.bytes_sent;
            pump(up_);
        }
        if (down) {
            down_.from = &upstream_;
            down_.to = &client_;
            down_.count = &record_.bytes_received;
            pump(down_);
        }
    }

    // Waits until `d.from` has bytes (or its end) to move.
    void pump(Direction& d) { transfer_when(*d.from, tcp::socket::wait_read, d); }

    // A bulk stream wakes the relay once per kBatch bytes rather than once per segment: once
    // `d.from` was drained after bringing at least that much, it reads as ready only from
    // kBatch bytes on (SO_RCVLOWAT; its end or an error still wakes at once). A slower
    // stream, or a burst's tail shorter than that, waits at most kBatchLinger: lowering the
    // mark makes the kernel signal what is queued. Each wake moves more and the relay sleeps
    // less: about a tenth less CPU per GiB on the whole path (bench/network.sh, README).
    void batch(Direction& d) {
        const bool bulk = d.moved >= static_cast<size_t>(kBatch);
        d.moved = 0;
        if (bulk != d.batching) {
            d.batching = bulk;
            set_rcvlowat(*d.from, bulk ? kBatch : 1);
        }
        if (!bulk) {
            return;
        }
        if (!d.linger) {
            d.linger = std::make_unique<asio::steady_timer>(proxy_.io);
        }
        d.linger->expires_after(kBatchLinger);
        d.linger->async_wait([self = shared_from_this(), &d](error_code ec) {
            if (ec || self->finished_ || !d.batching) {
                return;
            }
            d.batching = false;
            set_rcvlowat(*d.from, 1);
        });
    }

    static void set_rcvlowat(tcp::socket& socket, int bytes) {
        (void)::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVLOWAT, &bytes, sizeof bytes);
    }

    // Waits until `socket` is ready for `what`, then moves `d` on; an error ends the connection.
    void transfer_when(tcp::socket& socket, tcp::socket::wait_type what, Direction& d) {
        socket.async_wait(what, [self = shared_from_this(), &d](error_code ec) {
            if (self->finished_) {
                return;
            }
            if (ec) {
                self->finish();
                return;
            }
            self->transfer(d);
        });
    }

    // Moves what `d.from` has to `d.to` through a pipe (splice: the bytes stay in the kernel,
    // and an idle direction holds no buffer), until one side would block.
    void transfer(Direction& d) {
        if (d.batching && d.linger) {
            d.linger->cancel();  // the kernel woke the wait first
        }
        if (!d.pipe_read) {
            int fds[2];
            if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
                record_.outcome = Outcome::kFailed;
                record_.reason = fmt::format("no pipe for the relay: {}", errno_string(errno));
                finish();
                return;
            }
            d.pipe_read.reset(fds[0]);
            d.pipe_write.reset(fds[1]);
            // A bigger pipe moves a bulk download in fewer, larger steps. Past the per-user
            // budget for pipe memory the kernel refuses: the default 64 KiB then serves.
            const int size = ::fcntl(fds[1], F_SETPIPE_SZ, kBulkPipe);
            d.chunk = size > 0 ? static_cast<size_t>(size) : kRelayChunk;
        }
        constexpr unsigned kFlags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;
        for (;;) {
            if (d.in_pipe == 0) {
                const ssize_t n = ::splice(d.from->native_handle(), nullptr, d.pipe_write.get(),
                                           nullptr, d.chunk, kFlags);
                if (n == 0) {
                    direction_ended(d);
                    return;
                }
                if (n < 0) {
                    if (errno == EINTR) {
                        continue;
                    }
                    if (errno == EAGAIN) {
                        batch(d);
                        pump(d);
                    } else {
                        finish();  // a reset or an error: nothing is left to relay either way
                    }
                    return;
                }
                d.in_pipe = static_cast<size_t>(n);
                d.moved += d.in_pipe;
                *d.count += d.in_pipe;
                if (const Clock::duration pause = proxy_.throttle.take(d.in_pipe);
                    pause > Clock::duration::zero()) {
                    if (!d.wait) {
                        d.wait = std::make_unique<asio::steady_timer>(proxy_.io);
                    }
                    d.wait->expires_after(pause);
                    d.wait->async_wait([self = shared_from_this(), &d](error_code ec) {
                        if (!ec && !self->finished_) {
                            self->transfer(d);
                        }
                    });
                    return;
                }
            }
            const ssize_t m = ::splice(d.pipe_read.get(), nullptr, d.to->native_handle(), nullptr,
                                       d.in_pipe, kFlags);
            if (m < 0) {
                if (errno == EINTR) {
                    continue;
                }
                if (errno == EAGAIN) {
                    transfer_when(*d.to, tcp::socket::wait_write, d);
                } else {
                    finish();
                }
                return;
            }
            d.in_pipe -= static_cast<size_t>(m);
        }
    }

    // `d.from` ended: pass the end on, and finish once both directions have.
    void direction_ended(Direction& d) {
        d.done = true;
        d.pipe_read.reset();
        d.pipe_write.reset();
        error_code ignored;
        d.to->shutdown(tcp::socket::shutdown_send, ignored);
        if ((up_.done || up_.from == nullptr) && (down_.done || down_.from == nullptr)) {
            finish();
        }
    }

    // Refused before anything was relayed: the client gets an HTTP error it can show.
    void refuse(int status, const std::string& text, const std::string& hint,
                std::string reason = {}) {
        record_.outcome = Outcome::kRefused;
        record_.reason = reason.empty() ? text : std::move(reason);
        record_.hint = hint;
        respond_and_finish(status, hint.empty() ? text : fmt::format("{} ({})", text, hint));
    }

    void fail(int status, const std::string& reason) {
        record_.outcome = Outcome::kFailed;
        record_.reason = reason;
        respond_and_finish(status, reason);
    }

    void respond_and_finish(int status, const std::string& text) {
        report();  // before the client reads the answer and perhaps exits
        timer_.cancel();
        resolver_.cancel();
        auto out = std::make_shared<std::string>(error_response(status, text));
        asio::async_write(client_, asio::buffer(*out),
                          [self = shared_from_this(), out](error_code, size_t) { self->finish(); });
    }

    Proxy::Impl& proxy_;
    tcp::socket client_;
    tcp::socket upstream_;
    tcp::resolver resolver_;
    asio::steady_timer timer_;
    Clock::time_point started_;
    std::string head_;  // the request head read so far, then the tunnel's first bytes
    ProxyRequest request_{};
    bool finished_ = false;
    bool reported_ = false;
    bool asking_ = false;  // waiting for the user's answer
    ConnectionRecord record_{};
    Direction up_{};
    Direction down_{};
};

}  // namespace

void Proxy::Impl::accept() {
    if (!acceptor) {
        return;
    }
    acceptor->async_accept([this, listening = acceptor.get()](error_code ec, tcp::socket socket) {
        if (acceptor.get() != listening) {
            return;  // replaced by serve() or closed by close_all()
        }
        if (ec) {
            if (ec == asio::error::operation_aborted) {
                return;
            }
            SPDLOG_LOGGER_WARN(log::get("network"), "proxy: accept failed: {}", ec.message());
        } else {
            error_code ignored;
            socket.set_option(tcp::no_delay(true), ignored);
            stop_pacing(socket);
            auto connection = std::make_shared<Connection>(*this, std::move(socket));
            live.insert(connection);
            open.fetch_add(1, std::memory_order_relaxed);
            if (live.size() > options.max_connections) {
                connection->refuse_over_limit(options.max_connections);
            } else {
                connection->start();
            }
        }
        accept();
    });
}

void Proxy::Impl::close_all() {
    if (acceptor) {
        error_code ignored;
        acceptor->close(ignored);
        acceptor.reset();
    }
    // finish() erases from `live`: iterate over a copy.
    const std::vector<std::shared_ptr<Connection>> all(live.begin(), live.end());
    for (const auto& connection : all) {
        connection->finish();
    }
}

Proxy::Proxy(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<Proxy>> Proxy::start(ProxyOptions options, Decide decide, Report report,
                                            Ask ask) {
    // Each connection holds two sockets and, while it moves bytes, two pipes: 256 of them need
    // more descriptors than the usual soft limit of 1,024. The hard limit is ours to take.
    rlimit files{};
    if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
        files.rlim_cur = files.rlim_max;
        (void)::setrlimit(RLIMIT_NOFILE, &files);
    }
    auto impl = std::make_unique<Impl>(std::move(options), std::move(decide), std::move(report),
                                       std::move(ask));
    Impl* raw = impl.get();
    try {
        raw->thread = std::thread([raw] {
            for (;;) {
                try {
                    raw->io.run();
                    return;
                } catch (const std::exception& e) {
                    // A handler that throws must not take the supervisor down: log, go on.
                    SPDLOG_LOGGER_ERROR(log::get("network"), "proxy: {}", e.what());
                }
            }
        });
    } catch (const std::system_error& e) {
        return Error{Errc::kResourceExhausted,
                     fmt::format("start the network proxy's thread: {}", e.what())};
    }
    return std::unique_ptr<Proxy>(new Proxy(std::move(impl)));
}

Proxy::~Proxy() {
    if (!impl_) {
        return;
    }
    // Every connection is finished (and reported) on the proxy's thread, then it stops.
    asio::post(impl_->io, [impl = impl_.get()] {
        impl->close_all();
        impl->io.stop();
    });
    impl_->work.reset();
    if (impl_->thread.joinable()) {
        impl_->thread.join();
    }
}

void Proxy::serve(UniqueFd listener) {
    auto fd = std::make_shared<UniqueFd>(std::move(listener));
    asio::post(impl_->io, [impl = impl_.get(), fd] {
        if (impl->acceptor) {
            error_code ignored;
            impl->acceptor->close(ignored);
        }
        auto acceptor = std::make_unique<tcp::acceptor>(impl->io);
        error_code ec;
        acceptor->assign(tcp::v4(), fd->release(), ec);
        if (ec) {
            SPDLOG_LOGGER_ERROR(log::get("network"), "proxy: cannot use the listener: {}",
                                ec.message());
            return;
        }
        impl->acceptor = std::move(acceptor);
        impl->accept();
    });
}

size_t Proxy::open_connections() const {
    return impl_->open.load(std::memory_order_relaxed);
}

}  // namespace stockade::network
