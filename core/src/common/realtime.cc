#include "common/realtime.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

}  // namespace paam
