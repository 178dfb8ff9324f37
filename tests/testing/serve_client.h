// A `stockade serve` child driven over pipes, one JSON-RPC line at a time, for the integration
// tests. Notifications the server sends (progress, ...) are kept in notifications(); a request
// returns the response with its own id, whatever arrives in between.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace stockade::testing {

// How a ServeProcess is started besides its flags.
struct ServeLaunch {
    // Where serve's stderr (its log) goes; empty: /dev/null.
    std::string stderr_path{};
    // Serve and its sandboxes cannot create user namespaces (tests/testing/refusals.h).
    bool deny_user_namespaces = false;
    // "NAME=VALUE" entries added to (or replacing in) the test's environment for serve.
    std::vector<std::string> env{};
};

class ServeProcess {
public:
    // Starts `stockade serve --workspace WS` with STOCKADE_STATE_DIR=state and `extra` flags.
    ServeProcess(const std::string& workspace, const std::string& state,
                 const std::vector<std::string>& extra = {}, const ServeLaunch& launch = {});
    ~ServeProcess();
    ServeProcess(const ServeProcess&) = delete;
    ServeProcess& operator=(const ServeProcess&) = delete;

    // Sends a request and waits (up to `limit`) for its response.
    nlohmann::json request(const std::string& method, nlohmann::json params,
                           std::chrono::milliseconds limit = std::chrono::seconds(60));
    // tools/call; `meta` (e.g. {"progressToken": 1}) goes into params._meta when not null.
    nlohmann::json call(const std::string& tool, nlohmann::json arguments,
                        nlohmann::json meta = nullptr,
                        std::chrono::milliseconds limit = std::chrono::seconds(60));
    // The 2025-11-25 initialize handshake (and notifications/initialized).
    nlohmann::json initialize();
    // Sends a request without waiting; returns its id.
    int send_request(const std::string& method, nlohmann::json params);
    // Waits for the response to `id`.
    nlohmann::json wait_response(int id, std::chrono::milliseconds limit);
    void notify(const std::string& method, nlohmann::json params);
    [[nodiscard]] const std::vector<nlohmann::json>& notifications() const {
        return notifications_;
    }

    void close_input();
    // Exit status after stdin EOF, within `limit`; -1 if it did not exit.
    int wait_exit(std::chrono::milliseconds limit);
    [[nodiscard]] pid_t pid() const { return pid_; }

private:
    void send_line(const std::string& line);
    // The next message, or null at EOF/timeout.
    nlohmann::json read_message(std::chrono::steady_clock::time_point deadline);

    pid_t pid_ = -1;
    int to_ = -1;
    int from_ = -1;
    int id_ = 0;
    std::string buffer_;
    std::vector<nlohmann::json> notifications_;
    std::vector<nlohmann::json> early_;  // responses read while waiting for another id
};

// The text of a tools/call response (its first content block), or the whole message.
std::string text_of(const nlohmann::json& response);

// Host pids of the session workers the state directory's event logs name.
std::vector<pid_t> worker_pids(const std::string& state);

bool alive(pid_t pid);

}  // namespace stockade::testing
