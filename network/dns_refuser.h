// The resolver of a sandbox that has no network of its own, or whose only way out is the
// allowlist proxy (which resolves names itself, outside). The sandbox's child binds a UDP
// socket on 127.0.0.1:53 inside its empty network namespace, before anything untrusted runs,
// and hands it over (sandbox::Sandbox::dns_socket); its generated /etc/resolv.conf names that
// address. Every query sent there is answered here, outside the sandbox, with REFUSED: a
// lookup fails at once rather than after its resolver's timeouts, and the sandbox's owner
// learns which name was asked for — what a command's result names, with the way to reach it.
//
// One thread serves every sandbox of the process (epoll): a session costs a registration, not
// a thread. A query is answered whatever the owner's handler does; a flood is read a bounded
// batch at a time per socket, so that one sandbox cannot starve another's answers.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

#include "common/result.h"
#include "common/unique_fd.h"
#include "network/dns_message.h"

namespace stockade::network {

class DnsRefuser {
public:
    // Called on the refuser's thread for each well-formed query, just before it is answered:
    // once a client has its answer, the query is counted (a command's result names it).
    using OnQuestion = std::function<void(const DnsQuestion&)>;

    // While the returned registration lives, queries on `socket` are answered and reported.
    // Its destruction waits for a handler in progress, and none runs after: what the handler
    // uses may go right after. Never destroy it from inside its own handler.
    class Registration {
    public:
        Registration() = default;
        Registration(Registration&& other) noexcept : id_(std::exchange(other.id_, 0)) {}
        Registration& operator=(Registration&& other) noexcept;
        ~Registration();
        [[nodiscard]] bool active() const noexcept { return id_ != 0; }

    private:
        friend class DnsRefuser;
        explicit Registration(uint64_t id) : id_(id) {}
        void release() noexcept;
        uint64_t id_ = 0;
    };

    static Result<Registration> serve(UniqueFd socket, OnQuestion on_question);
};

}  // namespace stockade::network
