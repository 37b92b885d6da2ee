// backend/cuda/cuda_cancel.cc — see cuda_cancel.h.
#include "backend/cuda/cuda_cancel.h"

#include <new>
#include <string>

namespace paam {

CudaCancelWords::~CudaCancelWords() {
  if (host_ != nullptr) cudaFreeHost(host_);
  if (device_ != nullptr) cudaFree(device_);
}

Status CudaCancelWords::Allocate(size_t lanes) {
  auto fail = [](const char* what, cudaError_t e) {
    return Status(Errc::kResourceExhausted, std::string("cuda: cancel words: ") + what + ": " + cudaGetErrorName(e));
  };
  cudaError_t e = cudaHostAlloc(&host_, kStride * lanes, cudaHostAllocMapped | cudaHostAllocPortable);
  if (e != cudaSuccess) return fail("cudaHostAlloc", e);
  for (size_t i = 0; i < lanes; ++i) new (static_cast<char*>(host_) + i * kStride) std::atomic<uint64_t>(0);
  void* dev = nullptr;
  e = cudaHostGetDevicePointer(&dev, host_, 0);
  if (e != cudaSuccess) return fail("cudaHostGetDevicePointer", e);
  host_on_device_ = static_cast<char*>(dev);
  e = cudaMalloc(&device_, sizeof(unsigned long long) * lanes);
  if (e == cudaSuccess) e = cudaMemset(device_, 0, sizeof(unsigned long long) * lanes);
  if (e != cudaSuccess) return fail("device words", e);
  lanes_ = lanes;
  return Status::Ok();
}

std::atomic<uint64_t>* CudaCancelWords::Word(size_t lane) const {
  if (lane >= lanes_) return nullptr;
  return std::launder(reinterpret_cast<std::atomic<uint64_t>*>(static_cast<char*>(host_) + lane * kStride));
}

cuda::CudaCancel CudaCancelWords::Kernels(size_t lane, uint64_t ticket) const {
  if (lane >= lanes_ || ticket == 0) return {};
  static_assert(sizeof(std::atomic<uint64_t>) == sizeof(unsigned long long), "the kernels read the word as is");
  return {reinterpret_cast<const unsigned long long*>(host_on_device_ + lane * kStride), device_ + lane, ticket};
}

bool CudaCancelWords::Stopped(size_t lane, uint64_t ticket, cudaStream_t stream) const {
  if (lane >= lanes_ || ticket == 0 || Word(lane)->load(std::memory_order_acquire) != ticket) return false;
  unsigned long long seen = 0;  // the cancel path only: one small copy
  if (cudaMemcpyAsync(&seen, device_ + lane, sizeof(seen), cudaMemcpyDeviceToHost, stream) != cudaSuccess ||
      cudaStreamSynchronize(stream) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return seen == ticket;
}

}  // namespace paam
