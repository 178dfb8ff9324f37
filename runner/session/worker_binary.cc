#include "runner/session/worker_binary.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <mutex>
#include <string_view>

#include <fmt/format.h>

#include "common/log.h"
#include "common/syscall.h"
#include "common/unique_fd.h"

#if STOCKADE_EMBEDDED_WORKER
// worker_blob.S (generated from worker_blob.S.in): the stripped stockade-worker.
extern "C" const unsigned char stockade_worker_elf[];
extern "C" const unsigned char stockade_worker_elf_end[];
#endif

// Linux 6.3: an executable memfd must say so where vm.memfd_noexec asks (older kernels refuse
// the flag with EINVAL: every memfd of theirs is executable).
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif

namespace stockade::runner {

namespace {

constexpr unsigned int kSeals = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;

std::mutex binary_mutex;
WorkerBinary binary;  // guarded by binary_mutex; fd -1 until a call succeeds

// The embedded bytes were paged in to be copied and are not read again in this process
// (every worker executes the memfd): their pages leave its RSS. They are read-only pages of
// the stockade binary's file, so a later read would only fault them in again. Only whole
// pages inside the bytes: the rest of the section may be in use.
void release_pages(std::span<const std::byte> bytes) noexcept {
    const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto at = reinterpret_cast<uintptr_t>(bytes.data());
    const uintptr_t begin = (at + page - 1) & ~(page - 1);
    const uintptr_t end = (at + bytes.size()) & ~(page - 1);
    if (end > begin) {
        void* first = const_cast<std::byte*>(bytes.data() + (begin - at));
        (void)::madvise(first, end - begin, MADV_DONTNEED);
    }
}

Result<WorkerBinary> open_self() {
    ASSIGN_OR_RETURN(UniqueFd self, open_path("/proc/self/exe", O_PATH | O_CLOEXEC));
    return WorkerBinary{.fd = self.release(), .embedded = false};
}

Result<WorkerBinary> create_binary() {
    std::span<const std::byte> elf = embedded_worker_elf();
    if (elf.empty()) {
        return open_self();
    }
    auto memfd = make_sealed_memfd("stockade-worker", elf);
    release_pages(elf);
    if (memfd) {
        return WorkerBinary{.fd = memfd->release(), .embedded = true};
    }
    if (memfd.error().sys_errno != EACCES) {
        return std::move(memfd).error().wrap("load the session worker");
    }
    SPDLOG_LOGGER_WARN(log::get("runner"),
                       "executable memfds are refused here (sysctl vm.memfd_noexec=2): session "
                       "workers run as stockade itself and need the host's dynamic loader and "
                       "libraries in their image; {}",
                       memfd.error().message);
    return open_self();
}

}  // namespace

Result<UniqueFd> make_sealed_memfd(const char* name, std::span<const std::byte> bytes) {
    UniqueFd fd(::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC));
    if (fd.get() < 0 && errno == EINVAL) {
        fd.reset(::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING));
    }
    if (fd.get() < 0) {
        return errno_error(fmt::format("memfd_create \"{}\"", name), errno);
    }
    RETURN_IF_ERROR(write_all(
        fd.get(), std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size())));
    if (::fcntl(fd.get(), F_ADD_SEALS, kSeals) != 0) {
        return errno_error(fmt::format("seal the memfd \"{}\"", name), errno);
    }
    return fd;
}

std::span<const std::byte> embedded_worker_elf() noexcept {
#if STOCKADE_EMBEDDED_WORKER
    return std::as_bytes(std::span(
        stockade_worker_elf, static_cast<size_t>(stockade_worker_elf_end - stockade_worker_elf)));
#else
    return {};
#endif
}

Result<WorkerBinary> worker_binary() {
    std::lock_guard lock(binary_mutex);
    if (binary.fd < 0) {
        ASSIGN_OR_RETURN(binary, create_binary());
    }
    return binary;
}

}  // namespace stockade::runner
