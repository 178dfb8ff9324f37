#include "common/proc_table.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace stockade {
namespace {

TEST(ProcTableTest, ParsesTheFieldsAfterACommThatHoldsParenthesesAndSpaces) {
    auto st = parse_proc_stat("1234 (evil) S 1 2 (x)) Z 7 8 9 10 11 ...");
    ASSERT_TRUE(st.has_value());
    EXPECT_EQ(st->pid, 1234);
    EXPECT_EQ(st->comm, "evil) S 1 2 (x)");
    EXPECT_EQ(st->state, 'Z');
    EXPECT_EQ(st->ppid, 7);
    EXPECT_EQ(st->pgrp, 8);
    EXPECT_EQ(st->session, 9);
    EXPECT_FALSE(st->alive());
}

TEST(ProcTableTest, RefusesWhatIsNotAStatLine) {
    for (const char* text : {"", "12", "12 (x", "x (y) S 1 2 3", "12 (y) S 1 2", "12 (y)"}) {
        EXPECT_FALSE(parse_proc_stat(text).has_value()) << text;
    }
}

TEST(ProcTableTest, SeesThisProcessAndItsSession) {
    bool seen = false;
    ASSERT_TRUE(for_each_process([&](const ProcStat& st) {
        if (st.pid == ::getpid()) {
            seen = true;
            EXPECT_EQ(st.session, ::getsid(0));
            EXPECT_TRUE(st.alive());
            return false;
        }
        return true;
    }));
    EXPECT_TRUE(seen);
}

TEST(ProcTableTest, ListsThisProcessesChildren) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        ::pause();
        ::_exit(0);
    }
    auto kids = own_children();
    (void)::kill(child, SIGKILL);
    (void)::waitpid(child, nullptr, 0);
    ASSERT_TRUE(kids.has_value());
    EXPECT_THAT(*kids, ::testing::Contains(child));
}

}  // namespace
}  // namespace stockade
