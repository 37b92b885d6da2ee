// backend/cuda/cuda_preempt.cc — see cuda_preempt.h.
#include "backend/cuda/cuda_preempt.h"

#include <time.h>

#include <cstdio>
#include <cstring>
#include <new>
#include <string>

#include "common/clock.h"

namespace paam {

CudaPreemptWords::~CudaPreemptWords() {
  if (host_ != nullptr) cudaFreeHost(host_);
  if (device_ != nullptr) cudaFree(device_);
}

Status CudaPreemptWords::Allocate(int levels, size_t lanes) {
  auto fail = [](const char* what, cudaError_t e) {
    return Status(Errc::kResourceExhausted, std::string("cuda: preemption words: ") + what + ": " + cudaGetErrorName(e));
  };
  const size_t words = static_cast<size_t>(levels) + lanes;
  cudaError_t e = cudaHostAlloc(&host_, kStride * words, cudaHostAllocMapped | cudaHostAllocPortable);
  if (e != cudaSuccess) return fail("cudaHostAlloc", e);
  std::memset(host_, 0, kStride * words);
  for (size_t i = 0; i < words; ++i) new (static_cast<char*>(host_) + i * kStride) std::atomic<uint64_t>(0);
  void* dev = nullptr;
  e = cudaHostGetDevicePointer(&dev, host_, 0);
  if (e != cudaSuccess) return fail("cudaHostGetDevicePointer", e);
  host_on_device_ = static_cast<char*>(dev);
  e = cudaMalloc(&device_, sizeof(cuda::CudaPreemptState) * lanes);
  if (e == cudaSuccess) e = cudaMemset(device_, 0, sizeof(cuda::CudaPreemptState) * lanes);
  if (e != cudaSuccess) return fail("lane state", e);
  levels_ = levels;
  lanes_ = lanes;
  return Status::Ok();
}

std::atomic<uint64_t>* CudaPreemptWords::WordAt(size_t i) const {
  return std::launder(reinterpret_cast<std::atomic<uint64_t>*>(static_cast<char*>(host_) + i * kStride));
}

std::atomic<uint64_t>* CudaPreemptWords::Word(int level) const {
  return level >= 0 && level < levels_ ? WordAt(static_cast<size_t>(level)) : nullptr;
}

void CudaPreemptWords::Enter(int level) {
  for (int l = level + 1; l < levels_; ++l) WordAt(static_cast<size_t>(l))->fetch_add(1, std::memory_order_seq_cst);
}

void CudaPreemptWords::Leave(int level) {
  for (int l = level + 1; l < levels_; ++l) WordAt(static_cast<size_t>(l))->fetch_sub(1, std::memory_order_seq_cst);
}

bool CudaPreemptWords::Urgent(int level) const {
  return level > 0 && level < levels_ && WordAt(static_cast<size_t>(level))->load(std::memory_order_acquire) != 0;
}

cuda::CudaPreempt CudaPreemptWords::Kernels(size_t lane, int level, uint64_t slice_ns, bool resume) const {
  if (lane >= lanes_ || level <= 0 || level >= levels_) return {};
  static_assert(sizeof(std::atomic<uint64_t>) == sizeof(unsigned long long), "the kernels read the word as is");
  const size_t flag = static_cast<size_t>(levels_) + lane;
  cuda::CudaPreempt p;
  p.urgent = reinterpret_cast<const unsigned long long*>(host_on_device_ + static_cast<size_t>(level) * kStride);
  p.state = static_cast<cuda::CudaPreemptState*>(device_) + lane;
  p.paused_host = reinterpret_cast<unsigned int*>(static_cast<char*>(host_) + flag * kStride);
  p.paused_device = reinterpret_cast<unsigned int*>(host_on_device_ + flag * kStride);
  p.slice_ns = slice_ns;
  p.resume = resume;
  return p;
}

bool CudaPreemptWords::Paused(size_t lane) const {
  if (lane >= lanes_) return false;
  // SYNC POINT: the kernel's system-scope store came before the end of the stream work that
  // the caller saw complete.
  const auto* flag = reinterpret_cast<volatile unsigned int*>(static_cast<char*>(host_) +
                                                              (static_cast<size_t>(levels_) + lane) * kStride);
  return *flag != 0;
}

void CudaPreemptWords::ClearPaused(size_t lane) {
  if (lane >= lanes_) return;
  *reinterpret_cast<volatile unsigned int*>(static_cast<char*>(host_) + (static_cast<size_t>(levels_) + lane) * kStride) = 0;
}

bool MoreUrgent::Now() const {
  if (words != nullptr && words->Urgent(level)) return true;
  if (depth != nullptr && *depth) {
    for (int l = 0; l < level; ++l) {
      if ((*depth)(unit, l) > 0) return true;
    }
  }
  return false;
}

bool MoreUrgent::WaitGone(const std::atomic<uint64_t>* cancel, uint64_t ticket) const {
  // Spin about 20 us (a more urgent kernel often is that short), then nap 10 us at a time.
  const uint64_t spin_until = NowNs() + 20'000;
  const timespec nap{0, 10'000};
  for (;;) {
    if (cancel != nullptr && ticket != 0 && cancel->load(std::memory_order_acquire) == ticket) return false;
    if (!Now()) return true;
    if (NowNs() < spin_until) {
      CpuRelax();
    } else {
      nanosleep(&nap, nullptr);
    }
  }
}

PreemptScope::PreemptScope(const MoreUrgent& urgent, CudaPreemptWords* words, size_t lane, uint64_t slice_ns)
    : urgent_(urgent), words_(words), lane_(lane), slice_ns_(slice_ns) {
  words_->Enter(urgent_.level);
  if (Preemptible()) words_->ClearPaused(lane_);  // a kernel that is not a built-in never sets it
}

PreemptScope::~PreemptScope() { words_->Leave(urgent_.level); }

bool PreemptScope::HoldBack(const std::atomic<uint64_t>* cancel, uint64_t ticket) const {
  return !Preemptible() || urgent_.WaitGone(cancel, ticket);
}

void PreemptScope::Arm(bool resume) const {
  if (Preemptible()) cuda::SetCudaPreempt(words_->Kernels(lane_, urgent_.level, slice_ns_, resume));
}

void PreemptScope::Disarm() { cuda::SetCudaPreempt({}); }

namespace {

// Waits for `ev` (recorded after a slice), polling: spin, then short naps.
cudaError_t WaitEvent(cudaEvent_t ev) {
  const uint64_t spin_until = NowNs() + 20'000;
  const timespec nap{0, 10'000};
  cudaError_t e;
  while ((e = cudaEventQuery(ev)) == cudaErrorNotReady) {
    if (NowNs() < spin_until) {
      CpuRelax();
    } else {
      nanosleep(&nap, nullptr);
    }
  }
  return e;
}

}  // namespace

int RunHostSliced(const KernelEntry& kernel, const paam_kernel_args* args, uint64_t slices, cudaEvent_t events[2],
                  const MoreUrgent& urgent, const std::atomic<uint64_t>* cancel, uint64_t ticket, bool* cancelled,
                  char* err, size_t err_len) {
  auto stream = static_cast<cudaStream_t>(args->stream);
  auto failed = [&](cudaError_t e) {
    std::snprintf(err, err_len, "cuda: slices of '%s': %s", kernel.name.c_str(), cudaGetErrorName(e));
    return PAAM_KERNEL_EFAILED;
  };
  for (uint64_t i = 0; i < slices; ++i) {
    if (i > 0 && urgent.Now()) {
      // Let what is enqueued finish, so that the GPU is the more urgent work's, then wait.
      if (cudaError_t e = WaitEvent(events[(i - 1) % 2]); e != cudaSuccess) return failed(e);
      if (!urgent.WaitGone(cancel, ticket)) {
        *cancelled = true;
        std::snprintf(err, err_len, "cuda: kernel '%s' was cancelled between two slices", kernel.name.c_str());
        return PAAM_KERNEL_EFAILED;
      }
    } else if (i >= 2) {
      // At most two slices enqueued: the next one waits for the one before the last.
      if (cudaError_t e = WaitEvent(events[i % 2]); e != cudaSuccess) return failed(e);
    }
    const int rc = kernel.RunCudaSlice(args, i, i + 1, err, err_len);
    if (rc != PAAM_KERNEL_OK) return rc;
    if (cudaError_t e = cudaEventRecord(events[i % 2], stream); e != cudaSuccess) return failed(e);
  }
  return PAAM_KERNEL_OK;
}

}  // namespace paam
