// What the workspace module says about itself, beside the protocol: a worker's channel that
// broke, a request it could not decode, a spawn. Not through spdlog (common/log.h): the session
// worker (runner/worker/) links this module and nothing of spdlog, so that what runs inside a
// sandbox carries no logging formats (docs/threat-model.md, "What runs inside").
//
// Without a sink, warnings and errors are one line on stderr ("stockade-worker: warning: ..."),
// as the worker writes them; debug lines are dropped. The supervisor installs a sink that
// hands them to its "workspace" logger, with that logger's level (runner/cli/main.cc).
#pragma once

#include <string_view>
#include <utility>

#include <fmt/format.h>

namespace stockade::workspace {

enum class Severity { kDebug, kWarning, kError };

using DiagnosticsSink = void (*)(Severity severity, std::string_view message);

// Sends every later message of `least` or more to `sink` (nullptr: back to stderr). Call it
// before the threads that report start; thread-safe either way.
void set_diagnostics_sink(DiagnosticsSink sink, Severity least) noexcept;

bool diagnostics_enabled(Severity severity) noexcept;
void diagnose(Severity severity, std::string_view message);

// Formats only when the message goes somewhere.
template <typename... Args>
void diagnose(Severity severity, fmt::format_string<Args...> format, Args&&... args) {
    if (diagnostics_enabled(severity)) {
        diagnose(severity, std::string_view(fmt::format(format, std::forward<Args>(args)...)));
    }
}

}  // namespace stockade::workspace
