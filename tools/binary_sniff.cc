#include "tools/binary_sniff.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

#include "tools/text.h"

namespace stockade::tools {
namespace {

struct Magic {
    std::string_view prefix;
    std::string_view kind;
};

constexpr std::array kMagics = {
    Magic{"\x89PNG\r\n\x1a\n", "PNG image"},
    Magic{"\xFF\xD8\xFF", "JPEG image"},
    Magic{"GIF87a", "GIF image"},
    Magic{"GIF89a", "GIF image"},
    Magic{"%PDF-", "PDF document"},
    Magic{"PK\x03\x04", "ZIP archive"},
    Magic{"\x1F\x8B", "gzip archive"},
    Magic{"\x7F"
          "ELF",
          "ELF executable"},
    Magic{std::string_view("\0asm", 4), "WebAssembly module"},
    Magic{"SQLite format 3", "SQLite database"},
    Magic{"BZh", "bzip2 archive"},
    Magic{"\xFD"
          "7zXZ",
          "xz archive"},
    Magic{"7z\xBC\xAF\x27\x1C", "7-Zip archive"},
    Magic{"\x28\xB5\x2F\xFD", "zstd archive"},
    Magic{"wOFF", "WOFF font"},
    Magic{"wOF2", "WOFF2 font"},
    Magic{"\xCA\xFE\xBA\xBE", "Java class file"},
};

constexpr std::array<std::pair<std::string_view, std::string_view>, 52> kExtensions = {{
    {"png", "PNG image"},           {"jpg", "JPEG image"},
    {"jpeg", "JPEG image"},         {"gif", "GIF image"},
    {"bmp", "BMP image"},           {"ico", "icon image"},
    {"webp", "WebP image"},         {"tif", "TIFF image"},
    {"tiff", "TIFF image"},         {"psd", "Photoshop image"},
    {"pdf", "PDF document"},        {"zip", "ZIP archive"},
    {"gz", "gzip archive"},         {"tgz", "gzip archive"},
    {"bz2", "bzip2 archive"},       {"xz", "xz archive"},
    {"zst", "zstd archive"},        {"7z", "7-Zip archive"},
    {"rar", "RAR archive"},         {"tar", "tar archive"},
    {"jar", "Java archive"},        {"war", "Java archive"},
    {"class", "Java class file"},   {"o", "object file"},
    {"a", "static library"},        {"so", "shared library"},
    {"dylib", "shared library"},    {"dll", "Windows library"},
    {"exe", "Windows executable"},  {"bin", "binary data"},
    {"wasm", "WebAssembly module"}, {"pyc", "Python bytecode"},
    {"pyo", "Python bytecode"},     {"woff", "WOFF font"},
    {"woff2", "WOFF2 font"},        {"ttf", "TrueType font"},
    {"otf", "OpenType font"},       {"eot", "font"},
    {"mp3", "MP3 audio"},           {"wav", "WAV audio"},
    {"flac", "FLAC audio"},         {"ogg", "Ogg media"},
    {"mp4", "MP4 video"},           {"mov", "QuickTime video"},
    {"avi", "AVI video"},           {"mkv", "Matroska video"},
    {"webm", "WebM video"},         {"sqlite", "SQLite database"},
    {"db", "database file"},        {"parquet", "Parquet data"},
    {"npy", "NumPy array"},         {"pkl", "Python pickle"},
}};

std::string lower_extension(std::string_view path) {
    const size_t slash = path.rfind('/');
    const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
    const size_t dot = name.rfind('.');
    if (dot == std::string_view::npos || dot == 0) {
        return {};
    }
    std::string ext(name.substr(dot + 1));
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return ext;
}

// Bytes that do not occur in text: controls other than \t \n \r \f \v \b ESC, and bytes that
// are not part of valid UTF-8.
bool mostly_non_text(std::string_view head) {
    if (head.empty()) {
        return false;
    }
    size_t odd = 0;
    for (char c : head) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20U && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v' &&
            c != '\b' && u != 0x1BU) {
            ++odd;
        }
    }
    if (!is_valid_utf8(head)) {
        const std::string clean = sanitize_utf8(head);
        size_t replacements = 0;
        for (size_t pos = clean.find("\xEF\xBF\xBD"); pos != std::string::npos;
             pos = clean.find("\xEF\xBF\xBD", pos + 3)) {
            ++replacements;
        }
        odd += replacements;
    }
    return odd * 10 > head.size() * 3;  // more than 30%
}

}  // namespace

std::optional<std::string> sniff_binary(std::string_view path, std::string_view head) {
    head = head.substr(0, std::min(head.size(), kSniffBytes));
    for (const Magic& m : kMagics) {
        if (head.starts_with(m.prefix)) {
            return std::string(m.kind);
        }
    }
    const std::string ext = lower_extension(path);
    for (const auto& [e, kind] : kExtensions) {
        if (ext == e) {
            return std::string(kind);
        }
    }
    if (head.find('\0') != std::string_view::npos || mostly_non_text(head)) {
        return std::string("binary data");
    }
    return std::nullopt;
}

}  // namespace stockade::tools
