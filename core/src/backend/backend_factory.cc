#include <memory>

#include "backend/backend.h"
#include "backend/cpu_backend.h"
#ifdef PAAM_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace paam {

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
