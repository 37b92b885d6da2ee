// server/fallback.cc — see fallback.h.
#include "server/fallback.h"

#include <string>

namespace paam {

Result<FallbackMode> ParseFallbackMode(std::string_view text) {
  if (text == "off") return FallbackMode::kOff;
  if (text == "cpu-on-overload") return FallbackMode::kCpuOnOverload;
  return Status(Errc::kInvalidArgument, "fallback must be 'off' or 'cpu-on-overload', got '" + std::string(text) + "'");
}

namespace {

// a * b + c, saturating (a queue of thousands of long requests must not wrap round).
uint64_t MulAdd(uint64_t a, uint64_t b, uint64_t c) {
  if (b != 0 && a > (UINT64_MAX - c) / b) return UINT64_MAX;
  return a * b + c;
}

bool Meets(uint64_t now, uint64_t estimate, uint64_t due) { return now <= due && estimate <= due - now; }

}  // namespace

FallbackDecision DecideFallback(const FallbackInputs& in) {
  FallbackDecision d;
  auto device = [&d](FallbackWhy why) {
    d.cpu = false;
    d.why = why;
    return d;
  };
  auto cpu = [&d](FallbackWhy why) {
    d.cpu = true;
    d.why = why;
    return d;
  };
  if (!in.has_cpu_version) return device(FallbackWhy::kNoCpuVersion);
  if (in.device_data) return device(FallbackWhy::kDeviceData);
  if (in.device_lost) return cpu(FallbackWhy::kDeviceLost);
  if (!in.has_device_version) return cpu(FallbackWhy::kNoDeviceVersion);
  if (in.due_ns == UINT64_MAX) return device(FallbackWhy::kNoDeadline);
  if (in.device_mean_ns == 0) return device(FallbackWhy::kNoDeviceTime);
  const uint64_t own_device = in.own_device_ns != 0 ? in.own_device_ns : in.device_mean_ns;
  d.device_estimate_ns = MulAdd(in.device_ahead, in.device_mean_ns, own_device);
  if (Meets(in.now_ns, d.device_estimate_ns, in.due_ns)) return device(FallbackWhy::kDeviceFits);
  if (in.own_cpu_ns == 0) {
    // No CPU time known: the only way to learn it is to run it, which is safe to try while
    // nothing waits for the CPU (otherwise the probe could make those requests late).
    if (in.cpu_ahead == 0) return cpu(FallbackWhy::kCpuProbe);
    return device(FallbackWhy::kNeitherFits);
  }
  const uint64_t cpu_mean = in.cpu_mean_ns != 0 ? in.cpu_mean_ns : in.own_cpu_ns;
  d.cpu_estimate_ns = MulAdd(in.cpu_ahead, cpu_mean, in.own_cpu_ns);
  if (Meets(in.now_ns, d.cpu_estimate_ns, in.due_ns)) return cpu(FallbackWhy::kCpuFits);
  return device(FallbackWhy::kNeitherFits);
}

std::string_view FallbackWhyName(FallbackWhy why) {
  switch (why) {
    case FallbackWhy::kNoCpuVersion: return "no cpu version";
    case FallbackWhy::kDeviceData: return "device data";
    case FallbackWhy::kDeviceLost: return "device lost";
    case FallbackWhy::kNoDeviceVersion: return "no device version";
    case FallbackWhy::kNoDeadline: return "no deadline";
    case FallbackWhy::kNoDeviceTime: return "no device time yet";
    case FallbackWhy::kDeviceFits: return "device fits";
    case FallbackWhy::kCpuFits: return "cpu fits";
    case FallbackWhy::kCpuProbe: return "cpu probe";
    case FallbackWhy::kNeitherFits: return "neither fits";
  }
  return "?";
}

}  // namespace paam
