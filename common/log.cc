#include "common/log.h"

#include <string>

#include <spdlog/cfg/env.h>
#include <spdlog/sinks/stdout_color_sinks.h>

namespace stockade::log {

namespace {
constexpr std::string_view kModules[] = {"runner", "exec",      "sandbox", "policy",
                                         "tools",  "workspace", "network"};
}

void init(std::string_view default_level) {
    auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    sink->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %n: %v");
    auto level = spdlog::level::from_str(std::string(default_level));
    for (auto name : kModules) {
        if (spdlog::get(std::string(name)) != nullptr) {
            continue;
        }
        auto logger = std::make_shared<spdlog::logger>(std::string(name), sink);
        logger->set_level(level);
        spdlog::register_logger(logger);
    }
    spdlog::cfg::load_env_levels();
}

std::shared_ptr<spdlog::logger> get(std::string_view module) {
    auto logger = spdlog::get(std::string(module));
    if (logger == nullptr) {
        init();
        logger = spdlog::get(std::string(module));
    }
    return logger != nullptr ? logger : spdlog::default_logger();
}

}  // namespace stockade::log
