// common/futex.h — process-shared futex wait/wake on a 32-bit word in shared memory.
//
// These are the only system calls on the request hot path. The words live in memfd mappings
// shared between processes, so the non-private futex operations are used.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdint>

namespace paam {

// Sleeps while *word == expected, at most timeout_ns (0 = no timeout).
// Returns 0 when woken (or the value differed), ETIMEDOUT on timeout, EINTR on a signal.
inline int FutexWait(std::atomic<uint32_t>* word, uint32_t expected, uint64_t timeout_ns) noexcept {
  timespec ts{};
  timespec* tsp = nullptr;
  if (timeout_ns > 0) {
    ts.tv_sec = static_cast<time_t>(timeout_ns / 1'000'000'000ull);
    ts.tv_nsec = static_cast<long>(timeout_ns % 1'000'000'000ull);
    tsp = &ts;
  }
  long rc = syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, tsp, nullptr, 0);
  if (rc == 0) return 0;
  if (errno == EAGAIN) return 0;
  return errno;
}

inline void FutexWake(std::atomic<uint32_t>* word, int count = INT_MAX) noexcept {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, count, nullptr, nullptr, 0);
}

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "futex word must be 32 bits");
static_assert(std::atomic<uint32_t>::is_always_lock_free, "futex word must be lock-free");

}  // namespace paam
