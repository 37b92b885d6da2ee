// common/log.h — minimal logging to stderr for the daemon's non-real-time threads.
// Never called on the request hot path.
#pragma once

#include <cstdarg>
#include <cstdio>

namespace paam {

inline bool& LogVerbose() {
  static bool verbose = false;
  return verbose;
}

__attribute__((format(printf, 1, 2))) inline void Log(const char* fmt, ...) {
  std::va_list ap;
  va_start(ap, fmt);
  std::fprintf(stderr, "paamd: ");
  std::vfprintf(stderr, fmt, ap);
  std::fprintf(stderr, "\n");
  va_end(ap);
}

#define PAAM_VLOG(...)                  \
  do {                                  \
    if (::paam::LogVerbose()) ::paam::Log(__VA_ARGS__); \
  } while (0)

}  // namespace paam
