// One named spdlog logger per module, all writing to stderr (never stdout: the MCP protocol may
// own it). SPDLOG_LEVEL=info,sandbox=trace tunes them without a rebuild.
#pragma once

#include <memory>
#include <string_view>

#include <spdlog/spdlog.h>

namespace stockade::log {

// Creates the module loggers and applies SPDLOG_LEVEL. Call once, early in main.
void init(std::string_view default_level = "warn");

std::shared_ptr<spdlog::logger> get(std::string_view module);

}  // namespace stockade::log
