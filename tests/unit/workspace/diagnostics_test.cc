#include "workspace/diagnostics.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "common/unique_fd.h"

namespace stockade::workspace {
namespace {

std::vector<std::pair<Severity, std::string>> g_seen;

void collect(Severity severity, std::string_view message) {
    g_seen.emplace_back(severity, std::string(message));
}

// What diagnose writes to stderr while `body` runs.
template <typename Body>
std::string stderr_of(Body body) {
    char path[] = "/tmp/stockade-diagnostics-XXXXXX";
    UniqueFd file(::mkstemp(path));
    EXPECT_TRUE(file);
    ::unlink(path);
    UniqueFd saved(::dup(STDERR_FILENO));
    ::dup2(file.get(), STDERR_FILENO);
    body();
    ::dup2(saved.get(), STDERR_FILENO);
    std::string text(4096, '\0');
    const ssize_t n = ::pread(file.get(), text.data(), text.size(), 0);
    text.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return text;
}

class DiagnosticsTest : public ::testing::Test {
protected:
    void TearDown() override {
        set_diagnostics_sink(nullptr, Severity::kWarning);
        g_seen.clear();
    }
};

TEST_F(DiagnosticsTest, WithoutASinkWarningsAndErrorsAreOneLineOnStderrAndDebugIsDropped) {
    const std::string text = stderr_of([] {
        diagnose(Severity::kDebug, "spawned pid={}", 7);
        diagnose(Severity::kWarning, "worker: no signalfd ({})", "EMFILE");
        diagnose(Severity::kError, "worker channel closed: {} served={}", "EOF", 3);
    });
    EXPECT_EQ(text,
              "stockade-worker: warning: worker: no signalfd (EMFILE)\n"
              "stockade-worker: error: worker channel closed: EOF served=3\n");
}

TEST_F(DiagnosticsTest, ASinkGetsWhatIsAtItsLevelAndNothingGoesToStderr) {
    set_diagnostics_sink(collect, Severity::kDebug);
    EXPECT_TRUE(diagnostics_enabled(Severity::kDebug));
    const std::string text = stderr_of([] {
        diagnose(Severity::kDebug, "spawned pid={}", 7);
        diagnose(Severity::kError, "worker channel: {}", "broken pipe");
    });
    EXPECT_EQ(text, "");
    ASSERT_EQ(g_seen.size(), 2U);
    EXPECT_EQ(g_seen[0], std::make_pair(Severity::kDebug, std::string("spawned pid=7")));
    EXPECT_EQ(g_seen[1],
              std::make_pair(Severity::kError, std::string("worker channel: broken pipe")));

    set_diagnostics_sink(collect, Severity::kError);
    diagnose(Severity::kWarning, "not at the sink's level");
    EXPECT_EQ(g_seen.size(), 2U);
    EXPECT_FALSE(diagnostics_enabled(Severity::kWarning));
}

}  // namespace
}  // namespace stockade::workspace
