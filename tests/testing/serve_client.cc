#include "tests/testing/serve_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "tests/testing/refusals.h"
#include "tests/testing/sandbox_harness.h"

namespace stockade::testing {

ServeProcess::ServeProcess(const std::string& workspace, const std::string& state,
                           const std::vector<std::string>& extra, const ServeLaunch& launch) {
    int in[2];
    int out[2];
    EXPECT_EQ(::pipe2(in, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
    std::string bin = stockade_path();
    std::vector<std::string> args = {bin, "serve", "--workspace", workspace};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args) {
        argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    std::string state_env = "STOCKADE_STATE_DIR=" + state;
    const std::string err_path = launch.stderr_path.empty() ? "/dev/null" : launch.stderr_path;
    std::vector<std::string> env = launch.env;  // putenv keeps the child's pointers to these
    pid_ = ::fork();
    if (pid_ == 0) {
        ::dup2(in[0], 0);
        ::dup2(out[1], 1);
        int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        ::dup2(err, 2);
        ::putenv(state_env.data());
        for (std::string& entry : env) {
            ::putenv(entry.data());
        }
        if (launch.deny_user_namespaces && deny_user_namespaces() != 0) {
            ::_exit(126);
        }
        ::execv(bin.c_str(), argv.data());
        ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    to_ = in[1];
    from_ = out[0];
}

ServeProcess::~ServeProcess() {
    close_input();
    if (pid_ > 0 && wait_exit(std::chrono::seconds(10)) < 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }
    if (from_ >= 0) {
        ::close(from_);
    }
}

void ServeProcess::send_line(const std::string& line) {
    std::string framed = line + "\n";
    size_t sent = 0;
    while (sent < framed.size()) {
        ssize_t n = ::write(to_, framed.data() + sent, framed.size() - sent);
        if (n <= 0) {
            ADD_FAILURE() << "cannot write to stockade serve";
            return;
        }
        sent += static_cast<size_t>(n);
    }
}

int ServeProcess::send_request(const std::string& method, nlohmann::json params) {
    int id = ++id_;
    send_line(nlohmann::json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}
                  .dump());
    return id;
}

void ServeProcess::notify(const std::string& method, nlohmann::json params) {
    send_line(nlohmann::json{{"jsonrpc", "2.0"}, {"method", method}, {"params", params}}.dump());
}

nlohmann::json ServeProcess::read_message(std::chrono::steady_clock::time_point deadline) {
    while (std::chrono::steady_clock::now() < deadline) {
        size_t nl = buffer_.find('\n');
        if (nl != std::string::npos) {
            std::string line = buffer_.substr(0, nl);
            buffer_.erase(0, nl + 1);
            return nlohmann::json::parse(line, nullptr, false);
        }
        pollfd p{from_, POLLIN, 0};
        if (::poll(&p, 1, 200) <= 0) {
            continue;
        }
        char chunk[65536];
        ssize_t n = ::read(from_, chunk, sizeof chunk);
        if (n <= 0) {
            break;
        }
        buffer_.append(chunk, static_cast<size_t>(n));
    }
    return nullptr;
}

nlohmann::json ServeProcess::wait_response(int id, std::chrono::milliseconds limit) {
    for (auto it = early_.begin(); it != early_.end(); ++it) {
        if (it->value("id", -1) == id) {
            nlohmann::json found = std::move(*it);
            early_.erase(it);
            return found;
        }
    }
    auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        nlohmann::json msg = read_message(deadline);
        if (msg.is_null()) {
            ADD_FAILURE() << "no response to request " << id << " from stockade serve";
            return nullptr;
        }
        if (msg.is_discarded()) {
            ADD_FAILURE() << "stockade serve wrote something that is not JSON";
            continue;
        }
        if (!msg.contains("id")) {
            notifications_.push_back(std::move(msg));
        } else if (msg["id"] == id) {
            return msg;
        } else {
            early_.push_back(std::move(msg));
        }
    }
}

nlohmann::json ServeProcess::request(const std::string& method, nlohmann::json params,
                                     std::chrono::milliseconds limit) {
    return wait_response(send_request(method, std::move(params)), limit);
}

nlohmann::json ServeProcess::call(const std::string& tool, nlohmann::json arguments,
                                  nlohmann::json meta, std::chrono::milliseconds limit) {
    nlohmann::json params = {{"name", tool}, {"arguments", std::move(arguments)}};
    if (!meta.is_null()) {
        params["_meta"] = std::move(meta);
    }
    return request("tools/call", std::move(params), limit);
}

nlohmann::json ServeProcess::initialize() {
    auto init = request("initialize", {{"protocolVersion", "2025-11-25"},
                                       {"capabilities", nlohmann::json::object()},
                                       {"clientInfo", {{"name", "test"}, {"version", "1"}}}});
    notify("notifications/initialized", nlohmann::json::object());
    return init;
}

void ServeProcess::close_input() {
    if (to_ >= 0) {
        ::close(to_);
        to_ = -1;
    }
}

int ServeProcess::wait_exit(std::chrono::milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (pid_ > 0 && std::chrono::steady_clock::now() < deadline) {
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
}

std::string text_of(const nlohmann::json& response) {
    if (!response.is_object() || !response.contains("result") ||
        !response["result"].contains("content")) {
        return response.dump();
    }
    return response["result"]["content"][0].value("text", "");
}

std::vector<pid_t> worker_pids(const std::string& state) {
    std::vector<pid_t> pids;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(state, ec);
         it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        if (ec || it->path().filename() != "events.jsonl") {
            continue;
        }
        for (const auto& line : split_lines(read_file_text(it->path()).value_or(""))) {
            auto event = nlohmann::json::parse(line, nullptr, false);
            if (!event.is_discarded() && event.value("type", "") == "WorkerStarted") {
                pids.push_back(event.value("pid", -1));
            }
        }
    }
    return pids;
}

bool alive(pid_t pid) {
    if (pid <= 0 || ::kill(pid, 0) != 0) {
        return false;
    }
    // A zombie is not alive: look at its state.
    auto stat = read_file_text("/proc/" + std::to_string(pid) + "/stat");
    if (!stat) {
        return false;
    }
    size_t close = stat->rfind(')');
    return close == std::string::npos || close + 2 >= stat->size() || (*stat)[close + 2] != 'Z';
}

}  // namespace stockade::testing
