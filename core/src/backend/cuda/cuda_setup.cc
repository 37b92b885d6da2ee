// backend/cuda/cuda_setup.cc — the CUDA backend's process-wide parts (cuda_backend.h): whether
// this process sees a GPU, the hardware queues its streams need, the CUDA versions of the
// built-in kernels in a registry, and the list of GPUs to serve (cuda_util.h).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_util.h"
#include "common/log.h"

namespace paam {

// The runtime reports a machine without an NVIDIA driver as cudaErrorInsufficientDriver ("CUDA
// driver version is insufficient"), which reads like an upgrade would help: say first that no
// GPU was found, then CUDA's own words.
int CudaDeviceCount(std::string* why) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (why != nullptr) {
      std::string detail = cudaGetErrorString(e);
      if (e == cudaErrorInsufficientDriver) {
        int runtime = 0;
        cudaRuntimeGetVersion(&runtime);
        detail = "no NVIDIA driver is loaded, or it is older than this CUDA runtime (" +
                 std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10) + ") needs";
      }
      *why = "no CUDA GPU found (" + std::string(cudaGetErrorName(e)) + ": " + detail + ")";
    }
    return 0;
  }
  if (n == 0 && why != nullptr) *why = "no CUDA GPU found (cudaGetDeviceCount: 0 devices)";
  return n;
}

void AttachCudaBuiltins(KernelRegistry* registry) {
  size_t count = 0;
  const cuda::CudaBuiltin* table = cuda::CudaBuiltins(&count);
  for (size_t i = 0; i < count; ++i) {
    if (KernelEntry* k = registry->FindMutable(table[i].name)) k->run_cuda = table[i].run_cuda;
  }
}

// The server's streams must each get a hardware queue of their own (declared in the header). CUDA maps a context's
// streams onto CUDA_DEVICE_MAX_CONNECTIONS hardware work queues (8 by default); two streams on
// one queue run in FIFO order whatever their priorities, so a critical bucket's request can sit
// behind a best-effort kernel that is itself waiting for the higher buckets. Measured on an
// H100 (case study 1): with the default, the top bucket's requests
// waited up to 522 ms between dequeue and kernel start; with 32, at most 2.6 ms. The variable is
// read when the context is created, so it is set before the first CUDA call, and only in paamd
// (a direct-mode client's process is the user's to configure).
void ReserveCudaHardwareQueues() {
  constexpr int kWanted = 32;  // the most CUDA allows
  const char* set = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  if (set == nullptr) {
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", std::to_string(kWanted).c_str(), 0);
  } else if (std::atoi(set) < kWanted) {
    Log("warning: CUDA_DEVICE_MAX_CONNECTIONS=%s: bucket streams may share hardware queues, and a "
        "critical request then waits behind best-effort kernels (unset it to let paamd use %d)",
        set, kWanted);
  }
}

Result<std::vector<int>> ParseCudaDevices(const std::string& text, int count) {
  std::vector<int> out;
  if (text.empty()) {
    for (int i = 0; i < count; ++i) out.push_back(i);
    return out;
  }
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(pos, comma - pos);
    char* end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || end == nullptr || *end != '\0' || v < 0 || v >= count) {
      return Status(Errc::kInvalidArgument, "cuda: device '" + item + "' in cuda_devices '" + text +
                                                "' is not one of the " + std::to_string(count) +
                                                " visible GPUs");
    }
    if (std::find(out.begin(), out.end(), static_cast<int>(v)) != out.end()) {
      return Status(Errc::kInvalidArgument, "cuda: device " + item + " named twice in '" + text + "'");
    }
    out.push_back(static_cast<int>(v));
    pos = comma + 1;
  }
  return out;
}

}  // namespace paam
