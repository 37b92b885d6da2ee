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
  if (text == "spin" || text == "poll" || text == "block") {
    w.kind = std::string(text);
    return w;
  }
  if (text == "nap") {
    w.kind = "nap";
    w.nap_us = CudaWait::kDefaultNapUs;
    return w;
  }
  if (text.substr(0, 4) == "nap:") {
    const std::string_view us = text.substr(4);
    int v = 0;
    const auto [end, ec] = std::from_chars(us.data(), us.data() + us.size(), v);
    if (ec == std::errc() && end == us.data() + us.size() && v >= 1 && v <= 10000) {
      w.kind = "nap";
      w.nap_us = v;
      return w;
    }
  }
  return Status(Errc::kInvalidArgument, "the CUDA wait must be spin, poll, block, nap or nap:US "
                                        "(US = 1..10000 microseconds), got '" + std::string(text) + "'");
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
