// common/realtime.h — real-time knobs (SCHED_FIFO, CPU affinity, nice), applied when the OS
// permits and reported when not. Nothing here fails hard: callers get a note to print.
#pragma once

#include <string>

namespace paam {

// Pins the calling thread to `cpu` (ignored if cpu < 0). Returns "" or a note saying why not.
std::string PinThisThread(int cpu);
// Lets the calling thread run on every allowed CPU but `cpu` (no-op if cpu < 0 or it is the
// only one). Returns "" or a note.
std::string KeepThisThreadOff(int cpu);
// SCHED_FIFO at `priority` for the calling thread. Returns "" or a note (e.g. EPERM).
std::string SetThisThreadFifo(int priority);
// Sets the calling thread's nice value. Returns "" or a note.
std::string SetThisThreadNice(int nice_value);
// Number of online CPUs.
int OnlineCpus();
// "" when the kernel lets SCHED_FIFO threads run unthrottled (kernel.sched_rt_runtime_us = -1)
// or the setting cannot be read; otherwise a note that it throttles them and how to lift it.
// The paths are the /proc files, replaceable for tests.
std::string RtThrottlingNote(const char* runtime_path = "/proc/sys/kernel/sched_rt_runtime_us",
                             const char* period_path = "/proc/sys/kernel/sched_rt_period_us");
// Keeps the process's memory resident, as real-time programs do once set up: glibc malloc
// keeps what it frees and serves large blocks from the heap (mallopt), and
// mlockall(MCL_CURRENT | MCL_FUTURE) where the process may lock without limit (CAP_IPC_LOCK,
// which root normally holds, or RLIMIT_MEMLOCK unlimited): under a finite limit a locked
// process could not grow past it, so it is not attempted. Returns one line saying what was
// applied; never fails (*locked, if given: whether mlockall took). The same rule as
// paam.ros.rt.lock_memory (Python).
std::string LockMemory(bool* locked = nullptr);

}  // namespace paam
