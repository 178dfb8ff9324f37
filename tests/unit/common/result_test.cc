#include "common/result.h"

#include <errno.h>

#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade {
namespace {

using testing::HasErrc;
using testing::IsOk;

Result<int> half(int v) {
    if (v % 2 != 0) {
        return Error{Errc::kInvalidArgument, "odd"};
    }
    return v / 2;
}

Result<int> quarter(int v) {
    ASSIGN_OR_RETURN(int h, half(v));
    ASSIGN_OR_RETURN(int q, half(h));
    return q;
}

Status check_even(int v) {
    RETURN_IF_ERROR(half(v));
    return {};
}

TEST(ResultTest, MacrosPropagateTheFirstError) {
    EXPECT_EQ(*quarter(8), 2);
    EXPECT_THAT(quarter(6), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(check_even(4), IsOk());
    EXPECT_THAT(check_even(3), HasErrc(Errc::kInvalidArgument));
}

TEST(ResultTest, WrapAddsContextOutward) {
    Error e = errno_error("open \"a\"", ENOENT).wrap("load config");
    EXPECT_EQ(e.message, "load config: open \"a\": ENOENT (No such file or directory)");
    EXPECT_EQ(e.code, Errc::kNotFound);
    EXPECT_EQ(e.sys_errno, ENOENT);
}

TEST(ResultTest, ErrnoMapsToCodes) {
    EXPECT_EQ(errc_from_errno(EPERM), Errc::kPermissionDenied);
    EXPECT_EQ(errc_from_errno(ENOSYS), Errc::kUnavailable);
    EXPECT_EQ(errc_from_errno(ENOSPC), Errc::kResourceExhausted);
    EXPECT_EQ(errno_string(EACCES), "EACCES (Permission denied)");
}

}  // namespace
}  // namespace stockade
