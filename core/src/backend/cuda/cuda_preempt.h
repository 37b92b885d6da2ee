// backend/cuda/cuda_preempt.h — preemption of a GPU's lower buckets (BackendOptions::gpu_preempt,
// paamd --gpu-preempt; docs/gpu.md "Preemption in slices").
//
// CudaPreemptWords holds, for one GPU, one "urgent" word per level in mapped pinned host memory
// (each in its own cache line): the number of requests of more urgent levels running on the GPU
// now. A request's Run counts itself into the words of every less urgent level (Enter/Leave). The
// built-in kernels of a lower level read their level's word from the GPU and stop taking work
// while it is nonzero (cuda_kernels.h, "Preemption"); each lane has its state in device memory
// (the pause word and the ticket counters) and a flag in host memory that says its kernel
// stopped.
//
// PreemptScope is a worker's side for one request: it holds the request back before its first
// launch while more urgent work runs or waits (the server's queue depths), arms the kernels, and
// after a pause waits again before the kernel is taken up where it stopped. RunHostSliced runs a
// plugin kernel that opts in through the kernel ABI (paam_kernel_v2::run_cuda_slice) slice by
// slice, waiting between slices the same way.
//
// Thread safety: Allocate and the destructor run with the GPU current, from one thread; Enter,
// Leave and Urgent from any thread (atomics); a lane's Kernels/Paused from the one worker that
// runs it. A PreemptScope belongs to one worker thread.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "backend/cuda/cuda_kernels.h"
#include "kernels/registry.h"
#include "paam/status.h"

namespace paam {

class CudaPreemptWords {
 public:
  CudaPreemptWords() = default;
  ~CudaPreemptWords();  // REQUIRES: the GPU of Allocate current, its lanes idle
  CudaPreemptWords(const CudaPreemptWords&) = delete;
  CudaPreemptWords& operator=(const CudaPreemptWords&) = delete;

  // `levels` words and `lanes` lanes on the current GPU, all clear.
  Status Allocate(int levels, size_t lanes);
  // A request of `level` starts / ends: the words of the levels below it count it.
  void Enter(int level);
  void Leave(int level);
  // Whether a request of a level more urgent than `level` is running (between Enter and Leave).
  bool Urgent(int level) const;
  // The word of `level` itself (tests and the bench raise it by hand); nullptr when out of range.
  std::atomic<uint64_t>* Word(int level) const;
  // What the kernels of a request on `lane` at `level` look at (cuda::SetCudaPreempt).
  cuda::CudaPreempt Kernels(size_t lane, int level, uint64_t slice_ns, bool resume) const;
  // After the lane's stream work is done: its kernel stopped for more urgent work.
  bool Paused(size_t lane) const;
  // Before a request: no pause left from one that ended while paused (cancelled).
  void ClearPaused(size_t lane);

 private:
  static constexpr size_t kStride = 64;  // one cache line per host word
  std::atomic<uint64_t>* WordAt(size_t i) const;
  void* host_ = nullptr;            // levels words, then lanes paused flags; cudaHostAlloc'ed, mapped
  char* host_on_device_ = nullptr;  // its device address
  void* device_ = nullptr;          // lanes CudaPreemptState, cudaMalloc'ed
  int levels_ = 0;
  size_t lanes_ = 0;
};

// What holds a lower level's request back: a more urgent level with work queued or running.
struct MoreUrgent {
  const CudaPreemptWords* words = nullptr;
  // The server's queue depth of (unit, level), queued and taken (Backend::QueueDepth); unset
  // without a server.
  const std::function<uint32_t(int, int)>* depth = nullptr;
  int unit = 0;
  int level = 0;
  bool Now() const;
  // Waits until Now() is false (true) or until *cancel holds `ticket` (false). Spins for a
  // while, then sleeps in short naps.
  bool WaitGone(const std::atomic<uint64_t>* cancel, uint64_t ticket) const;
};

// One request's preemption on one lane (see the top of this file). Level 0 is never held back
// nor armed; every level counts itself into the words while the scope lives.
class PreemptScope {
 public:
  PreemptScope(const MoreUrgent& urgent, CudaPreemptWords* words, size_t lane, uint64_t slice_ns);
  ~PreemptScope();
  PreemptScope(const PreemptScope&) = delete;
  PreemptScope& operator=(const PreemptScope&) = delete;

  bool Preemptible() const { return urgent_.level > 0; }
  // Before the first launch: false when cancelled while held back.
  bool HoldBack(const std::atomic<uint64_t>* cancel, uint64_t ticket) const;
  // Sets (and Disarm clears) the thread's cuda::CudaPreempt for the entry point called next.
  void Arm(bool resume) const;
  static void Disarm();
  // After the stream work: whether the kernel stopped and must be taken up again.
  bool Paused() const { return Preemptible() && words_->Paused(lane_); }

 private:
  MoreUrgent urgent_;
  CudaPreemptWords* words_;
  size_t lane_;
  uint64_t slice_ns_;
};

// Runs `slices` slices of a kernel with run_cuda_slice on args->stream, one after another, at
// most two enqueued at once (`events`: two of the lane's). Before each slice, while
// `urgent.Now()`, it lets the enqueued slices finish and waits (MoreUrgent::WaitGone). Returns
// the kernel's code; PAAM_KERNEL_EFAILED with "cancelled" in err when cancelled while waiting
// (*cancelled set), or with the CUDA error when an event failed.
int RunHostSliced(const KernelEntry& kernel, const paam_kernel_args* args, uint64_t slices, cudaEvent_t events[2],
                  const MoreUrgent& urgent, const std::atomic<uint64_t>* cancel, uint64_t ticket, bool* cancelled,
                  char* err, size_t err_len);

}  // namespace paam
