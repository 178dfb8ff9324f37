#include "network/dns_refuser.h"

#include <sys/epoll.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <exception>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>

#include <netinet/in.h>

namespace stockade::network {
namespace {

// Datagrams read from one socket before the others get their turn.
constexpr int kBatch = 64;

struct Entry {
    std::mutex mu;  // held while the socket is read and its handler runs
    UniqueFd socket;
    DnsRefuser::OnQuestion on_question;
    bool alive = true;  // guarded by mu
};

// The one epoll thread. Created on first use and never destroyed: sessions end on other
// threads until the process exits, and a registration must always find it.
class Loop {
public:
    static Result<Loop*> get() {
        static std::mutex mu;
        static Loop* loop = nullptr;
        std::lock_guard lock(mu);
        if (loop != nullptr) {
            return loop;
        }
        UniqueFd epoll(::epoll_create1(EPOLL_CLOEXEC));
        if (!epoll) {
            return errno_error("create the DNS refuser's epoll instance", errno);
        }
        auto* made = new Loop(std::move(epoll));
        try {
            std::thread([made] { made->run(); }).detach();
        } catch (const std::system_error& e) {
            delete made;
            return Error{Errc::kUnavailable,
                         std::string("start the DNS refuser's thread: ") + e.what()};
        }
        loop = made;
        return loop;
    }

    Result<uint64_t> add(UniqueFd socket, DnsRefuser::OnQuestion on_question) {
        auto entry = std::make_shared<Entry>();
        entry->socket = std::move(socket);
        entry->on_question = std::move(on_question);
        std::lock_guard lock(mu_);
        const uint64_t id = next_id_++;
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = id;
        if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, entry->socket.get(), &ev) != 0) {
            return errno_error("watch a sandbox's resolver socket", errno);
        }
        entries_.emplace(id, std::move(entry));
        return id;
    }

    void remove(uint64_t id) noexcept {
        std::shared_ptr<Entry> entry;
        {
            std::lock_guard lock(mu_);
            auto it = entries_.find(id);
            if (it == entries_.end()) {
                return;
            }
            entry = std::move(it->second);
            entries_.erase(it);
            (void)::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, entry->socket.get(), nullptr);
        }
        // Waits for a handler in progress; none starts after.
        std::lock_guard lock(entry->mu);
        entry->alive = false;
        entry->socket.reset();
    }

private:
    explicit Loop(UniqueFd epoll) : epoll_(std::move(epoll)) {}

    [[noreturn]] void run() {
        std::array<epoll_event, 32> events{};
        for (;;) {
            const int n = ::epoll_wait(epoll_.get(), events.data(), events.size(), -1);
            for (int i = 0; i < n; ++i) {
                std::shared_ptr<Entry> entry;
                {
                    std::lock_guard lock(mu_);
                    auto it = entries_.find(events[static_cast<size_t>(i)].data.u64);
                    if (it == entries_.end()) {
                        continue;
                    }
                    entry = it->second;
                }
                std::lock_guard lock(entry->mu);
                if (entry->alive) {
                    answer(*entry);
                }
            }
        }
    }

    static void answer(Entry& entry) noexcept {
        std::array<char, kMaxDnsMessageBytes> buffer{};
        for (int i = 0; i < kBatch; ++i) {
            sockaddr_storage from{};
            socklen_t from_len = sizeof from;
            const ssize_t n =
                ::recvfrom(entry.socket.get(), buffer.data(), buffer.size(), MSG_DONTWAIT,
                           reinterpret_cast<sockaddr*>(&from), &from_len);
            if (n < 0) {
                return;  // EAGAIN: all read; anything else: the next wake-up tries again
            }
            const std::string_view message(buffer.data(), static_cast<size_t>(n));
            const DnsQuestion question = parse_dns_query(message);
            if (question.status == DnsParse::kQuery && entry.on_question) {
                try {
                    entry.on_question(question);
                } catch (const std::exception&) {
                    // The owner's bookkeeping failed (out of memory): the answer goes anyway.
                }
            }
            const std::string reply = dns_refusal(message, question);
            if (!reply.empty()) {
                (void)::sendto(entry.socket.get(), reply.data(), reply.size(),
                               MSG_DONTWAIT | MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&from),
                               from_len);
            }
        }
    }

    UniqueFd epoll_;
    std::mutex mu_;
    uint64_t next_id_ = 1;                                // guarded by mu_
    std::map<uint64_t, std::shared_ptr<Entry>> entries_;  // guarded by mu_
};

}  // namespace

DnsRefuser::Registration& DnsRefuser::Registration::operator=(Registration&& other) noexcept {
    if (this != &other) {
        release();
        id_ = std::exchange(other.id_, 0);
    }
    return *this;
}

DnsRefuser::Registration::~Registration() {
    release();
}

void DnsRefuser::Registration::release() noexcept {
    if (id_ == 0) {
        return;
    }
    if (auto loop = Loop::get()) {
        (*loop)->remove(id_);
    }
    id_ = 0;
}

Result<DnsRefuser::Registration> DnsRefuser::serve(UniqueFd socket, OnQuestion on_question) {
    if (!socket) {
        return Error{Errc::kInvalidArgument, "no resolver socket to serve"};
    }
    ASSIGN_OR_RETURN(Loop * loop, Loop::get());
    ASSIGN_OR_RETURN(uint64_t id, loop->add(std::move(socket), std::move(on_question)));
    return Registration(id);
}

}  // namespace stockade::network
