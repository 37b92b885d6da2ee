// backend/cuda/cuda_kernels.h — CUDA versions of the built-in kernels.
//
// Each entry point has the `paam_kernel::run_cuda` signature: it enqueues its work on
// `args->stream` (device pointers in `args->input` / `args->output`) and returns without
// waiting. The caller (the CUDA backend, or a bench) synchronizes the stream.
//
// Short blocks. Inside one CUDA context a higher stream priority wins only at thread-block
// boundaries: a block that runs is never stopped. Every kernel here is therefore cut into many
// short blocks (a few to a few tens of microseconds on an H100), so a high-priority request
// waits at most about one block of the lower buckets (the analysis' preemption cost κ).
// `spin` holds the GPU for its duration through many blocks of one warp each, every block
// busy for one "slice" timed by the GPU's %globaltimer (default kDefaultSpinSliceNs); matmul's
// block time grows with k (one 64x64 output tile over the whole k).
//
// Cancellation. `spin` and `matmul` stop early when the server cancels their request (the
// backend sets CudaCancel on the calling thread before run_cuda), and so do the others when they
// are preemptible (below): one block of each wave of spin, of each of matmul's k-slice launches,
// or a preemptible launch's watcher, reads the server's word in mapped pinned host memory; when it
// holds the request's ticket that block writes the ticket into a word in device memory, which
// every block reads at its start, and the blocks still to run exit at once. (Few blocks read
// host memory: such a read takes about a microsecond and the GPU serves them one at a time.) So a
// cancelled kernel stops within about a block, but the request ends only once the blocks still
// to run have exited: for a full-width spin, about an eighth of the time it had left (a 5 s spin
// stopped at 0.2 s ended 0.6 s later, H200, 2026-11-26); other streams get the GPU's block slots
// meanwhile. Their output is then not valid. vector_add, reduction and histogram, not
// preemptible, run to their end.
//
// Preemption (CudaPreempt, set by the backend for the lanes of a lower bucket when paamd runs
// with --gpu-preempt; docs/gpu.md "Preemption in slices"). A preemptible launch hands out its
// items (vector_add's, reduction's and histogram's blocks of elements, matmul's 64x64 tiles of
// one k-slice, spin's slices of time) through a ticket counter of the lane's state in device
// memory, and every item is short: at most a slice (20 us by default). Block 0 of each launch
// (one more block than items) is its watcher: it reads the host word `urgent` about once a
// microsecond until every item is done; once the word is nonzero (a more urgent bucket of the GPU
// has work) it raises the lane's pause word (device) and its flag in host memory, and the blocks
// that would take an item exit instead. The worker then waits until no more urgent work is left and runs the entry
// point again with `resume` set: each launch takes up its counter where it stopped, so every
// item runs exactly once and the output is the one an uninterrupted run gives. A preemptible
// spin is `width` persistent one-warp blocks that each take slices until none is left; a few of
// them poll `urgent` during their slice so that the others see the pause word at their next.

// Thread safety: every entry point is reentrant (no state but a per-device occupancy cache
// filled with relaxed atomics). They use the calling thread's current device.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cuda/slice_plan.h"
#include "paam/kernel_abi.h"

namespace paam::cuda {

// Time one block of `spin` stays busy, unless params[1] names another (in ns).
inline constexpr uint64_t kDefaultSpinSliceNs = 20'000;

// The cancellation of the request being enqueued on this thread (see above). host_word: the
// device address of the server's word (mapped pinned host memory); device_word: a word in
// device memory of this lane's own; ticket: the value that means "stop" (0: no cancellation).
struct CudaCancel {
  const unsigned long long* host_word = nullptr;
  unsigned long long* device_word = nullptr;
  unsigned long long ticket = 0;
};
// Sets this thread's cancellation for the entry points it calls next ({}: none).
void SetCudaCancel(const CudaCancel& cancel);

// The preemption of the request being enqueued on this thread (see above; {}: not preemptible).
struct CudaPreempt {
  const unsigned long long* urgent = nullptr;  // device address of the host word (mapped)
  void* state = nullptr;                       // the lane's CudaPreemptState (device memory)
  unsigned int* paused_host = nullptr;         // host address of the lane's paused flag (mapped)
  unsigned int* paused_device = nullptr;       // its device address
  uint64_t slice_ns = kDefaultPreemptSliceNs;  // the longest an item may take
  bool resume = false;  // take up a request that stopped: no re-initialization of the output
};
// A lane's state in device memory: the pause word, then per phase (launch) its ticket counter
// and its count of finished items.
struct CudaPreemptState {
  unsigned int pause;
  unsigned int reserved;
  struct Phase {
    unsigned long long next;
    unsigned long long done;
  } phase[kMaxPhases];
};
// Sets this thread's preemption for the entry points it calls next.
void SetCudaPreempt(const CudaPreempt& preempt);

// vector_add: (a: f32[n], b: f32[n]) -> f32[n]; params: n
int VectorAddCuda(const paam_kernel_args* args);
// matmul: (A: f32[m*k], B: f32[k*n]) -> f32[m*n], row-major; params: m, k, n
int MatmulCuda(const paam_kernel_args* args);
// reduction: (x: f32[n]) -> f32[1] sum; params: n
int ReductionCuda(const paam_kernel_args* args);
// histogram: (x: u8[n]) -> u32[256]; params: n
int HistogramCuda(const paam_kernel_args* args);
// spin: () -> u64 elapsed GPU ns (first block's start to the end of the last); params:
// duration_ns, optional slice_ns (0: kDefaultSpinSliceNs), optional width_pct (1-100, 0: 100).
// Work-conserving: it runs ceil(duration / slice) waves of blocks, each wave filling
// width_pct% of the GPU's block slots (all of them by default), so when other work takes those
// slots it finishes later, like any other kernel. A narrower spin leaves the rest of the GPU
// to kernels of other streams (what several lanes of one bucket can use); it launches its
// waves one by one (at most 512, longer slices past that), and the gaps between those launches
// make it run a little longer than a full-width spin of the same duration. Preemptible, its
// slice is at most the server's, and the elapsed time counts the pauses (PlanSpin).
int SpinCuda(const paam_kernel_args* args);

struct CudaBuiltin {
  const char* name;
  int (*run_cuda)(const paam_kernel_args*);
};
// The table above, by registry name. Static storage.
const CudaBuiltin* CudaBuiltins(size_t* count);

// Loads every built-in kernel's module on `device` and caches the figures `spin` needs, so
// that the first request of each kernel pays no lazy module load (which may wait for kernels
// already running). Registration time; changes the calling thread's current device to
// `device`. Returns a cudaError_t value (0 = cudaSuccess).
int PrepareCudaKernels(int device);

// Number of `spin` blocks that fit on `device` at once (one wave). 0 if unknown.
int SpinSlots(int device);

}  // namespace paam::cuda
