// backend/cuda/cuda_kernels.cu — CUDA versions of the built-in kernels (see cuda_kernels.h).
//
// Every kernel indexes its work by block (preemptible: by a ticket each block takes), never by a
// grid-stride loop: a grid-stride loop over a small grid makes long blocks, and a long block is
// exactly what a higher bucket cannot preempt. Grids may therefore hold hundreds of thousands of
// small blocks. The one loop, the preemptible spin's, looks for a pause between two slices.
#include "backend/cuda/cuda_kernels.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace paam::cuda {
namespace {

constexpr int kMaxDevices = 64;
std::atomic<int> g_spin_slots[kMaxDevices];  // 0: not computed yet
thread_local CudaCancel t_cancel;             // SetCudaCancel
thread_local CudaPreempt t_preempt;           // SetCudaPreempt

constexpr unsigned long long kNoItem = ~0ull;

// A launch's view of its request's cancellation and preemption (cuda_kernels.h). One block in
// `leader_every` (the "leaders", IsLeader) reads the host words.
struct Gate {
  const volatile unsigned long long* cancel_host;
  volatile unsigned long long* cancel_device;
  unsigned long long ticket;  // 0: not cancellable
  // Preemption; next == nullptr: not preemptible, a block's item is its own index.
  const volatile unsigned long long* urgent;
  unsigned int* pause;
  volatile unsigned int* paused_host;
  unsigned long long* next;  // this launch's ticket counter
  unsigned long long* done;  // and its count of items finished
  unsigned long long items;  // items of this launch
  unsigned long long leader_every;
};

// Blocks that never read the host words (a kernel of many short blocks that is not preemptible
// is not cancellable either: it is over before a stop could matter).
constexpr uint64_t kNoLeader = ~0ull;

// The gate of one launch (`phase` of the request) with `items` items. Host code.
Gate GateFor(uint64_t leader_every, uint64_t phase, uint64_t items) {
  Gate g{t_cancel.host_word, t_cancel.device_word, t_cancel.ticket, nullptr, nullptr, nullptr, nullptr, nullptr,
         items, leader_every == 0 ? 1 : leader_every};
  if (t_preempt.state != nullptr && phase < kMaxPhases) {
    auto* st = static_cast<CudaPreemptState*>(t_preempt.state);
    g.urgent = t_preempt.urgent;
    g.pause = &st->pause;
    g.paused_host = t_preempt.paused_device;
    g.next = &st->phase[phase].next;
    g.done = &st->phase[phase].done;
  }
  return g;
}

bool Preemptible() { return t_preempt.state != nullptr; }

// Before the launches of a preemptible request: a fresh one clears the pause word and the
// counters of its `phases` launches, a resumed one the pause word only; both clear the host
// flag. Returns false when the stream refused the clear.
bool BeginPreemptible(cudaStream_t s, uint64_t phases) {
  if (!Preemptible()) return true;
  *reinterpret_cast<volatile unsigned int*>(t_preempt.paused_host) = 0;
  const size_t bytes = t_preempt.resume ? sizeof(unsigned int)
                                        : offsetof(CudaPreemptState, phase) +
                                              sizeof(CudaPreemptState::Phase) * std::min<uint64_t>(phases, kMaxPhases);
  return cudaMemsetAsync(t_preempt.state, 0, bytes, s) == cudaSuccess;
}

// Marks the lane paused (device word for the other blocks, host flag for the worker).
__device__ __forceinline__ void RaisePause(const Gate& g) {
  if (atomicExch(g.pause, 1u) == 0u) {
    *g.paused_host = 1u;
    __threadfence_system();
  }
}

// The item this block runs next, or kNoItem when it must exit (cancelled, paused, or no item
// left). Thread 0 only. An item taken is always run to its end: that is what makes a resumed
// launch run every item exactly once. Only leaders read the host words (a read across the bus
// takes about a microsecond, and the GPU serves such reads one after another: a read per block
// would cost more than the blocks' work); the others read the device words the leaders and the
// watcher (Watch) keep. The words are all read before any is looked at, so that the reads overlap.
__device__ __forceinline__ unsigned long long TakeItem(const Gate& g, unsigned long long block, bool leader) {
  const bool cancellable = g.ticket != 0, preemptible = g.next != nullptr;
  const unsigned long long cancel_host = leader && cancellable ? *g.cancel_host : 0;
  const unsigned long long urgent = leader && preemptible ? *g.urgent : 0;
  const unsigned long long cancel_device = cancellable ? *g.cancel_device : 0;
  const unsigned int pause = preemptible ? *reinterpret_cast<volatile unsigned int*>(g.pause) : 0;
  if (cancellable && (cancel_device == g.ticket || cancel_host == g.ticket)) {
    if (cancel_device != g.ticket) {
      *g.cancel_device = g.ticket;  // the blocks after this one need not cross the bus to learn it
      __threadfence();
    }
    return kNoItem;
  }
  if (!preemptible) return block;
  if (pause != 0) return kNoItem;
  if (urgent != 0) {
    RaisePause(g);
    return kNoItem;
  }
  const unsigned long long t = atomicAdd(g.next, 1ull);
  return t < g.items ? t : kNoItem;
}

// The watcher of a preemptible launch of many short blocks: block 0 of a grid one block larger
// than its items, whose thread 0 reads the host words over and over (about once a microsecond)
// until the launch needs it no more: the urgent word rose (it raises the pause word, which the
// item blocks read at their start), the request was cancelled, or every item has finished. One
// reader across the bus per launch, however many blocks.
__device__ void Watch(const Gate& g) {
  for (;;) {
    const unsigned long long urgent = *g.urgent;
    const unsigned long long cancel_host = g.ticket != 0 ? *g.cancel_host : 0;
    if (*reinterpret_cast<volatile unsigned int*>(g.pause) != 0) return;
    if (g.ticket != 0 && (*g.cancel_device == g.ticket || cancel_host == g.ticket)) {
      *g.cancel_device = g.ticket;
      __threadfence();
      return;
    }
    if (urgent != 0) {
      RaisePause(g);
      return;
    }
    if (*reinterpret_cast<volatile unsigned long long*>(g.done) >= g.items) return;
  }
}

// Thread 0's start of a block of a kernel with a watcher: block 0 watches (and takes no item),
// the others take items as TakeItem does, reading no host word.
__device__ __forceinline__ unsigned long long WatchOrTake(const Gate& g, unsigned long long block,
                                                          unsigned long long leader_every) {
  if (g.next == nullptr) return TakeItem(g, block, block % leader_every == leader_every - 1);
  if (block == 0) {
    Watch(g);
    return kNoItem;
  }
  return TakeItem(g, block, false);
}

// After a block's item, with every thread of the block past it: counted for the watcher.
__device__ __forceinline__ void ItemDone(const Gate& g) {
  if (g.done != nullptr && threadIdx.x == 0) atomicAdd(g.done, 1ull);
}

// The last block of every leader_every (the cancellation readers of spin's waves and matmul's
// k-slices when they are not preemptible).
__device__ __forceinline__ bool IsLeader(const Gate& g, unsigned long long block) {
  return block % g.leader_every == g.leader_every - 1;
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
                                                                float* __restrict__ c, uint64_t n, Gate g) {
  __shared__ unsigned long long item;
  if (threadIdx.x == 0) item = WatchOrTake(g, blockIdx.x, g.leader_every);
  __syncthreads();
  if (item == kNoItem) return;
  const uint64_t base = item * kVecPerBlock + threadIdx.x;
#pragma unroll
  for (int i = 0; i < kVecPerThread; ++i) {
    const uint64_t idx = base + static_cast<uint64_t>(i) * kVecThreads;
    if (idx < n) c[idx] = a[idx] + b[idx];
  }
  if (g.done != nullptr) {
    __syncthreads();
    ItemDone(g);
  }
}

// ---------------------------------------------------------------- matmul
// 64x64 output tile per block, k in steps of 16, 256 threads with a 4x4 micro-tile each
// (rows ty + 16 i, columns tx + 16 j: conflict-free shared reads, coalesced stores).
// Short blocks: one launch covers one k-slice of the k dimension ([k_begin, k_end),
// kMatmulSliceK long, or scaled to the server's slice when preemptible: MatmulKSlices) and adds
// to C when `accumulate`; MatmulCuda issues one launch per k-slice on the stream, so a block
// lasts a slice (about 20 us at 1024^3 on an H100), not the whole k, and a higher-priority
// stream waits at most that long (the preemption cost kappa of the analysis). A block's item is
// its output tile (row-major over the gx columns of tiles).
constexpr int kTile = 64;
constexpr int kTileK = static_cast<int>(kMatmulTileK);
constexpr int kMmThreads = 256;

__global__ void __launch_bounds__(kMmThreads) MatmulKernel(const float* __restrict__ A,
                                                            const float* __restrict__ B,
                                                            float* __restrict__ C, int M, int K, int N,
                                                            int k_begin, int k_end, int accumulate, int gx,
                                                            Gate g) {
  __shared__ float As[kTileK][kTile + 4];  // A tile transposed: As[k][row]
  __shared__ float Bs[kTileK][kTile + 4];
  __shared__ unsigned long long item;
  if (threadIdx.x == 0) {
    const unsigned long long block = static_cast<unsigned long long>(blockIdx.y) * gridDim.x + blockIdx.x;
    item = WatchOrTake(g, block, g.leader_every);
  }
  __syncthreads();
  if (item == kNoItem) return;
  const int tid = threadIdx.x;
  const int tx = tid % 16;
  const int ty = tid / 16;
  const int row0 = static_cast<int>(item / gx) * kTile;
  const int col0 = static_cast<int>(item % gx) * kTile;
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
  if (g.done != nullptr) {
    __syncthreads();
    ItemDone(g);
  }
}

// ---------------------------------------------------------------- reduction
// Each block sums 2048 elements (coalesced), reduces through warp shuffles, and adds its
// partial sum to the output with one atomic (the output is zeroed on the stream first).
constexpr int kRedThreads = 256;
constexpr int kRedPerThread = 8;
constexpr uint64_t kRedPerBlock = uint64_t{kRedThreads} * kRedPerThread;

__global__ void __launch_bounds__(kRedThreads) ReductionKernel(const float* __restrict__ x, uint64_t n,
                                                                float* __restrict__ out, Gate g) {
  __shared__ float warp_sums[kRedThreads / 32];
  __shared__ unsigned long long item;
  if (threadIdx.x == 0) item = WatchOrTake(g, blockIdx.x, g.leader_every);
  __syncthreads();
  if (item == kNoItem) return;
  const uint64_t base = item * kRedPerBlock + threadIdx.x;
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
  ItemDone(g);  // thread 0, after its own atomic: the block's item is in
}

// ---------------------------------------------------------------- histogram
// Each block counts 16 KiB into a shared-memory histogram, then adds its non-zero bins to
// the output (zeroed on the stream first).
constexpr int kHistThreads = 256;
constexpr int kHistPerThread = 64;
constexpr uint64_t kHistPerBlock = uint64_t{kHistThreads} * kHistPerThread;

__global__ void __launch_bounds__(kHistThreads) HistogramKernel(const uint8_t* __restrict__ x, uint64_t n,
                                                                 unsigned int* __restrict__ out, Gate g) {
  __shared__ unsigned int bins[256];
  __shared__ unsigned long long item;
  if (threadIdx.x == 0) item = WatchOrTake(g, blockIdx.x, g.leader_every);
  bins[threadIdx.x] = 0;
  __syncthreads();
  if (item == kNoItem) return;
  const uint64_t base = item * kHistPerBlock + threadIdx.x;
#pragma unroll 8
  for (int i = 0; i < kHistPerThread; ++i) {
    const uint64_t idx = base + static_cast<uint64_t>(i) * kHistThreads;
    if (idx < n) atomicAdd(&bins[x[idx]], 1u);
  }
  __syncthreads();
  const unsigned int v = bins[threadIdx.x];
  if (v != 0) atomicAdd(&out[threadIdx.x], v);
  if (g.done != nullptr) {
    __syncthreads();
    ItemDone(g);
  }
}

// ---------------------------------------------------------------- spin
// One warp per block. Each block records its start in *out with atomicMin (out starts at
// all-ones), then stays resident for `slice_ns` of GPU time, sleeping between clock reads
// so that it holds a block slot without taking issue bandwidth from co-resident blocks of
// higher buckets. SpinFinishKernel, next in stream order, turns the earliest start into the
// elapsed time.
constexpr int kSpinThreads = 32;
// Preemptible spin: blocks that poll the urgent word during their slice, about this many.
constexpr uint64_t kSpinPollers = 4;

__global__ void __launch_bounds__(kSpinThreads) SpinKernel(unsigned long long* out, uint64_t slice_ns, Gate g) {
  __shared__ unsigned long long item;
  if (threadIdx.x == 0) item = TakeItem(g, blockIdx.x, IsLeader(g, blockIdx.x));
  __syncthreads();
  if (item == kNoItem) return;
  const uint64_t start = GlobalTimerNs();
  if (threadIdx.x == 0) atomicMin(out, static_cast<unsigned long long>(start));
  while (GlobalTimerNs() - start < slice_ns) __nanosleep(200);
}

// The preemptible spin: persistent blocks that take slices from the gate's counter until none
// is left, or until the lane is paused (seen between two slices). The blocks whose index is a
// multiple of `poll_every` read the urgent word all through their slice, so that the pause is
// up in device memory before the others end theirs: a block never starts a slice after the
// pause was seen, and a more urgent kernel waits for at most the slices already running.
__global__ void __launch_bounds__(kSpinThreads) SpinLoopKernel(unsigned long long* out, uint64_t slice_ns, Gate g,
                                                                 unsigned long long poll_every) {
  __shared__ unsigned long long item;
  const bool poller = blockIdx.x % poll_every == 0;  // block 0 among them
  bool first = true;
  for (;;) {
    if (threadIdx.x == 0) item = TakeItem(g, blockIdx.x, poller);
    __syncthreads();
    const unsigned long long mine = item;
    __syncthreads();  // everyone has read it before thread 0 takes the next
    if (mine == kNoItem) return;
    const uint64_t start = GlobalTimerNs();
    if (first && threadIdx.x == 0) atomicMin(out, static_cast<unsigned long long>(start));
    first = false;
    while (GlobalTimerNs() - start < slice_ns) {
      __nanosleep(200);
      if (poller && threadIdx.x == 0 && *reinterpret_cast<volatile unsigned int*>(g.pause) == 0 && *g.urgent != 0) {
        RaisePause(g);
      }
    }
  }
}

// pause: the lane's pause word when preemptible (nullptr otherwise); a paused spin is resumed
// later, so its start stays in *out.
__global__ void SpinFinishKernel(unsigned long long* out, const unsigned int* pause) {
  if (pause != nullptr && *reinterpret_cast<const volatile unsigned int*>(pause) != 0) return;
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
  const uint64_t blocks = SliceCount(n, kVecPerBlock);
  if (blocks >= 0x7fffffffull) return PAAM_KERNEL_EINVAL;
  if (!BeginPreemptible(StreamOf(a), 1)) return PAAM_KERNEL_EFAILED;
  const uint64_t grid = blocks + (Preemptible() ? 1 : 0);  // preemptible: and the watcher
  VectorAddKernel<<<static_cast<unsigned>(grid), kVecThreads, 0, StreamOf(a)>>>(
      x, x + n, static_cast<float*>(a->output), n, GateFor(kNoLeader, 0, blocks));
  return Launched();
}

int MatmulCuda(const paam_kernel_args* a) {
  const uint64_t m = a->params[0], k = a->params[1], n = a->params[2];
  if (m == 0 || k == 0 || n == 0 || m > (1u << 20) || k > (1u << 20) || n > (1u << 20)) return PAAM_KERNEL_EINVAL;
  if (a->input_bytes < (m * k + k * n) * sizeof(float) || a->output_bytes < m * n * sizeof(float)) {
    return PAAM_KERNEL_EINVAL;
  }
  const uint64_t gx = (n + kTile - 1) / kTile, gy = (m + kTile - 1) / kTile;
  if (gy > 65535) return PAAM_KERNEL_EINVAL;
  const auto* A = static_cast<const float*>(a->input);
  const uint64_t tiles = gx * gy;
  // Preemptible: a row of tiles + 1 blocks (block 0 watches); else the 2-D grid of tiles, one
  // block of each k-slice reading the cancel word.
  const bool preemptible = Preemptible();
  const dim3 grid = preemptible ? dim3(static_cast<unsigned>(tiles + 1)) : dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy));
  const KSlices ks = MatmulKSlices(k, preemptible ? std::max<uint64_t>(1, t_preempt.slice_ns) : 0);
  if (!BeginPreemptible(StreamOf(a), ks.count)) return PAAM_KERNEL_EFAILED;
  for (uint64_t i = 0; i < ks.count; ++i) {
    const Range r = ks.At(k, i);
    MatmulKernel<<<grid, kMmThreads, 0, StreamOf(a)>>>(A, A + m * k, static_cast<float*>(a->output),
                                                       static_cast<int>(m), static_cast<int>(k),
                                                       static_cast<int>(n), static_cast<int>(r.begin),
                                                       static_cast<int>(r.end), i > 0 ? 1 : 0, static_cast<int>(gx),
                                                       GateFor(preemptible ? kNoLeader : tiles, i, tiles));
    if (const int rc = Launched(); rc != 0) return rc;
  }
  return 0;
}

int ReductionCuda(const paam_kernel_args* a) {
  const uint64_t n = a->params[0];
  if (n == 0 || a->input_bytes < n * sizeof(float) || a->output_bytes < sizeof(float)) return PAAM_KERNEL_EINVAL;
  const uint64_t blocks = SliceCount(n, kRedPerBlock);
  if (blocks >= 0x7fffffffull) return PAAM_KERNEL_EINVAL;
  if (!BeginPreemptible(StreamOf(a), 1)) return PAAM_KERNEL_EFAILED;
  const bool fresh = !Preemptible() || !t_preempt.resume;  // a resumed sum keeps its partial sums
  if (fresh && cudaMemsetAsync(a->output, 0, sizeof(float), StreamOf(a)) != cudaSuccess) return PAAM_KERNEL_EFAILED;
  const uint64_t grid = blocks + (Preemptible() ? 1 : 0);
  ReductionKernel<<<static_cast<unsigned>(grid), kRedThreads, 0, StreamOf(a)>>>(
      static_cast<const float*>(a->input), n, static_cast<float*>(a->output), GateFor(kNoLeader, 0, blocks));
  return Launched();
}

int HistogramCuda(const paam_kernel_args* a) {
  const uint64_t n = a->params[0];
  if (n == 0 || a->input_bytes < n || a->output_bytes < 256 * sizeof(uint32_t)) return PAAM_KERNEL_EINVAL;
  const uint64_t blocks = SliceCount(n, kHistPerBlock);
  if (blocks >= 0x7fffffffull) return PAAM_KERNEL_EINVAL;
  if (!BeginPreemptible(StreamOf(a), 1)) return PAAM_KERNEL_EFAILED;
  const bool fresh = !Preemptible() || !t_preempt.resume;
  if (fresh && cudaMemsetAsync(a->output, 0, 256 * sizeof(uint32_t), StreamOf(a)) != cudaSuccess) {
    return PAAM_KERNEL_EFAILED;
  }
  const uint64_t grid = blocks + (Preemptible() ? 1 : 0);
  HistogramKernel<<<static_cast<unsigned>(grid), kHistThreads, 0, StreamOf(a)>>>(
      static_cast<const uint8_t*>(a->input), n, static_cast<unsigned int*>(a->output), GateFor(kNoLeader, 0, blocks));
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
  const bool preemptible = Preemptible();
  if (!BeginPreemptible(StreamOf(a), 1)) return PAAM_KERNEL_EFAILED;
  if ((!preemptible || !t_preempt.resume) && cudaMemsetAsync(out, 0xff, sizeof(uint64_t), StreamOf(a)) != cudaSuccess) {
    return PAAM_KERNEL_EFAILED;
  }
  if (duration > 0) {
    const SpinPlan p = PlanSpin(duration, slice_target, static_cast<uint64_t>(slots), width_pct,
                                preemptible ? std::max<uint64_t>(1, t_preempt.slice_ns) : 0);
    if (p.blocks > 0x7fffffffull) return PAAM_KERNEL_EINVAL;
    if (preemptible) {
      SpinLoopKernel<<<static_cast<unsigned>(p.blocks), kSpinThreads, 0, StreamOf(a)>>>(
          out, p.slice_ns, GateFor(1, 0, p.items), std::max<uint64_t>(1, p.blocks / kSpinPollers));
    } else if (p.launches == 1) {
      // waves of `slots` blocks in one launch; the slice is trimmed so that the waves add up to
      // the duration
      SpinKernel<<<static_cast<unsigned>(p.blocks), kSpinThreads, 0, StreamOf(a)>>>(out, p.slice_ns,
                                                                                    GateFor(p.width, 0, p.blocks));
    } else {
      // Narrower: one launch per wave, in stream order, so that no more than `width` blocks
      // run at once (in one launch the GPU would run the later waves beside the first).
      const Gate g = GateFor(p.width, 0, p.blocks);  // one block of each launch looks
      for (uint64_t w = 0; w < p.launches; ++w) {
        SpinKernel<<<static_cast<unsigned>(p.blocks), kSpinThreads, 0, StreamOf(a)>>>(out, p.slice_ns, g);
      }
    }
  }
  const unsigned int* pause = preemptible ? &static_cast<CudaPreemptState*>(t_preempt.state)->pause : nullptr;
  SpinFinishKernel<<<1, 1, 0, StreamOf(a)>>>(out, pause);
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

void SetCudaPreempt(const CudaPreempt& preempt) { t_preempt = preempt; }

int PrepareCudaKernels(int device) {
  cudaError_t e = cudaSetDevice(device);
  if (e != cudaSuccess) return e;
  // cudaFuncGetAttributes loads the kernel's module now rather than at its first launch.
  const void* kernels[] = {reinterpret_cast<const void*>(VectorAddKernel),
                           reinterpret_cast<const void*>(MatmulKernel),
                           reinterpret_cast<const void*>(ReductionKernel),
                           reinterpret_cast<const void*>(HistogramKernel),
                           reinterpret_cast<const void*>(SpinKernel),
                           reinterpret_cast<const void*>(SpinLoopKernel),
                           reinterpret_cast<const void*>(SpinFinishKernel)};
  for (const void* k : kernels) {
    cudaFuncAttributes attr;
    e = cudaFuncGetAttributes(&attr, k);
    if (e != cudaSuccess) return e;
  }
  return SpinSlots(device) > 0 ? cudaSuccess : cudaErrorUnknown;
}

}  // namespace paam::cuda
