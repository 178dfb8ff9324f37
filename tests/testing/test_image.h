// The image the escape suites (tests/security) run their sandboxes on when STOCKADE_TEST_IMAGE=1:
// busybox, the host's libc, and the host programs the attacks are written in with their
// libraries (python3 and its standard library, curl, bash, nohup, getent:
// tests/integration/busybox_image.h), imported once per test process into a store of its own,
// so that every attack is tried again on a root file system that is not the host's /usr. Without
// the variable nothing is imported, and the flags and environment below are empty: the sandboxes
// run on the host image.
//
// A suite starts a sandbox on it with test_image_flags() among stockade's flags and
// test_image_env() in the environment of the stockade process (run, serve), and checks it with
// SKIP_OR_FAIL_WITHOUT_TEST_IMAGE() in SetUp first.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace stockade::testing {

struct TestImage {
    bool wanted = false;  // STOCKADE_TEST_IMAGE=1
    std::string name;     // the image's name in the store
    std::string store;    // the store's directory, for STOCKADE_IMAGE_STORE
    // Why this host cannot build the image (busybox-static or the host's libc is missing): the
    // suite is skipped, since there is nothing to test on.
    std::string unavailable;
    // Why the import failed: every case fails with it, as a broken import is a bug of ours.
    std::string error;

    [[nodiscard]] bool ready() const { return wanted && unavailable.empty() && error.empty(); }
};

// The first call imports the image when it is wanted; later calls return the same.
const TestImage& test_image();

// {"--image", NAME} when the sandboxes are to run on the image, else nothing.
std::vector<std::string> test_image_flags();

// {"STOCKADE_IMAGE_STORE=DIR"} for the environment of the stockade process that starts those
// sandboxes, else nothing.
std::vector<std::string> test_image_env();

}  // namespace stockade::testing

// Where the image is wanted: skips the test when the host cannot build it, fails it when the
// import failed. (A macro: GTEST_SKIP and ASSERT_* return from the calling function.)
#define SKIP_OR_FAIL_WITHOUT_TEST_IMAGE()                                                      \
    do {                                                                                       \
        const ::stockade::testing::TestImage& test_image_ = ::stockade::testing::test_image(); \
        if (!test_image_.unavailable.empty()) {                                                \
            GTEST_SKIP() << test_image_.unavailable;                                           \
        }                                                                                      \
        ASSERT_TRUE(test_image_.error.empty()) << test_image_.error;                           \
    } while (0)
