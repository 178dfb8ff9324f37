// Matchers for Result/Status: EXPECT_THAT(r, IsOk()); EXPECT_THAT(r, HasErrc(Errc::kNotFound)).
#pragma once

#include <gmock/gmock.h>

#include "common/result.h"

namespace stockade::testing {

MATCHER(IsOk, "is OK") {
    if (arg.has_value()) {
        return true;
    }
    *result_listener << "error " << errc_name(arg.error().code) << ": " << arg.error().message;
    return false;
}

MATCHER_P(HasErrc, code, std::string("fails with ") + errc_name(code)) {
    if (arg.has_value()) {
        *result_listener << "succeeded";
        return false;
    }
    *result_listener << "error " << errc_name(arg.error().code) << ": " << arg.error().message;
    return arg.error().code == code;
}

}  // namespace stockade::testing
