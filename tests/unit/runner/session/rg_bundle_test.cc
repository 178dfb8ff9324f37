// The pure pieces of the ripgrep carried into sandboxes on a stored image: which loader an
// executable names, and which libraries the loader says it needs.
#include "runner/session/rg_bundle.h"

#include <elf.h>

#include <cstring>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade::runner {
namespace {

using stockade::testing::HasErrc;
using stockade::testing::IsOk;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A minimal ELF executable: a header, `phdrs` program headers right after it, and `tail`.
std::vector<std::byte> make_elf(const std::vector<Elf64_Phdr>& phdrs, const std::string& tail) {
    Elf64_Ehdr header{};
    std::memcpy(header.e_ident, ELFMAG, SELFMAG);
    header.e_ident[EI_CLASS] = ELFCLASS64;
    header.e_ident[EI_DATA] = ELFDATA2LSB;
    header.e_type = ET_DYN;
    header.e_phoff = sizeof header;
    header.e_phentsize = sizeof(Elf64_Phdr);
    header.e_phnum = static_cast<Elf64_Half>(phdrs.size());
    std::vector<std::byte> bytes(sizeof header + phdrs.size() * sizeof(Elf64_Phdr) + tail.size());
    std::memcpy(bytes.data(), &header, sizeof header);
    for (size_t i = 0; i < phdrs.size(); ++i) {
        std::memcpy(bytes.data() + sizeof header + i * sizeof(Elf64_Phdr), &phdrs[i],
                    sizeof(Elf64_Phdr));
    }
    std::memcpy(bytes.data() + bytes.size() - tail.size(), tail.data(), tail.size());
    return bytes;
}

Elf64_Phdr interp_at(uint64_t offset, uint64_t size) {
    Elf64_Phdr ph{};
    ph.p_type = PT_INTERP;
    ph.p_offset = offset;
    ph.p_filesz = size;
    return ph;
}

constexpr uint64_t kTailAt = sizeof(Elf64_Ehdr) + 2 * sizeof(Elf64_Phdr);

TEST(ElfInterpreterTest, NamesTheLoaderOfADynamicExecutable) {
    const std::string loader("/lib64/ld-linux-x86-64.so.2\0", 28);
    Elf64_Phdr load{};
    load.p_type = PT_LOAD;
    const auto elf = make_elf({load, interp_at(kTailAt, loader.size())}, loader);
    auto found = elf_interpreter(elf);
    ASSERT_THAT(found, IsOk());
    EXPECT_EQ(*found, "/lib64/ld-linux-x86-64.so.2");
}

TEST(ElfInterpreterTest, AStaticExecutableHasNone) {
    Elf64_Phdr load{};
    load.p_type = PT_LOAD;
    auto found = elf_interpreter(make_elf({load, load}, ""));
    ASSERT_THAT(found, IsOk());
    EXPECT_THAT(*found, IsEmpty());
}

TEST(ElfInterpreterTest, RefusesWhatIsNotAnElfOrPointsOutsideIt) {
    const std::string text = "#!/bin/sh\necho not an elf\n";
    EXPECT_THAT(elf_interpreter(std::as_bytes(std::span(text))), HasErrc(Errc::kInvalidArgument));
    EXPECT_THAT(elf_interpreter({}), HasErrc(Errc::kInvalidArgument));
    const std::string loader("/lib/ld.so\0", 11);
    // The interpreter's bytes run past the end of the file.
    EXPECT_THAT(elf_interpreter(make_elf({interp_at(kTailAt - sizeof(Elf64_Phdr), 4096),
                                          interp_at(kTailAt, loader.size())},
                                         loader)),
                HasErrc(Errc::kInvalidArgument));
    // Not NUL-terminated, or a relative path.
    EXPECT_THAT(elf_interpreter(make_elf({interp_at(kTailAt, 10), interp_at(kTailAt, 10)}, loader)),
                HasErrc(Errc::kInvalidArgument));
    const std::string relative("ld.so\0", 6);
    EXPECT_THAT(elf_interpreter(make_elf({interp_at(kTailAt, 6), interp_at(kTailAt, 6)}, relative)),
                HasErrc(Errc::kInvalidArgument));
    // Program headers past the end of the file.
    auto truncated = make_elf({interp_at(kTailAt, 11), interp_at(kTailAt, 11)}, loader);
    truncated.resize(sizeof(Elf64_Ehdr) + 10);
    EXPECT_THAT(elf_interpreter(truncated), HasErrc(Errc::kInvalidArgument));
}

TEST(ParseLoaderListTest, TakesEachResolvedLibraryInOrder) {
    // Debian 12's ld.so --list /usr/bin/rg.
    const std::string out =
        "\tlinux-vdso.so.1 (0x00007ffd8a1f2000)\n"
        "\tlibpcre2-8.so.0 => /lib/x86_64-linux-gnu/libpcre2-8.so.0 (0x00007f6428b66000)\n"
        "\tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x00007f6428b46000)\n"
        "\tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x00007f6428a66000)\n"
        "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f6428884000)\n"
        "\t/lib64/ld-linux-x86-64.so.2 (0x00007f6429088000)\n";
    auto libraries = parse_loader_list(out);
    ASSERT_THAT(libraries, IsOk());
    EXPECT_THAT(
        *libraries,
        ElementsAre("/lib/x86_64-linux-gnu/libpcre2-8.so.0", "/lib/x86_64-linux-gnu/libgcc_s.so.1",
                    "/lib/x86_64-linux-gnu/libm.so.6", "/lib/x86_64-linux-gnu/libc.so.6"));
    auto none = parse_loader_list("\tstatically linked\n");
    ASSERT_THAT(none, IsOk());
    EXPECT_THAT(*none, IsEmpty());
}

TEST(ParseLoaderListTest, RefusesAMissingLibraryOrAPathItCannotRead) {
    auto missing = parse_loader_list("\tlibpcre2-8.so.0 => not found\n");
    EXPECT_THAT(missing, HasErrc(Errc::kUnavailable));
    EXPECT_THAT(missing.error().message, HasSubstr("libpcre2-8.so.0"));
    EXPECT_THAT(parse_loader_list("\tlibc.so.6 => libc.so.6 (0x1)\n"),
                HasErrc(Errc::kInvalidArgument));
    std::string many;
    for (int i = 0; i < 65; ++i) {
        many += "\tlibx.so => /lib/libx.so (0x1)\n";
    }
    EXPECT_THAT(parse_loader_list(many), HasErrc(Errc::kInvalidArgument));
}

}  // namespace
}  // namespace stockade::runner
