// backend/cuda/cuda_cancel.h — the words through which paamd cancels the request running on a
// CUDA lane (Backend::CancelWord, KernelCall::cancel): one per lane of a GPU, each in its own
// cache line of mapped pinned host memory, which the server stores the request's ticket into
// and the built-in kernels read from the GPU; and one word per lane in device memory, through
// which the first block that saw the ticket tells the blocks after it (cuda_kernels.h).
//
// Thread safety: Allocate and the destructor run with the GPU current, from one thread; a
// lane's Kernels/Stopped from the one worker that runs it; Word's atomics from any thread.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "backend/cuda/cuda_kernels.h"
#include "paam/status.h"

namespace paam {

class CudaCancelWords {
 public:
  CudaCancelWords() = default;
  ~CudaCancelWords();  // REQUIRES: the GPU of Allocate current, its lanes idle
  CudaCancelWords(const CudaCancelWords&) = delete;
  CudaCancelWords& operator=(const CudaCancelWords&) = delete;

  // The words of `lanes` lanes on the current GPU, all 0 (no ticket is 0).
  Status Allocate(size_t lanes);
  std::atomic<uint64_t>* Word(size_t lane) const;
  // What the kernels of a request with `ticket` on `lane` look at (cuda::SetCudaCancel).
  cuda::CudaCancel Kernels(size_t lane, uint64_t ticket) const;
  // After the lane's stream work is done: true when the server raised `ticket` and a block of
  // the kernel saw it, i.e. the kernel stopped early (its output is not valid).
  bool Stopped(size_t lane, uint64_t ticket, cudaStream_t stream) const;

 private:
  static constexpr size_t kStride = 64;  // one cache line per host word
  void* host_ = nullptr;                 // cudaHostAlloc'ed, mapped
  char* host_on_device_ = nullptr;       // its device address
  unsigned long long* device_ = nullptr; // cudaMalloc'ed, one word per lane
  size_t lanes_ = 0;
};

}  // namespace paam
