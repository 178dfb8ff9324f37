#include "workspace/diagnostics.h"

#include <unistd.h>

#include <atomic>
#include <string>

namespace stockade::workspace {

namespace {

std::atomic<DiagnosticsSink> g_sink{nullptr};
std::atomic<Severity> g_least{Severity::kWarning};

}  // namespace

void set_diagnostics_sink(DiagnosticsSink sink, Severity least) noexcept {
    g_least.store(sink != nullptr ? least : Severity::kWarning, std::memory_order_relaxed);
    g_sink.store(sink, std::memory_order_release);
}

bool diagnostics_enabled(Severity severity) noexcept {
    return severity >= g_least.load(std::memory_order_relaxed);
}

void diagnose(Severity severity, std::string_view message) {
    if (!diagnostics_enabled(severity)) {
        return;
    }
    if (DiagnosticsSink sink = g_sink.load(std::memory_order_acquire); sink != nullptr) {
        sink(severity, message);
        return;
    }
    std::string line = "stockade-worker: ";
    line += severity == Severity::kError ? "error: " : "warning: ";
    line += message;
    line += '\n';
    // One write, so that lines of processes sharing stderr do not interleave; a failed write
    // has nowhere else to go.
    (void)!::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace stockade::workspace
