#include "tests/testing/test_image.h"

#include <cstdlib>
#include <memory>

#include "tests/integration/busybox_image.h"
#include "tests/testing/sandbox_harness.h"

namespace stockade::testing {

namespace {

constexpr const char* kImageName = "escape:test";

struct ImportedImage {
    TestImage image;
    std::unique_ptr<TempDir> dir;  // the root file system and the store; removed at exit
};

ImportedImage import_test_image() {
    ImportedImage out;
    const char* wanted = std::getenv("STOCKADE_TEST_IMAGE");  // NOLINT(concurrency-mt-unsafe)
    out.image.wanted = wanted != nullptr && std::string(wanted) == "1";
    if (!out.image.wanted) {
        return out;
    }
    out.dir = std::make_unique<TempDir>("stockade-test-image");
    const std::string rootfs = write_busybox_libc_rootfs(*out.dir, /*host_programs=*/true);
    if (rootfs.empty()) {
        // tests/security/CMakeLists.txt marks the ctest entry skipped on this line.
        out.image.unavailable =
            "STOCKADE_TEST_IMAGE=1, but there is no image to test on: busybox-static (" +
            std::string(kBusybox) +
            "), the host's libc, or one of the host programs the "
            "attacks are written in (python3, curl, bash, nohup, getent) is missing";
        return out;
    }
    out.image.store = out.dir->sub("store");
    RunConfig config;
    config.env.push_back("STOCKADE_IMAGE_STORE=" + out.image.store);
    const RunResult imported =
        run_stockade({"image", "import", rootfs, "--name", kImageName}, config);
    if (imported.exit_code != 0) {
        out.image.error = "stockade image import of the test image failed: " + imported.describe();
        return out;
    }
    out.image.name = kImageName;
    return out;
}

}  // namespace

const TestImage& test_image() {
    static const ImportedImage imported = import_test_image();
    return imported.image;
}

std::vector<std::string> test_image_flags() {
    const TestImage& image = test_image();
    if (!image.ready()) {
        return {};
    }
    return {"--image", image.name};
}

std::vector<std::string> test_image_env() {
    const TestImage& image = test_image();
    if (!image.ready()) {
        return {};
    }
    return {"STOCKADE_IMAGE_STORE=" + image.store};
}

}  // namespace stockade::testing
