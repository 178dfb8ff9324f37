// Root file systems the image tests import, as gzip'd tars: Debian's busybox-static and a few
// of its applets (no libc, nothing of ours, so a sandbox on it depends on nothing of the host's
// /usr); and the same with every applet and the host's libc and dynamic loader, on which a
// dynamically linked test program (the escape probe) runs.
#pragma once

#include <unistd.h>

#include <string>
#include <vector>

#include "tests/testing/sandbox_harness.h"
#include "tests/unit/images/tar_builder.h"

namespace stockade::testing {

inline constexpr const char* kBusybox = "/bin/busybox";

// Writes DIR/busybox.tar.gz; its path, or "" when busybox-static is not installed.
inline std::string write_busybox_rootfs(const TempDir& dir) {
    if (::access(kBusybox, X_OK) != 0) {
        return {};
    }
    auto bytes = read_file_text(kBusybox);
    std::vector<images::Entry> entries = {
        images::dir("bin"),
        images::dir("etc"),
        images::dir("usr"),
        images::dir("usr/share"),
        images::file("usr/share/marker", "from the image\n"),
        images::file("etc/os-release", "PRETTY_NAME=\"Stockade busybox test\"\n"),
        images::file("bin/busybox", *bytes, 0755)};
    for (const char* applet : {"sh", "cat", "ls", "echo", "id", "touch", "sleep", "stat", "rm"}) {
        entries.push_back(images::link(std::string("bin/") + applet, "busybox"));
    }
    return dir.write_file("busybox.tar.gz", images::make_tar(images::owned_by_root(entries),
                                                             images::Compression::kGzip));
}

// Writes DIR/busybox-libc.tar.gz: busybox-static with all its applets in /usr/bin (and /bin,
// /sbin as links to it), glibc's libc.so.6 and loader from the host at their Debian paths. Its
// path, or "" when busybox-static or the loader is missing.
inline std::string write_busybox_libc_rootfs(const TempDir& dir) {
    const char* kLoader = "/lib64/ld-linux-x86-64.so.2";
    const char* kLibc = "/lib/x86_64-linux-gnu/libc.so.6";
    if (::access(kBusybox, X_OK) != 0 || ::access(kLoader, R_OK) != 0 ||
        ::access(kLibc, R_OK) != 0) {
        return {};
    }
    std::vector<images::Entry> entries = {
        images::dir("etc"),
        images::file("etc/os-release", "PRETTY_NAME=\"Stockade busybox+libc test\"\n"),
        images::dir("usr"),
        images::dir("usr/bin"),
        images::dir("usr/lib"),
        images::dir("usr/lib/x86_64-linux-gnu"),
        images::dir("usr/lib64"),
        images::link("bin", "usr/bin"),
        images::link("sbin", "usr/bin"),
        images::link("lib", "usr/lib"),
        images::link("lib64", "usr/lib64"),
        images::file("usr/bin/busybox", *read_file_text(kBusybox), 0755),
        images::file("usr/lib64/ld-linux-x86-64.so.2", *read_file_text(kLoader), 0755),
        images::file("usr/lib/x86_64-linux-gnu/libc.so.6", *read_file_text(kLibc), 0755)};
    const RunResult list = run_process({kBusybox, "--list"});
    size_t start = 0;
    while (start < list.out.size()) {
        const size_t end = list.out.find('\n', start);
        const std::string applet = list.out.substr(start, end - start);
        if (!applet.empty() && applet != "busybox") {
            entries.push_back(images::link("usr/bin/" + applet, "busybox"));
        }
        start = end == std::string::npos ? list.out.size() : end + 1;
    }
    return dir.write_file("busybox-libc.tar.gz", images::make_tar(images::owned_by_root(entries),
                                                                  images::Compression::kGzip));
}

}  // namespace stockade::testing
