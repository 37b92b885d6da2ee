// server/fallback.h — the fallback policy of multi-version kernels (paamd --fallback): when a
// request of a kernel that also has a CPU version runs that version instead of its bucket's
// device. Pure functions of their inputs, so that the decisions are tested on made-up numbers
// (fallback_test.cc); the server feeds them (fallback_worker.cc).
//
// Thread safety: DecideFallback is pure. RunTimeAverage is updated and read from any thread
// without a lock: two updates at once may lose one sample, which only delays the average.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include "paam/status.h"

namespace paam {

enum class FallbackMode {
  kOff,            // every request runs on its bucket's device (the default)
  kCpuOnOverload,  // the CPU version where the device would miss the deadline or is lost
};

// "off" | "cpu-on-overload", or an invalid_argument error that quotes `text`.
Result<FallbackMode> ParseFallbackMode(std::string_view text);

// A recent mean of run times: an exponentially weighted moving average (weight 1/8 for the
// newest sample); 0 until the first sample.
class RunTimeAverage {
 public:
  void Add(uint64_t ns) {
    const uint64_t old = mean_.load(std::memory_order_relaxed);
    const uint64_t x = ns == 0 ? 1 : ns;  // 0 means "no sample yet"
    mean_.store(old == 0 ? x : old - old / 8 + x / 8, std::memory_order_relaxed);
  }
  uint64_t Mean() const { return mean_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> mean_{0};
};

// What the policy knows about one request when it is dispatched (times CLOCK_MONOTONIC ns;
// a mean of 0: no sample yet).
struct FallbackInputs {
  bool has_cpu_version = false;     // the kernel has a CPU version
  bool has_device_version = false;  // the bucket's device can run the kernel
  bool device_data = false;         // the request runs on device buffers (CUDA IPC)
  bool device_lost = false;         // the device failed for good (Backend::Lost)
  uint64_t now_ns = 0;
  uint64_t due_ns = UINT64_MAX;     // the request's absolute deadline (UINT64_MAX: none)
  uint32_t device_ahead = 0;        // requests that would run on the device before it
  uint64_t device_mean_ns = 0;      // the bucket's recent mean device time
  uint64_t own_device_ns = 0;       // this region's recent mean device time (0: use the bucket's)
  uint32_t cpu_ahead = 0;           // requests that would run on the CPU fallback before it
  uint64_t cpu_mean_ns = 0;         // the CPU fallback's recent mean run time
  uint64_t own_cpu_ns = 0;          // this region's recent mean CPU time
};

enum class FallbackWhy {
  kNoCpuVersion,     // device: nothing else can run it
  kDeviceData,       // device: its data lives on the device only
  kDeviceLost,       // cpu: the device is gone
  kNoDeviceVersion,  // cpu: the device cannot run it
  kNoDeadline,       // device: nothing to miss
  kNoDeviceTime,     // device: no device time measured yet, so no evidence of overload
  kDeviceFits,       // device: the queue ahead lets it finish in time
  kCpuFits,          // cpu: the device would miss, the CPU version's recent time fits
  kCpuProbe,         // cpu: the device would miss, the CPU version has no time yet, nothing
                     //      is queued for the CPU: one run measures it
  kNeitherFits,      // device: both would miss; it stays where the analysis covers it
};

struct FallbackDecision {
  bool cpu = false;  // run the CPU version
  FallbackWhy why = FallbackWhy::kNoCpuVersion;
  uint64_t device_estimate_ns = 0;  // when it would finish on the device, from now (0: not estimated)
  uint64_t cpu_estimate_ns = 0;     // when it would finish on the CPU, from now (0: not estimated)
};

// The decision for one request under kCpuOnOverload. The device estimate is (device_ahead + 1)
// runs: the ones ahead at the bucket's mean, this one at its own mean (or the bucket's). The CPU
// estimate likewise: cpu_ahead runs at the fallback's mean, then this one at its own CPU mean.
// A request runs its CPU version when the device is lost, when the device cannot run it, or
// when it would miss its deadline on the device and its CPU estimate meets it.
FallbackDecision DecideFallback(const FallbackInputs& in);

// "cpu fits", "device fits", ...: for messages and tests.
std::string_view FallbackWhyName(FallbackWhy why);

}  // namespace paam
