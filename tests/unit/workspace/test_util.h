// Helpers for the workspace tests: a temporary directory tree, and raw channel frames.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <string_view>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace stockade::workspace::testing {

// A mkdtemp directory, removed with everything in it (symlinks are not followed).
class TempDir {
public:
    TempDir() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "stockade-ws-XXXXXX").string();
        if (::mkdtemp(tmpl.data()) == nullptr) {
            ADD_FAILURE() << "mkdtemp failed";
        }
        path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    [[nodiscard]] const std::string& path() const { return path_; }
    [[nodiscard]] std::string at(std::string_view rel) const {
        return rel.empty() ? path_ : path_ + "/" + std::string(rel);
    }
    void mkdir(std::string_view rel) const { std::filesystem::create_directories(at(rel)); }
    void write(std::string_view rel, std::string_view content, mode_t mode = 0644) const {
        std::filesystem::create_directories(std::filesystem::path(at(rel)).parent_path());
        {
            std::ofstream out(at(rel), std::ios::binary | std::ios::trunc);
            out << content;
        }
        ::chmod(at(rel).c_str(), mode);
    }
    void symlink(std::string_view rel, const std::string& target) const {
        ASSERT_EQ(::symlink(target.c_str(), at(rel).c_str()), 0) << rel;
    }
    [[nodiscard]] std::string read(std::string_view rel) const {
        std::string out;
        int fd = ::open(at(rel).c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            ADD_FAILURE() << "open " << at(rel);
            return out;
        }
        char buf[4096];
        ssize_t n = 0;
        while ((n = ::read(fd, buf, sizeof buf)) > 0) {
            out.append(buf, static_cast<size_t>(n));
        }
        ::close(fd);
        return out;
    }
    [[nodiscard]] bool exists(std::string_view rel) const {
        struct stat st {};
        return ::lstat(at(rel).c_str(), &st) == 0;
    }
    [[nodiscard]] mode_t mode(std::string_view rel) const {
        struct stat st {};
        ::lstat(at(rel).c_str(), &st);
        return st.st_mode & 07777;
    }

private:
    std::string path_;
};

inline void append_le32(std::string& out, uint32_t v) {
    for (unsigned shift = 0; shift < 32; shift += 8) {
        out.push_back(static_cast<char>((v >> shift) & 0xFFU));
    }
}

// A frame built by hand: total length, header length, header text, payload.
inline std::string raw_frame(std::string_view header, std::string_view payload = {}) {
    std::string out;
    append_le32(out, static_cast<uint32_t>(8 + header.size() + payload.size()));
    append_le32(out, static_cast<uint32_t>(header.size()));
    out += header;
    out += payload;
    return out;
}

inline std::string raw_frame(const nlohmann::json& header, std::string_view payload = {}) {
    return raw_frame(std::string_view(header.dump()), payload);
}

inline std::span<const std::byte> bytes_of(const std::string& s) {
    return std::as_bytes(std::span(s.data(), s.size()));
}

}  // namespace stockade::workspace::testing
