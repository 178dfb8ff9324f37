#include "workspace/service.h"

#include <malloc.h>

#include <fmt/format.h>

#include "common/log.h"
#include "workspace/channel.h"

namespace stockade::workspace {

namespace {

template <class... Ts>
struct Overloaded : Ts... {
    using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

// Wraps a Result<T> of the workspace into the reply's Result<ReplyValue>.
template <class T>
Result<channel::ReplyValue> as_reply(Result<T> r) {
    if (!r) {
        return std::move(r).error();
    }
    return channel::ReplyValue{std::move(r).value()};
}

Result<channel::ReplyValue> dispatch(Workspace& ws, channel::RequestArgs& args) {
    using namespace channel;  // NOLINT(google-build-using-namespace): the message types
    return std::visit(
        Overloaded{
            [](HelloArgs&) -> Result<ReplyValue> { return ReplyValue{HelloResult{}}; },
            [&](StatArgs& a) { return as_reply(ws.stat(a.root, a.path)); },
            [&](ReadArgs& a) { return as_reply(ws.read(a.root, a.path, a.max_bytes)); },
            [&](WriteRequest& a) { return as_reply(ws.write(a)); },
            [&](MkdirsArgs& a) -> Result<ReplyValue> {
                Status st = ws.make_dirs(a.root, a.path);
                if (!st) {
                    return std::move(st).error();
                }
                return ReplyValue{MkdirsResult{}};
            },
            [&](ListArgs& a) {
                return as_reply(ws.list(a.root, a.path, static_cast<size_t>(a.max_entries)));
            },
            [&](RgRequest& a) { return as_reply(ws.run_rg(a)); },
        },
        args);
}

// Encodes a reply; one too large to send becomes an error reply with the same id.
Result<std::string> encode_or_fail(const channel::Reply& reply) {
    auto frame = channel::encode_reply(reply);
    if (frame || !reply.result) {
        return frame;
    }
    return channel::encode_reply(channel::Reply{reply.id, std::move(frame).error().wrap("reply")});
}

}  // namespace

constexpr size_t kTrimAfterBytes = size_t{1} << 20;

int serve_channel(int fd, Workspace& ws) {
    auto log = log::get("workspace");
    bool greeted = false;
    uint64_t served = 0;
    for (;;) {
        auto received = channel::recv_frame(fd);
        if (!received) {
            SPDLOG_LOGGER_ERROR(log, "worker channel closed: {} served={}",
                                received.error().message, served);
            return 1;
        }
        if (!received->has_value()) {
            SPDLOG_LOGGER_DEBUG(log, "worker channel end of stream served={}", served);
            return 0;
        }
        channel::Frame& frame = (*received)->frame;
        (*received)->fds.clear();  // no request carries descriptors

        channel::Reply reply;
        auto request = channel::decode_request(frame);
        if (!request) {
            std::optional<uint64_t> id = channel::recover_id(frame);
            if (!id) {
                SPDLOG_LOGGER_ERROR(log, "worker channel: undecodable request without id: {}",
                                    request.error().message);
                return 1;
            }
            SPDLOG_LOGGER_WARN(log, "worker channel: bad request id={}: {}", *id,
                               request.error().message);
            reply = channel::Reply{*id, std::move(request).error()};
        } else if (!greeted && channel::op_of(request->args) != channel::Op::kHello) {
            reply = channel::Reply{
                request->id,
                Error{Errc::kFailedPrecondition,
                      fmt::format("request \"{}\" before hello: the channel starts with hello",
                                  channel::op_name(channel::op_of(request->args)))}};
        } else {
            greeted = true;
            reply = channel::Reply{request->id, dispatch(ws, request->args)};
            ++served;
        }

        auto encoded = encode_or_fail(reply);
        if (!encoded) {
            SPDLOG_LOGGER_ERROR(log, "worker channel: cannot encode a reply: {}",
                                encoded.error().message);
            return 1;
        }
        if (auto sent = channel::send_frame(fd, *encoded); !sent) {
            SPDLOG_LOGGER_ERROR(log, "worker channel: {}", sent.error().message);
            return 1;
        }
        // The worker idles for most of a session: after a large file went through, give the
        // memory back instead of keeping glibc's high-water mark.
        if (frame.payload.size() + encoded->size() > kTrimAfterBytes) {
            (void)::malloc_trim(0);
        }
    }
}

}  // namespace stockade::workspace
