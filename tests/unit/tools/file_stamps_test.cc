#include "tools/file_stamps.h"

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/crypto.h"
#include "tools/file_locks.h"

namespace stockade::tools {
namespace {

TEST(Sha256Test, KnownVectors) {
    EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(sha256_hex("abc"),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(FileStampsTest, UnreadCleanAndExternallyModified) {
    FileStamps stamps;
    EXPECT_EQ(stamps.check("/p/a", "x"), Freshness::kUnread);
    const FileStamp s = stamps.stamp("/p/a", "hello", 42);
    EXPECT_EQ(s.size, 5U);
    EXPECT_EQ(s.mtime_ns, 42);
    EXPECT_EQ(s.sha256, sha256_hex("hello"));
    EXPECT_EQ(stamps.get("/p/a"), s);
    EXPECT_EQ(stamps.check("/p/a", "hello"), Freshness::kClean);
    EXPECT_EQ(stamps.check("/p/a", "hellO"), Freshness::kExternallyModified);
    EXPECT_EQ(stamps.check("/p/a", "hello!"), Freshness::kExternallyModified);
    stamps.forget("/p/a");
    EXPECT_EQ(stamps.check("/p/a", "hello"), Freshness::kUnread);
}

TEST(FileStampsTest, RestoreRebuildsTheRegistryOnResume) {
    FileStamps before;
    const FileStamp s = before.stamp("/p/a", "content", 7);
    FileStamps resumed;
    resumed.restore("/p/a", s);
    EXPECT_EQ(resumed.check("/p/a", "content"), Freshness::kClean);
    EXPECT_EQ(resumed.check("/p/a", "changed"), Freshness::kExternallyModified);
}

TEST(FileStampsTest, ConcurrentStampsAndChecks) {
    FileStamps stamps;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&stamps, t] {
            for (int i = 0; i < 200; ++i) {
                const std::string path = "/p/" + std::to_string((t + i) % 8);
                stamps.stamp(path, path, i);
                (void)stamps.check(path, path);
            }
        });
    }
    for (auto& th : threads) {
        th.join();
    }
    for (int i = 0; i < 8; ++i) {
        const std::string path = "/p/" + std::to_string(i);
        EXPECT_EQ(stamps.check(path, path), Freshness::kClean);
    }
}

TEST(FileLocksTest, OnePathIsSerialisedAndEntriesAreDropped) {
    FileLocks locks;
    std::atomic<int> inside{0};
    std::atomic<int> max_inside{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < 100; ++i) {
                const FileLocks::Guard g = locks.lock("/p/a");
                const int now = ++inside;
                int seen = max_inside.load();
                while (now > seen && !max_inside.compare_exchange_weak(seen, now)) {
                }
                --inside;
            }
        });
    }
    for (auto& th : threads) {
        th.join();
    }
    EXPECT_EQ(max_inside.load(), 1);
    EXPECT_EQ(locks.active(), 0U);
}

TEST(FileLocksTest, DifferentPathsDoNotBlockEachOther) {
    FileLocks locks;
    const FileLocks::Guard a = locks.lock("/p/a");
    std::thread other([&] { const FileLocks::Guard b = locks.lock("/p/b"); });
    other.join();  // would hang if /p/b waited for /p/a
    EXPECT_EQ(locks.active(), 1U);
}

}  // namespace
}  // namespace stockade::tools
