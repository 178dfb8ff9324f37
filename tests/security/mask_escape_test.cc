// Attempts to get past masked and read-only paths (`stockade run --mask / --read-only`, the
// mounts that path deny rules become) from inside the sandbox: unmount or remount them, reach
// the covered file through another name, a file handle, /proc, or a new mount namespace.
// Each attempt is a small python script that prints "ESCAPED <what>" when it gets through;
// every case runs as root and as an unprivileged user under ctest, and again on the test image
// (STOCKADE_TEST_IMAGE=1, tests/testing/test_image.h), which carries the host's python3.
#include <unistd.h>

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/sandbox_harness.h"
#include "tests/testing/test_image.h"

namespace stockade::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The attempts. Each prints one line: "BLOCKED <what>: <errno or detail>" or "ESCAPED <what>".
constexpr const char* kAttempts = R"PY(
import ctypes, ctypes.util, errno, os, sys
libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
SECRET = sys.argv[1]

def report(what, ok, detail=""):
    print(("ESCAPED " if ok else "BLOCKED ") + what + (": " + detail if detail else ""), flush=True)

def err():
    return errno.errorcode.get(ctypes.get_errno(), "?")

def leaked(path):
    try:
        with open(path, "rb") as f:
            return SECRET.encode() in f.read()
    except OSError as e:
        return False

# Unmount or detach the masks and the read-only bind.
for target in (".env", "secrets", ".git/hooks"):
    rc = libc.umount2(target.encode(), 2)  # MNT_DETACH
    report("umount2 " + target, rc == 0 and (leaked(".env") or leaked("secrets/key")), err())
# Remount the read-only bind read-write (MS_REMOUNT | MS_BIND).
rc = libc.mount(None, b".git/hooks", None, 0x20 | 0x1000, None)
report("remount .git/hooks rw", rc == 0, err())
# A new user and mount namespace, where the masks could be taken off.
rc = libc.unshare(0x10000000 | 0x00020000)  # CLONE_NEWUSER | CLONE_NEWNS
report("unshare user+mount namespace", rc == 0, err())
# The covered file through /proc: our own root, pid 1's root, mountinfo's view.
ws = os.getcwd()
for path in ("/proc/self/root" + ws + "/.env", "/proc/1/root" + ws + "/.env",
             "/proc/self/cwd/.env", "/proc/self/cwd/secrets/key"):
    report("read " + path, leaked(path))
# A file handle of the covered inode (open_by_handle_at needs the mount fd of the host fs).
class FileHandle(ctypes.Structure):
    _fields_ = [("handle_bytes", ctypes.c_uint), ("handle_type", ctypes.c_int),
                ("f_handle", ctypes.c_ubyte * 128)]
fh = FileHandle(); fh.handle_bytes = 128
mount_id = ctypes.c_int()
rc = libc.name_to_handle_at(-100, b".", ctypes.byref(fh), ctypes.byref(mount_id), 0)
if rc == 0:
    fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    h = libc.open_by_handle_at(fd, ctypes.byref(fh), 0)
    report("open_by_handle_at", h >= 0, err())
else:
    report("name_to_handle_at", False, err())
# Every name in the workspace: nothing may hold the secret (hard links, copies, caches).
for root, dirs, files in os.walk(ws):
    for name in files:
        if leaked(os.path.join(root, name)):
            report("found the secret in " + os.path.join(root, name), True)
# The block device under the workspace is not in the sandbox's /dev.
for dev in os.listdir("/dev"):
    if dev.startswith(("sd", "vd", "nvme", "xvd", "loop", "dm-")):
        report("block device /dev/" + dev, True)
print("END", flush=True)
)PY";

class MaskEscapeTest : public ::testing::Test {
protected:
    void SetUp() override {
        SKIP_OR_FAIL_WITHOUT_TEST_IMAGE();
        ASSERT_FALSE(stockade_path().empty())
            << "STOCKADE_BIN is not set: run this suite through ctest";
        std::string level = auto_isolation_level();
        if (level != "full" && level != "namespaces") {
            GTEST_SKIP() << "masks need a mount namespace; auto gives \"" << level << "\" here";
        }
        workspace_ = root_.make_dir("workspace");
        secret_ = "hunter2-" + std::to_string(::getpid());
        root_.write_file("workspace/.env", "SECRET=" + secret_ + "\n");
        root_.make_dir("workspace/secrets");
        root_.write_file("workspace/secrets/key", secret_);
        root_.make_dir("workspace/.git");
        root_.make_dir("workspace/.git/hooks");
        script_ = root_.write_file("attempts.py", kAttempts);
    }

    TempDir root_;
    std::string workspace_;
    std::string secret_;
    std::string script_;
};

TEST_F(MaskEscapeTest, NoAttemptGetsPastTheMasks) {
    RunConfig config;
    config.cwd = workspace_;
    config.env = test_image_env();
    std::vector<std::string> args = {"run",     "--workspace", workspace_,  "--ro",
                                     script_,   "--mask",      ".env",      "--mask",
                                     "secrets", "--read-only", ".git/hooks"};
    const std::vector<std::string> image = test_image_flags();
    args.insert(args.end(), image.begin(), image.end());
    args.insert(args.end(), {"--", "python3", script_, secret_});
    RunResult r = run_stockade(args, config);
    ASSERT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("END")) << r.describe();
    EXPECT_THAT(r.out, Not(HasSubstr("ESCAPED"))) << r.describe();
    EXPECT_THAT(r.out, HasSubstr("BLOCKED umount2 .env"));
    EXPECT_THAT(r.out, HasSubstr("BLOCKED unshare"));
    EXPECT_EQ(read_file_text(root_.sub("workspace/.env")), "SECRET=" + secret_ + "\n");
    EXPECT_EQ(read_file_text(root_.sub("workspace/secrets/key")), secret_);
}

}  // namespace
}  // namespace stockade::testing
