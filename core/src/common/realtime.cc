#include "common/realtime.h"

#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace paam {

std::string PinThisThread(int cpu) {
  if (cpu < 0) return "";
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  if (rc != 0) return "cannot pin to CPU " + std::to_string(cpu) + ": " + std::strerror(rc);
  return "";
}

std::string KeepThisThreadOff(int cpu) {
  if (cpu < 0) return "";
  cpu_set_t set;
  if (pthread_getaffinity_np(pthread_self(), sizeof(set), &set) != 0) return "";
  CPU_CLR(cpu, &set);
  if (CPU_COUNT(&set) == 0) return "";  // the device core is the only one: share it
  int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  if (rc != 0) return "cannot keep off CPU " + std::to_string(cpu) + ": " + std::strerror(rc);
  return "";
}

std::string SetThisThreadFifo(int priority) {
  sched_param param{};
  param.sched_priority = priority;
  int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &param);
  if (rc != 0) {
    return "SCHED_FIFO priority " + std::to_string(priority) + " denied (" + std::strerror(rc) +
           "); running with normal scheduling";
  }
  return "";
}

std::string SetThisThreadNice(int nice_value) {
  pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(tid), nice_value) != 0) {
    return "nice " + std::to_string(nice_value) + " denied (" + std::strerror(errno) + ")";
  }
  return "";
}

int OnlineCpus() {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

std::string RtThrottlingNote(const char* runtime_path, const char* period_path) {
  long long runtime = 0, period = 0;
  std::ifstream r(runtime_path), p(period_path);
  if (!(r >> runtime) || runtime < 0) return "";
  if (!(p >> period) || period <= 0) return "";
  return "the kernel throttles SCHED_FIFO threads (kernel.sched_rt_runtime_us = " + std::to_string(runtime) +
         " of every " + std::to_string(period) +
         " us): a core they keep that busy is taken from them for the rest of the period, whatever their "
         "priority; `sysctl -w kernel.sched_rt_runtime_us=-1` lifts it (README: \"What the guarantees assume\")";
}

// Whether the process holds CAP_IPC_LOCK (root normally does), which lifts RLIMIT_MEMLOCK:
// bit 14 of CapEff in /proc/self/status.
static bool MayLockWithoutLimit() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("CapEff:", 0) == 0) {
      constexpr int kCapIpcLock = 14;
      return ((std::strtoull(line.c_str() + 7, nullptr, 16) >> kCapIpcLock) & 1) != 0;
    }
  }
  return false;
}

std::string LockMemory(bool* locked) {
  if (locked != nullptr) *locked = false;
  const bool kept = mallopt(M_TRIM_THRESHOLD, -1) == 1 && mallopt(M_MMAP_MAX, 0) == 1;
  const std::string malloc_note = kept ? "malloc keeps freed memory" : "malloc settings not applied";
  rlimit limit{};
  const bool unlimited = getrlimit(RLIMIT_MEMLOCK, &limit) == 0 && limit.rlim_cur == RLIM_INFINITY;
  if (!unlimited && !MayLockWithoutLimit()) {
    return "memory not locked: RLIMIT_MEMLOCK is " + std::to_string(limit.rlim_cur / 1024) +
           " kB (a locked process could not grow past it); `ulimit -l unlimited` or CAP_IPC_LOCK "
           "allows it; " +
           malloc_note;
  }
  if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
    return std::string("mlockall denied (") + std::strerror(errno) + "); " + malloc_note;
  }
  if (locked != nullptr) *locked = true;
  return "memory locked (mlockall, current and future); " + malloc_note;
}

}  // namespace paam
