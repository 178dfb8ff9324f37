// Root file systems the image tests import, as gzip'd tars: Debian's busybox-static and a few
// of its applets (no libc, nothing of ours, so a sandbox on it depends on nothing of the host's
// /usr); and the same with every applet and the host's libc and dynamic loader, on which a
// dynamically linked test program (the escape probe) runs.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <set>
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

// The host programs the escape suites write their attempts in — python3 (with its standard
// library, less its tests, GUI and bundled wheels), curl, bash, nohup, getent — and every
// library the host's loader resolves for them and for python's extension modules, at their
// Debian paths, as entries of an image. Busybox applets of the same names give way to them.
// Empty when one of the programs is missing.
inline std::vector<images::Entry> host_program_entries() {
    namespace fs = std::filesystem;
    const std::vector<std::string> programs = {"/usr/bin/python3.11", "/usr/bin/curl",
                                               "/usr/bin/bash", "/usr/bin/nohup",
                                               "/usr/bin/getent"};
    const fs::path stdlib = "/usr/lib/python3.11";
    for (const std::string& program : programs) {
        if (::access(program.c_str(), X_OK) != 0) {
            return {};
        }
    }
    std::vector<images::Entry> entries;
    std::set<std::string> added;  // paths in the image, without the leading '/'
    auto add_file = [&](const std::string& host, const std::string& in_image) {
        struct stat st {};
        if (added.contains(in_image) || ::stat(host.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
            return;
        }
        auto bytes = read_file_text(host);
        if (!bytes) {
            return;
        }
        added.insert(in_image);
        entries.push_back(images::file(in_image, std::move(*bytes), st.st_mode & 0755));
    };
    std::vector<std::string> linked = programs;
    for (const std::string& program : programs) {
        add_file(program, program.substr(1));
    }
    entries.push_back(images::link("usr/bin/python3", "python3.11"));
    added.insert("usr/bin/python3");
    // The standard library: directories, files, and links that lead to a file it has.
    const std::set<std::string> skipped = {"__pycache__", "test",          "tests",
                                           "idlelib",     "tkinter",       "turtledemo",
                                           "ensurepip",   "site-packages", "dist-packages"};
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(stdlib, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        const fs::path& path = it->path();
        const std::string in_image = path.string().substr(1);
        if (it->is_symlink()) {
            if (fs::is_regular_file(path)) {
                add_file(fs::canonical(path).string(), in_image);
            }
        } else if (it->is_directory()) {
            if (skipped.contains(path.filename().string())) {
                it.disable_recursion_pending();
            } else {
                entries.push_back(images::dir(in_image));
            }
        } else if (it->is_regular_file()) {
            if (path.extension() == ".so") {
                linked.push_back(path.string());
            }
            add_file(path.string(), in_image);
        }
    }
    // Their libraries, where the loader finds them ("NAME => PATH (ADDRESS)"); /lib is
    // /usr/lib in this image, as on Debian 12.
    for (const std::string& file : linked) {
        const RunResult ldd = run_process({"/usr/bin/ldd", file});
        size_t at = 0;
        while ((at = ldd.out.find("=> /", at)) != std::string::npos) {
            const size_t end = ldd.out.find(' ', at + 3);
            const std::string library = ldd.out.substr(at + 3, end - at - 3);
            at = end;
            const std::string in_image =
                library.starts_with("/usr/") ? library.substr(1) : "usr" + library;
            add_file(library, in_image);
        }
    }
    return entries;
}

// Writes DIR/busybox-libc.tar.gz: busybox-static with all its applets in /usr/bin (and /bin,
// /sbin as links to it), glibc's libc.so.6 and loader from the host at their Debian paths;
// with `host_programs`, DIR/busybox-host.tar, which adds host_program_entries(). Its path, or
// "" when busybox-static, the loader or a host program is missing.
inline std::string write_busybox_libc_rootfs(const TempDir& dir, bool host_programs = false) {
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
    std::set<std::string> taken;
    if (host_programs) {
        std::vector<images::Entry> more = host_program_entries();
        if (more.empty()) {
            return {};
        }
        for (images::Entry& entry : more) {
            if (entry.path == "usr/lib/x86_64-linux-gnu/libc.so.6") {
                continue;  // the image has it already
            }
            taken.insert(entry.path);
            entries.push_back(std::move(entry));
        }
    }
    const RunResult list = run_process({kBusybox, "--list"});
    size_t start = 0;
    while (start < list.out.size()) {
        const size_t end = list.out.find('\n', start);
        const std::string applet = list.out.substr(start, end - start);
        if (!applet.empty() && applet != "busybox" && !taken.contains("usr/bin/" + applet)) {
            entries.push_back(images::link("usr/bin/" + applet, "busybox"));
        }
        start = end == std::string::npos ? list.out.size() : end + 1;
    }
    // The larger image is left uncompressed: gzip would cost each suite seconds.
    return host_programs
               ? dir.write_file("busybox-host.tar",
                                images::make_tar(images::owned_by_root(std::move(entries))))
               : dir.write_file("busybox-libc.tar.gz",
                                images::make_tar(images::owned_by_root(std::move(entries)),
                                                 images::Compression::kGzip));
}

}  // namespace stockade::testing
