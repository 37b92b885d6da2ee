// backend/cuda/cuda_kernels.cu — CUDA versions of the built-in kernels (see cuda_kernels.h).
//
// Every kernel indexes its work by block, never by a grid-stride loop: a grid-stride loop over
// a small grid makes long blocks, and a long block is exactly what a higher bucket cannot
// preempt. Grids may therefore hold hundreds of thousands of small blocks.
#include "backend/cuda/cuda_kernels.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace paam::cuda {
namespace {

constexpr int kMaxDevices = 64;
std::atomic<int> g_spin_slots[kMaxDevices];  // 0: not computed yet
thread_local CudaCancel t_cancel;             // SetCudaCancel

// A launch's view of the cancellation (cuda_kernels.h): blocks whose linear index is a
// multiple of `leader_every` read the host word.
struct CancelArgs {
  const volatile unsigned long long* host;
  volatile unsigned long long* device;
  unsigned long long ticket;
  unsigned long long leader_every;
};

CancelArgs CancelFor(uint64_t leader_every) {
  return {t_cancel.host_word, t_cancel.device_word, t_cancel.ticket, leader_every == 0 ? 1 : leader_every};
}

// Whether this block must exit at once. Called by thread 0 only.
__device__ __forceinline__ bool StopBlock(const CancelArgs& c, unsigned long long block) {
  if (c.ticket == 0) return false;
  if (*c.device == c.ticket) return true;
  if (block % c.leader_every != 0 || *c.host != c.ticket) return false;
  *c.device = c.ticket;  // the blocks after this one need not cross the bus to learn it
  __threadfence();
  return true;
}

__device__ __forceinline__ uint64_t GlobalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// ---------------------------------------------------------------- vector_add
constexpr int kVecThreads = 256;
constexpr int kVecPerThread = 4;
constexpr uint64_t kVecPerBlock = uint64_t{kVecThreads} * kVecPerThread;

__global__ void __launch_bounds__(kVecThreads) VectorAddKernel(const float* __restrict__ a,
                                                                const float* __restrict__ b,
                                                                float* __restrict__ c, uint64_t n) {
  const uint64_t base = blockIdx.x * kVecPerBlock + threadIdx.x;
#pragma unroll
  for (int i = 0; i < kVecPerThread; ++i) {
    const uint64_t idx = base + static_cast<uint64_t>(i) * kVecThreads;
    if (idx < n) c[idx] = a[idx] + b[idx];
  }
}

// ---------------------------------------------------------------- matmul
// 64x64 output tile per block, k in steps of 16, 256 threads with a 4x4 micro-tile each
// (rows ty + 16 i, columns tx + 16 j: conflict-free shared reads, coalesced stores).
// Short blocks: one launch covers at most kSliceK of the k dimension ([k_begin, k_end)) and
// adds to C when `accumulate`; MatmulCuda issues ceil(K / kSliceK) launches on the stream, so
// a block lasts a slice (about 20 us at 1024^3 on an H100), not the whole k, and a
// higher-priority stream waits at most that long (the preemption cost kappa of the analysis).
constexpr int kTile = 64;
constexpr int kTileK = 16;
constexpr int kSliceK = 128;
constexpr int kMmThreads = 256;

__global__ void __launch_bounds__(kMmThreads) MatmulKernel(const float* __restrict__ A,
                                                            const float* __restrict__ B,
                                                            float* __restrict__ C, int M, int K, int N,
                                                            int k_begin, int k_end, int accumulate,
                                                            CancelArgs cancel) {
  __shared__ float As[kTileK][kTile + 4];  // A tile transposed: As[k][row]
  __shared__ float Bs[kTileK][kTile + 4];
  __shared__ int stop;
  if (threadIdx.x == 0) stop = StopBlock(cancel, static_cast<unsigned long long>(blockIdx.y) * gridDim.x + blockIdx.x);
  __syncthreads();
  if (stop) return;
  const int tid = threadIdx.x;
  const int tx = tid % 16;
  const int ty = tid / 16;
  const int row0 = blockIdx.y * kTile;
  const int col0 = blockIdx.x * kTile;
  float acc[4][4] = {};
  for (int k0 = k_begin; k0 < k_end; k0 += kTileK) {
#pragma unroll
    for (int i = tid; i < kTile * kTileK; i += kMmThreads) {
      const int r = i / kTileK, c = i % kTileK;
      const int gr = row0 + r, gc = k0 + c;
      As[c][r] = (gr < M && gc < k_end) ? A[static_cast<size_t>(gr) * K + gc] : 0.0f;
    }
#pragma unroll
    for (int i = tid; i < kTileK * kTile; i += kMmThreads) {
      const int r = i / kTile, c = i % kTile;
      const int gr = k0 + r, gc = col0 + c;
      Bs[r][c] = (gr < k_end && gc < N) ? B[static_cast<size_t>(gr) * N + gc] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kTileK; ++kk) {
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = As[kk][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; ++j) b[j] = Bs[kk][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = row0 + ty + 16 * i;
    if (r >= M) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int c = col0 + tx + 16 * j;
      if (c >= N) continue;
      float* out = &C[static_cast<size_t>(r) * N + c];
      *out = accumulate ? *out + acc[i][j] : acc[i][j];
    }
  }
}

// ---------------------------------------------------------------- reduction
// Each block sums 2048 elements (coalesced), reduces through warp shuffles, and adds its
// partial sum to the output with one atomic (the output is zeroed on the stream first).
constexpr int kRedThreads = 256;
constexpr int kRedPerThread = 8;
constexpr uint64_t kRedPerBlock = uint64_t{kRedThreads} * kRedPerThread;

__global__ void __launch_bounds__(kRedThreads) ReductionKernel(const float* __restrict__ x, uint64_t n,
                                                                float* __restrict__ out) {
  __shared__ float warp_sums[kRedThreads / 32];
  const uint64_t base = blockIdx.x * kRedPerBlock + threadIdx.x;
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < kRedPerThread; ++i) {
    const uint64_t idx = base + static_cast<uint64_t>(i) * kRedThreads;
    if (idx < n) s += x[idx];
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(0xffffffffu, s, off);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x / 32] = s;
  __syncthreads();
  if (threadIdx.x < 32) {
    s = threadIdx.x < kRedThreads / 32 ? warp_sums[threadIdx.x] : 0.0f;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(0xffffffffu, s, off);
    if (threadIdx.x == 0) atomicAdd(out, s);
  }
}

// ---------------------------------------------------------------- histogram
// Each block counts 16 KiB into a shared-memory histogram, then adds its non-zero bins to
// the output (zeroed on the stream first).
constexpr int kHistThreads = 256;
constexpr int kHistPerThread = 64;
constexpr uint64_t kHistPerBlock = uint64_t{kHistThreads} * kHistPerThread;

__global__ void __launch_bounds__(kHistThreads) HistogramKernel(const uint8_t* __restrict__ x, uint64_t n,
                                                                 unsigned int* __restrict__ out) {
  __shared__ unsigned int bins[256];
  bins[threadIdx.x] = 0;
  __syncthreads();
  const uint64_t base = blockIdx.x * kHistPerBlock + threadIdx.x;
#pragma unroll 8
  for (int i = 0; i < kHistPerThread; ++i) {
    const uint64_t idx = base + static_cast<uint64_t>(i) * kHistThreads;
    if (idx < n) atomicAdd(&bins[x[idx]], 1u);
  }
  __syncthreads();
  const unsigned int v = bins[threadIdx.x];
  if (v != 0) atomicAdd(&out[threadIdx.x], v);
}

// ---------------------------------------------------------------- spin
// One warp per block. Each block records its start in *out with atomicMin (out starts at
// all-ones), then stays resident for `slice_ns` of GPU time, sleeping between clock reads
// so that it holds a block slot without taking issue bandwidth from co-resident blocks of
// higher buckets. SpinFinishKernel, next in stream order, turns the earliest start into the
// elapsed time.
constexpr int kSpinThreads = 32;
// A narrow spin launches one kernel per wave; this caps the launches of one request.
constexpr uint64_t kMaxSpinWaveLaunches = 512;

__global__ void __launch_bounds__(kSpinThreads) SpinKernel(unsigned long long* out, uint64_t slice_ns,
                                                             CancelArgs cancel) {
  __shared__ int stop;
  if (threadIdx.x == 0) stop = StopBlock(cancel, blockIdx.x);
  __syncthreads();
  if (stop) return;
  const uint64_t start = GlobalTimerNs();
  if (threadIdx.x == 0) atomicMin(out, static_cast<unsigned long long>(start));
  while (GlobalTimerNs() - start < slice_ns) __nanosleep(200);
}

__global__ void SpinFinishKernel(unsigned long long* out) {
  const unsigned long long t0 = *out;
  const uint64_t now = GlobalTimerNs();
  *out = t0 == ~0ull ? 0ull : static_cast<unsigned long long>(now - t0);
}

inline cudaStream_t StreamOf(const paam_kernel_args* a) { return static_cast<cudaStream_t>(a->stream); }

inline int Launched() {
  return cudaGetLastError() == cudaSuccess ? PAAM_KERNEL_OK : PAAM_KERNEL_EFAILED;
}

int ComputeSpinSlots(int device) {
  int sms = 0, per_sm = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) return 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, SpinKernel, kSpinThreads, 0) != cudaSuccess) {
    return 0;
  }
  return sms * per_sm;
}

}  // namespace

int VectorAddCuda(const paam_kernel_args* a) {
  const uint64_t n = a->params[0];
  if (n == 0 || a->input_bytes < 2 * n * sizeof(float) || a->output_bytes < n * sizeof(float)) {
    return PAAM_KERNEL_EINVAL;
  }
  const auto* x = static_cast<const float*>(a->input);
  const uint64_t blocks = (n + kVecPerBlock - 1) / kVecPerBlock;
  if (blocks > 0x7fffffffull) return PAAM_KERNEL_EINVAL;
  VectorAddKernel<<<static_cast<unsigned>(blocks), kVecThreads, 0, StreamOf(a)>>>(
      x, x + n, static_cast<float*>(a->output), n);
  return Launched();
}

int MatmulCuda(const paam_kernel_args* a) {
  const uint64_t m = a->params[0], k = a->params[1], n = a->params[2];
  if (m == 0 || k == 0 || n == 0 || m > (1u << 20) || k > (1u << 20) || n > (1u << 20)) return PAAM_KERNEL_EINVAL;
  if (a->input_bytes < (m * k + k * n) * sizeof(float) || a->output_bytes < m * n * sizeof(float)) {
    return PAAM_KERNEL_EINVAL;
  }
  const uint64_t gy = (m + kTile - 1) / kTile;
  if (gy > 65535) return PAAM_KERNEL_EINVAL;
  const auto* A = static_cast<const float*>(a->input);
  dim3 grid(static_cast<unsigned>((n + kTile - 1) / kTile), static_cast<unsigned>(gy));
  const CancelArgs cancel = CancelFor(uint64_t{grid.x} * grid.y);  // the first block of each slice looks
  for (uint64_t k0 = 0; k0 < k; k0 += kSliceK) {
    const uint64_t k1 = std::min<uint64_t>(k, k0 + kSliceK);
    MatmulKernel<<<grid, kMmThreads, 0, StreamOf(a)>>>(A, A + m * k, static_cast<float*>(a->output),
                                                       static_cast<int>(m), static_cast<int>(k),
                                                       static_cast<int>(n), static_cast<int>(k0),
                                                       static_cast<int>(k1), k0 > 0 ? 1 : 0, cancel);
    if (const int rc = Launched(); rc != 0) return rc;
  }
  return 0;
}

int ReductionCuda(const paam_kernel_args* a) {
  const uint64_t n = a->params[0];
  if (n == 0 || a->input_bytes < n * sizeof(float) || a->output_bytes < sizeof(float)) return PAAM_KERNEL_EINVAL;
  const uint64_t blocks = (n + kRedPerBlock - 1) / kRedPerBlock;
  if (blocks > 0x7fffffffull) return PAAM_KERNEL_EINVAL;
  if (cudaMemsetAsync(a->output, 0, sizeof(float), StreamOf(a)) != cudaSuccess) return PAAM_KERNEL_EFAILED;
  ReductionKernel<<<static_cast<unsigned>(blocks), kRedThreads, 0, StreamOf(a)>>>(
      static_cast<const float*>(a->input), n, static_cast<float*>(a->output));
  return Launched();
}

int HistogramCuda(const paam_kernel_args* a) {
  const uint64_t n = a->params[0];
  if (n == 0 || a->input_bytes < n || a->output_bytes < 256 * sizeof(uint32_t)) return PAAM_KERNEL_EINVAL;
  const uint64_t blocks = (n + kHistPerBlock - 1) / kHistPerBlock;
  if (blocks > 0x7fffffffull) return PAAM_KERNEL_EINVAL;
  if (cudaMemsetAsync(a->output, 0, 256 * sizeof(uint32_t), StreamOf(a)) != cudaSuccess) return PAAM_KERNEL_EFAILED;
  HistogramKernel<<<static_cast<unsigned>(blocks), kHistThreads, 0, StreamOf(a)>>>(
      static_cast<const uint8_t*>(a->input), n, static_cast<unsigned int*>(a->output));
  return Launched();
}

int SpinCuda(const paam_kernel_args* a) {
  const uint64_t duration = a->params[0];
  const uint64_t slice_target = a->params[1] != 0 ? a->params[1] : kDefaultSpinSliceNs;
  if (a->output_bytes < sizeof(uint64_t)) return PAAM_KERNEL_EINVAL;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return PAAM_KERNEL_EFAILED;
  const int slots = SpinSlots(device);
  if (slots <= 0) return PAAM_KERNEL_EFAILED;
  // params[2]: the percentage of the GPU's block slots the spin takes (0: all of them)
  const uint64_t width_pct = a->params[2] == 0 ? 100 : a->params[2];
  if (width_pct > 100) return PAAM_KERNEL_EINVAL;
  auto* out = static_cast<unsigned long long*>(a->output);
  if (cudaMemsetAsync(out, 0xff, sizeof(uint64_t), StreamOf(a)) != cudaSuccess) return PAAM_KERNEL_EFAILED;
  if (duration > 0 && width_pct == 100) {
    // waves of `slots` blocks in one launch; the slice is trimmed so that the waves add up to
    // the duration
    const uint64_t waves = (duration + slice_target - 1) / slice_target;
    const uint64_t slice = duration / waves;
    const uint64_t blocks = waves * static_cast<uint64_t>(slots);
    if (blocks > 0x7fffffffull) return PAAM_KERNEL_EINVAL;
    SpinKernel<<<static_cast<unsigned>(blocks), kSpinThreads, 0, StreamOf(a)>>>(out, slice, CancelFor(slots));
  } else if (duration > 0) {
    // Narrower: one launch per wave, in stream order, so that no more than `narrow` blocks
    // run at once (in one launch the GPU would run the later waves beside the first). At most
    // kMaxSpinWaveLaunches launches: a longer spin gets longer slices.
    const uint64_t narrow = std::max<uint64_t>(1, (static_cast<uint64_t>(slots) * width_pct + 99) / 100);
    const uint64_t target = std::max(slice_target, (duration + kMaxSpinWaveLaunches - 1) / kMaxSpinWaveLaunches);
    const uint64_t waves = (duration + target - 1) / target;
    const uint64_t slice = duration / waves;
    const CancelArgs cancel = CancelFor(narrow);  // the first block of each launch looks
    for (uint64_t w = 0; w < waves; ++w) {
      SpinKernel<<<static_cast<unsigned>(narrow), kSpinThreads, 0, StreamOf(a)>>>(out, slice, cancel);
    }
  }
  SpinFinishKernel<<<1, 1, 0, StreamOf(a)>>>(out);
  return Launched();
}

// noop: launches nothing; the request still takes the backend's whole path (copies in and
// out on the bucket's stream, completion signal), which is what the overhead benchmark measures.
int NoopCuda(const paam_kernel_args*) { return PAAM_KERNEL_OK; }

const CudaBuiltin* CudaBuiltins(size_t* count) {
  static const CudaBuiltin kTable[] = {
      {"vector_add", VectorAddCuda}, {"matmul", MatmulCuda}, {"reduction", ReductionCuda},
      {"histogram", HistogramCuda},  {"spin", SpinCuda},     {"noop", NoopCuda},
  };
  *count = sizeof(kTable) / sizeof(kTable[0]);
  return kTable;
}

int SpinSlots(int device) {
  if (device < 0 || device >= kMaxDevices) return ComputeSpinSlots(device);
  int v = g_spin_slots[device].load(std::memory_order_relaxed);
  if (v == 0) {
    v = ComputeSpinSlots(device);
    g_spin_slots[device].store(v, std::memory_order_relaxed);
  }
  return v;
}

void SetCudaCancel(const CudaCancel& cancel) { t_cancel = cancel; }

int PrepareCudaKernels(int device) {
  cudaError_t e = cudaSetDevice(device);
  if (e != cudaSuccess) return e;
  // cudaFuncGetAttributes loads the kernel's module now rather than at its first launch.
  const void* kernels[] = {reinterpret_cast<const void*>(VectorAddKernel),
                           reinterpret_cast<const void*>(MatmulKernel),
                           reinterpret_cast<const void*>(ReductionKernel),
                           reinterpret_cast<const void*>(HistogramKernel),
                           reinterpret_cast<const void*>(SpinKernel),
                           reinterpret_cast<const void*>(SpinFinishKernel)};
  for (const void* k : kernels) {
    cudaFuncAttributes attr;
    e = cudaFuncGetAttributes(&attr, k);
    if (e != cudaSuccess) return e;
  }
  return SpinSlots(device) > 0 ? cudaSuccess : cudaErrorUnknown;
}

}  // namespace paam::cuda
