// The worker binary the supervisor executes in every session's sandbox: the embedded
// stockade-worker, in a sealed memfd made once per process.
#include "runner/session/worker_binary.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/matchers.h"

namespace stockade::runner {
namespace {

using stockade::testing::IsOk;

// The embedded worker, or a skip in builds without one (sanitized, fuzzing).
int embedded_fd() {
    auto binary = worker_binary();
    EXPECT_THAT(binary, IsOk());
    if (!binary) {
        return -1;
    }
    return binary->embedded ? binary->fd : -1;
}

#define SKIP_WITHOUT_EMBEDDED_WORKER(fd)                                          \
    if ((fd) < 0) {                                                               \
        GTEST_SKIP() << "no embedded worker in this build (STOCKADE_SANITIZE or " \
                        "STOCKADE_FUZZ): stockade runs itself as the worker";     \
    }

template <class T>
T read_at(int fd, uint64_t offset) {
    T value{};
    EXPECT_EQ(::pread(fd, &value, sizeof value, static_cast<off_t>(offset)),
              static_cast<ssize_t>(sizeof value))
        << "offset " << offset;
    return value;
}

TEST(WorkerBinaryTest, TheEmbeddedWorkerIsStaticWithNoInterpreterAndNoLibraries) {
    const int fd = embedded_fd();
    SKIP_WITHOUT_EMBEDDED_WORKER(fd);
    const auto header = read_at<Elf64_Ehdr>(fd, 0);
    ASSERT_EQ(std::memcmp(header.e_ident, ELFMAG, SELFMAG), 0);
    ASSERT_EQ(header.e_ident[EI_CLASS], ELFCLASS64);
    EXPECT_EQ(header.e_type, ET_DYN) << "static-pie: position-independent";
    ASSERT_EQ(header.e_phentsize, sizeof(Elf64_Phdr));
    std::vector<std::string> found;
    bool has_dynamic = false;
    for (uint16_t i = 0; i < header.e_phnum; ++i) {
        const auto ph = read_at<Elf64_Phdr>(fd, header.e_phoff + uint64_t{i} * sizeof(Elf64_Phdr));
        if (ph.p_type == PT_INTERP) {
            found.push_back("PT_INTERP");
        }
        if (ph.p_type != PT_DYNAMIC) {
            continue;
        }
        has_dynamic = true;  // a static-pie relocates itself: no loader reads it
        for (uint64_t at = ph.p_offset; at + sizeof(Elf64_Dyn) <= ph.p_offset + ph.p_filesz;
             at += sizeof(Elf64_Dyn)) {
            const auto dyn = read_at<Elf64_Dyn>(fd, at);
            if (dyn.d_tag == DT_NULL) {
                break;
            }
            if (dyn.d_tag == DT_NEEDED) {
                found.push_back("DT_NEEDED");
            }
        }
    }
    EXPECT_TRUE(has_dynamic);
    EXPECT_THAT(found, ::testing::IsEmpty()) << "the worker must need nothing of the sandbox";
}

TEST(WorkerBinaryTest, TheMemfdHoldsTheEmbeddedBytesAndIsSealed) {
    const int fd = embedded_fd();
    SKIP_WITHOUT_EMBEDDED_WORKER(fd);
    const auto elf = embedded_worker_elf();
    ASSERT_FALSE(elf.empty());
    std::vector<std::byte> copy(elf.size() + 1);
    ASSERT_EQ(::pread(fd, copy.data(), copy.size(), 0), static_cast<ssize_t>(elf.size()));
    EXPECT_EQ(std::memcmp(copy.data(), elf.data(), elf.size()), 0);

    EXPECT_EQ(::fcntl(fd, F_GET_SEALS), F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
    const char byte = 'x';
    EXPECT_EQ(::pwrite(fd, &byte, 1, 0), -1);
    EXPECT_EQ(errno, EPERM);
    EXPECT_EQ(::ftruncate(fd, 0), -1);
    EXPECT_EQ(errno, EPERM);
    EXPECT_EQ(::fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE), -1) << "no seal can be undone";
    EXPECT_EQ(errno, EPERM);
    EXPECT_NE(::fcntl(fd, F_GETFD) & FD_CLOEXEC, 0) << "no command inherits it";
}

// ctest runs each test in a process of its own: here the first calls race to create it.
TEST(WorkerBinaryTest, CallsAtOnceCreateOneDescriptorAndLaterCallsReturnIt) {
    constexpr int kThreads = 8;
    std::vector<int> fds(kThreads, -1);
    std::latch go(kThreads);
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
        threads.emplace_back([&, i] {
            go.arrive_and_wait();
            auto binary = worker_binary();
            fds[static_cast<size_t>(i)] = binary ? binary->fd : -1;
        });
    }
    for (std::thread& t : threads) {
        t.join();
    }
    auto later = worker_binary();
    ASSERT_THAT(later, IsOk());
    EXPECT_GE(later->fd, 0);
    EXPECT_THAT(fds, ::testing::Each(later->fd));
    EXPECT_EQ(worker_binary()->fd, later->fd);
    EXPECT_GE(::fcntl(later->fd, F_GETFD), 0) << "open for the rest of the process";
}

}  // namespace
}  // namespace stockade::runner
