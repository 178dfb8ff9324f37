#include "tools/process_output.h"

#include <gtest/gtest.h>

#include "tests/unit/tools/fake_process_manager.h"

namespace stockade::tools {
namespace {

using std::chrono::milliseconds;
using testing::FakeProcessManager;
using testing::FakeScript;

// ---- Rendering ---------------------------------------------------------------------------

TEST(StripAnsiTest, RemovesEscapeSequences) {
    EXPECT_EQ(strip_ansi("\x1b[32mok\x1b[0m"), "ok");
    EXPECT_EQ(strip_ansi("\x1b[1;31;40mred\x1b[m"), "red");
    EXPECT_EQ(strip_ansi("\x1b[?25lhidden cursor\x1b[?25h"), "hidden cursor");
    EXPECT_EQ(strip_ansi("\x1b]0;title\x07text"), "text");
    EXPECT_EQ(strip_ansi("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\"), "link");
    EXPECT_EQ(strip_ansi("\x1bP1$r0m\x1b\\after"), "after");
    EXPECT_EQ(strip_ansi("\x1b(Bplain\x1b"
                         "7saved\x1b"
                         "8"),
              "plainsaved");
    EXPECT_EQ(strip_ansi("\x1b=keypad\x1b>"), "keypad");
    EXPECT_EQ(strip_ansi("cut\x1b[3"), "cut");
    EXPECT_EQ(strip_ansi("cut\x1b"), "cut");
    EXPECT_EQ(strip_ansi("cut\x1b]0;never ends"), "cut");
    EXPECT_EQ(strip_ansi("caf\xc3\xa9 \xe2\x9c\x93"), "caf\xc3\xa9 \xe2\x9c\x93");
}

TEST(RenderLineTest, CarriageReturnsBackspacesAndControls) {
    EXPECT_EQ(render_line("\x1b[32mPASS\x1b[0m src/a.test.ts\r"), "PASS src/a.test.ts");
    EXPECT_EQ(render_line("10%\r50%\r100%"), "100%");
    EXPECT_EQ(render_line("10%\r50%\r100%\r"), "100%");
    EXPECT_EQ(render_line("Downloading\r\x1b[2KDone"), "Done");
    EXPECT_EQ(render_line("abc\r\r"), "abc");
    EXPECT_EQ(render_line("ab\bc"), "ac");
    EXPECT_EQ(render_line("\xc3\xa9\bx"), "x");
    EXPECT_EQ(render_line("\bx"), "x");
    EXPECT_EQ(render_line("bell\x07 and nul\x01\x7f"), "bell and nul");
    EXPECT_EQ(render_line("a\tb"), "a\tb");
    EXPECT_EQ(render_line("bad \xff byte"), "bad \xef\xbf\xbd byte");
    EXPECT_EQ(render_line(""), "");
}

TEST(RenderLineTest, TextKeepsOneLinePerRawLine) {
    EXPECT_EQ(render_text("one\r\ntwo\r\n\r\nthree"), "one\ntwo\n\nthree");
    EXPECT_EQ(render_text("a\n"), "a");
    EXPECT_EQ(render_text(""), "");
    EXPECT_EQ(indent_lines("a\n\nb"), "  a\n\n  b");
}

// ---- Formats -----------------------------------------------------------------------------

TEST(FormatTest, DurationsClocksAndSignals) {
    EXPECT_EQ(format_duration(milliseconds(0)), "0.0s");
    EXPECT_EQ(format_duration(milliseconds(849)), "0.8s");
    EXPECT_EQ(format_duration(milliseconds(3200)), "3.2s");
    EXPECT_EQ(format_duration(milliseconds(59'940)), "59.9s");
    EXPECT_EQ(format_duration(milliseconds(59'960)), "1m 00s");
    EXPECT_EQ(format_duration(milliseconds(125'000)), "2m 05s");
    EXPECT_EQ(format_duration(milliseconds(3'723'000)), "1h 02m 03s");
    EXPECT_EQ(format_timeout(milliseconds(120'000)), "120s");
    EXPECT_EQ(format_timeout(milliseconds(1500)), "1.5s");
    EXPECT_EQ(format_clock(milliseconds(272'000)), "04:32");
    EXPECT_EQ(format_clock(milliseconds(999)), "00:00");
    EXPECT_EQ(format_clock(milliseconds(3'723'000)), "1:02:03");
    EXPECT_EQ(signal_name(9), "SIGKILL");
    EXPECT_EQ(signal_name(15), "SIGTERM");
    EXPECT_EQ(signal_name(99), "signal 99");
    EXPECT_EQ(one_line("  a\nb\tc  "), "a \u23ce b c");
    EXPECT_EQ(one_line(std::string(100, 'x'), 10), std::string(10, 'x') + "\u2026");
}

TEST(FormatTest, StatusPhrases) {
    ProcessInfo info;
    EXPECT_EQ(status_phrase(info), "still running");
    info.state = ProcessState::kExited;
    info.exit_code = 1;
    EXPECT_EQ(status_phrase(info), "exited with code 1");
    info.exit_code.reset();
    info.signal = 11;
    EXPECT_EQ(status_phrase(info), "killed by SIGSEGV");
    info.state = ProcessState::kStopped;
    info.signal = 15;
    EXPECT_EQ(status_phrase(info), "stopped (SIGTERM)");
    info.signal.reset();
    info.exit_code = 143;
    EXPECT_EQ(status_phrase(info), "stopped (exit code 143)");
    info.state = ProcessState::kFailed;
    info.failure = "the sandbox worker died";
    EXPECT_EQ(status_phrase(info), "failed: the sandbox worker died");
    EXPECT_EQ(process_state_name(ProcessState::kRunning), "running");
    EXPECT_EQ(process_state_name(ProcessState::kExited), "exited");
    EXPECT_EQ(process_state_name(ProcessState::kStopped), "stopped");
    EXPECT_EQ(process_state_name(ProcessState::kFailed), "failed");
}

// ---- The middle-out window ---------------------------------------------------------------

std::string numbered(int from, int to, const std::string& suffix = "") {
    std::string s;
    for (int i = from; i <= to; ++i) {
        s += "line " + std::to_string(i) + suffix + "\n";
    }
    return s;
}

class WindowTest : public ::testing::Test {
protected:
    OutputWindow window(const std::string& data, const WindowLimits& limits = {}) {
        FakeProcessManager::Proc& p = pm.add_background("cmd", FakeScript{.output = data});
        Result<OutputWindow> w = output_window(pm, p.info.id, p.info.output_bytes,
                                               p.info.output_lines, limits, "/logs/p1.log");
        EXPECT_TRUE(w.has_value());
        return w ? *w : OutputWindow{};
    }
    FakeProcessManager pm;
};

TEST_F(WindowTest, EmptyOutput) {
    const OutputWindow w = window("");
    EXPECT_EQ(w.text, "");
    EXPECT_FALSE(w.truncated);
}

TEST_F(WindowTest, FourHundredLinesFit) {
    const OutputWindow w = window(numbered(1, 400));
    EXPECT_FALSE(w.truncated);
    EXPECT_EQ(w.text, render_text(numbered(1, 400)));
    EXPECT_EQ(w.info.shown_head_lines, 400U);
}

TEST_F(WindowTest, FourHundredAndOneLinesKeepHead250AndTail150) {
    const OutputWindow w = window(numbered(1, 401));
    ASSERT_TRUE(w.truncated);
    EXPECT_EQ(w.info.shown_head_lines, 250U);
    EXPECT_EQ(w.info.shown_tail_lines, 150U);
    EXPECT_EQ(w.info.omitted_lines, 1U);
    EXPECT_EQ(w.info.original_lines, 401U);
    EXPECT_EQ(w.omitted_bytes, std::string("line 251\n").size());
    EXPECT_EQ(w.info.spill_path, "/logs/p1.log");
    const std::string want =
        render_text(numbered(1, 250)) + "\n" +
        "[... 1 line omitted (9 bytes). Full output: /logs/p1.log \u2014 read or grep that file "
        "for the rest.]\n" +
        render_text(numbered(252, 401));
    EXPECT_EQ(w.text, want);
}

TEST_F(WindowTest, ByteLimitCutsBeforeTheLineLimit) {
    // 300 lines of 120 bytes: 36 KB, above the 30 KB limit although under 400 lines.
    const std::string pad(110, '=');
    const OutputWindow w = window(numbered(1, 300, " " + pad));
    ASSERT_TRUE(w.truncated);
    EXPECT_LE(w.text.size(), 30U * 1024);
    EXPECT_LT(w.info.shown_head_lines, 250U);
    EXPECT_LT(w.info.shown_tail_lines, 150U);
    EXPECT_EQ(w.info.shown_head_lines + w.info.shown_tail_lines + w.info.omitted_lines, 300U);
    EXPECT_TRUE(w.text.starts_with("line 1 ="));
    EXPECT_TRUE(w.text.ends_with("line 300 " + pad));
}

TEST_F(WindowTest, ExactlyThirtyKilobytesFits) {
    // 30 lines whose rendered text (with the 29 newlines between them) is exactly 30 KB.
    std::string data;
    size_t total = 0;
    for (int i = 0; i < 30; ++i) {
        const size_t len = i < 29 ? 1023 : 30 * 1024 - total;
        data += std::string(len, 'a') + "\n";
        total += len + 1;
    }
    ASSERT_EQ(render_text(data).size(), 30U * 1024);
    EXPECT_FALSE(window(data).truncated);
    data.insert(0, "x");
    EXPECT_TRUE(window(data).truncated);
}

TEST_F(WindowTest, RenderingHappensBeforeTheLimits) {
    // 40 KB of raw bytes that render to a few KB (colour codes) fit.
    std::string data;
    for (int i = 0; i < 300; ++i) {
        for (int k = 0; k < 10; ++k) {
            data += "\x1b[38;5;196m";
        }
        data += "x\r\n";
    }
    const OutputWindow w = window(data);
    EXPECT_FALSE(w.truncated);
    EXPECT_EQ(w.text.size(), 300U * 2 - 1);
}

TEST_F(WindowTest, OneGiantLineIsCut) {
    const OutputWindow w = window(std::string(100'000, 'z'));
    ASSERT_TRUE(w.truncated);
    EXPECT_LE(w.text.size(), 30U * 1024);
    EXPECT_TRUE(w.text.starts_with("zzzz"));
    EXPECT_EQ(w.info.shown_head_lines, 0U);
    EXPECT_EQ(w.info.omitted_lines, 1U);
    EXPECT_TRUE(w.text.ends_with("read or grep that file for the rest.]"));
}

TEST_F(WindowTest, GiantLastLineShowsItsEnd) {
    const OutputWindow w = window(numbered(1, 10) + std::string(100'000, 'z') + "END");
    ASSERT_TRUE(w.truncated);
    EXPECT_EQ(w.info.shown_head_lines, 10U);
    EXPECT_TRUE(w.text.ends_with("zzzEND"));
    EXPECT_LE(w.text.size(), 30U * 1024);
}

TEST_F(WindowTest, LargeOutputsAreReadPiecewise) {
    // ~6.6 MB, 600,000 lines: only the head and the tail are fetched.
    const OutputWindow w = window(numbered(1, 600'000));
    ASSERT_TRUE(w.truncated);
    EXPECT_LT(pm.bytes_served, 200U * 1024);
    EXPECT_EQ(w.info.shown_head_lines, 250U);
    EXPECT_EQ(w.info.shown_tail_lines, 150U);
    EXPECT_EQ(w.info.omitted_lines, 600'000U - 400);
    EXPECT_TRUE(w.text.starts_with("line 1\nline 2\n"));
    EXPECT_TRUE(w.text.ends_with("line 599999\nline 600000"));
    EXPECT_NE(w.text.find("line 250\n[... 599,600 lines omitted"), std::string::npos);
    EXPECT_NE(w.text.find("rest.]\nline 599851\n"), std::string::npos);
}

TEST_F(WindowTest, LargeOutputWithLongTailLinesFetchesAtMostOneWindow) {
    std::string data = numbered(1, 20'000);
    for (int i = 0; i < 150; ++i) {
        data += std::string(2000, 'q') + "\n";  // the last 150 lines: 300 KB
    }
    const OutputWindow w = window(data);
    ASSERT_TRUE(w.truncated);
    EXPECT_LT(pm.bytes_served, 200U * 1024);
    EXPECT_LE(w.text.size(), 30U * 1024);
    EXPECT_GT(w.info.shown_tail_lines, 0U);
    EXPECT_TRUE(w.text.ends_with(std::string(2000, 'q')));
}

// ---- Pages -------------------------------------------------------------------------------

class PageTest : public WindowTest {
protected:
    OutputPage page(const std::string& data, uint64_t from, size_t lines = 300,
                    size_t bytes = 20 * 1024) {
        FakeProcessManager::Proc& p = pm.add_background("cmd", FakeScript{.output = data});
        Result<OutputPage> r = output_page(pm, p.info.id, from, p.info.output_bytes,
                                           p.info.output_lines, lines, bytes);
        EXPECT_TRUE(r.has_value());
        return r ? *r : OutputPage{};
    }
};

TEST_F(PageTest, WholeOutputWhenItFits) {
    const OutputPage p = page("a\r\nb\r\n>>> ", 0);
    EXPECT_EQ(p.text, "a\nb\n>>> ");
    EXPECT_EQ(p.lines, 3U);
    EXPECT_EQ(p.first_line, 1U);
    EXPECT_EQ(p.last_line, 3U);
    EXPECT_EQ(p.end, 10U);
    EXPECT_EQ(p.remaining_bytes, 0U);
}

TEST_F(PageTest, FromTheMiddle) {
    const std::string data = numbered(1, 10);
    const OutputPage p = page(data, data.find("line 4"));
    EXPECT_EQ(p.first_line, 4U);
    EXPECT_EQ(p.last_line, 10U);
    EXPECT_TRUE(p.text.starts_with("line 4\n"));
}

TEST_F(PageTest, NothingAtTheEnd) {
    const OutputPage p = page("abc\n", 4);
    EXPECT_EQ(p.lines, 0U);
    EXPECT_EQ(p.end, 4U);
    EXPECT_EQ(p.text, "");
}

TEST_F(PageTest, LineCap) {
    const std::string data = numbered(1, 500);
    const OutputPage p = page(data, 0);
    EXPECT_EQ(p.lines, 300U);
    EXPECT_EQ(p.last_line, 300U);
    EXPECT_EQ(p.end, numbered(1, 300).size());
    EXPECT_EQ(p.remaining_lines, 200U);
    EXPECT_EQ(p.remaining_bytes, data.size() - numbered(1, 300).size());
}

TEST_F(PageTest, ByteCap) {
    const std::string data = numbered(1, 100, " " + std::string(500, '.'));
    const OutputPage p = page(data, 0);
    EXPECT_LE(p.text.size(), 20U * 1024);
    EXPECT_EQ(p.lines, 40U);  // 40 lines of 509 bytes (+ newline) fit in 20 KB
    EXPECT_EQ(p.remaining_lines, 60U);
}

TEST_F(PageTest, OneLongLineIsCutAndContinued) {
    const std::string data = std::string(50'000, 'x') + "\nnext\n";
    const OutputPage p = page(data, 0);
    EXPECT_EQ(p.lines, 1U);
    EXPECT_EQ(p.text.size(), 20U * 1024);
    EXPECT_EQ(p.end, 20U * 1024);
    EXPECT_EQ(p.remaining_lines, 2U);  // the rest of line 1, and line 2
    const OutputPage rest = page(data, p.end);
    EXPECT_EQ(rest.first_line, 1U);
}

TEST_F(PageTest, PartialLineWaitsUnlessItIsTheEnd) {
    // The page fetch is bounded; a line it cuts is left for the next page.
    const std::string data = numbered(1, 3) + std::string(100'000, 'y');
    const OutputPage p = page(data, 0);
    EXPECT_EQ(p.lines, 3U);
    EXPECT_EQ(p.end, numbered(1, 3).size());
}

}  // namespace
}  // namespace stockade::tools
