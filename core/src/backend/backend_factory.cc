#include <charconv>
#include <memory>
#include <string>
#include <system_error>

#include "backend/backend.h"
#include "backend/cpu_backend.h"
#ifdef PAAM_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace paam {

Result<CudaWait> ParseCudaWait(std::string_view text) {
  CudaWait w;
  if (text == "spin") return w;
  if (text == "poll" || text == "block") {
    w.kind = text == "poll" ? CudaWait::Kind::kPoll : CudaWait::Kind::kBlock;
    return w;
  }
  w.kind = CudaWait::Kind::kNap;
  if (text == "nap") {
    w.nap_us = CudaWait::kDefaultNapUs;
    return w;
  }
  if (text.substr(0, 4) == "nap:") {
    const std::string_view us = text.substr(4);
    const auto [end, ec] = std::from_chars(us.data(), us.data() + us.size(), w.nap_us);
    const bool canonical = !us.empty() && us[0] != '0';  // one spelling per value, as paam eval's check
    if (ec == std::errc() && end == us.data() + us.size() && canonical && w.nap_us >= 1 && w.nap_us <= 10000) {
      return w;
    }
  }
  return Status(Errc::kInvalidArgument, "the CUDA wait must be spin, poll, block, nap or nap:US "
                                        "(US = 1..10000 microseconds), got '" + std::string(text) + "'");
}

Result<CudaWait> ResolveCudaWait(const BackendOptions& options, const char* env_wait) {
  if (!options.cuda_wait.empty()) return ParseCudaWait(options.cuda_wait);
  if (env_wait != nullptr) {
    auto wait = ParseCudaWait(env_wait);
    if (!wait.ok()) return Status(wait.status().code(), "PAAM_CUDA_WAIT: " + wait.status().message());
    return wait;
  }
  return ParseCudaWait(options.direct ? "spin" : "nap");
}

Result<std::unique_ptr<Backend>> CreateBackend(const BackendOptions& options, KernelRegistry* registry) {
  (void)registry;
  if (options.kind == "cpu") return std::unique_ptr<Backend>(std::make_unique<CpuBackend>(options, options.direct));
  if (options.kind == "cuda") {
#ifdef PAAM_HAVE_CUDA
    return CreateCudaBackend(options, registry);
#else
    return Status(Errc::kInvalidArgument, "this paam was built without CUDA support (no nvcc at build time)");
#endif
  }
  return Status(Errc::kInvalidArgument, "unknown backend '" + options.kind + "' (valid: cpu, cuda)");
}

}  // namespace paam
