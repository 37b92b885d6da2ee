// backend/cuda/cuda_util.h — small helpers of the CUDA backend's files: CUDA errors as Status,
// the current device restored at scope exit, and the --cuda-devices list.
//
// Thread safety: DeviceGuard changes the calling thread's current device only.
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <string_view>
#include <vector>

#include "paam/status.h"

namespace paam {

inline std::string CudaText(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")";
}

inline Status CudaFail(Errc code, std::string_view what, cudaError_t e) {
  return Status(code, "cuda: " + std::string(what) + ": " + CudaText(e));
}

// Restores the calling thread's current device when it goes out of scope.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    if (cudaGetDevice(&saved_) != cudaSuccess) saved_ = -1;
    if (saved_ != device) cudaSetDevice(device);
  }
  ~DeviceGuard() {
    int now = -1;
    if (saved_ >= 0 && cudaGetDevice(&now) == cudaSuccess && now != saved_) cudaSetDevice(saved_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int saved_ = -1;
};

// Parses "0,1" into device ordinals of `count` visible GPUs. Empty → all of them. An unknown or
// repeated ordinal is kInvalidArgument, naming it. Defined in cuda_setup.cc.
Result<std::vector<int>> ParseCudaDevices(const std::string& text, int count);

}  // namespace paam
