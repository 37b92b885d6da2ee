// backend/cuda/cuda_backend.h — the CUDA backend: one context per GPU, prioritized streams.
//
// One CUDA (primary) context per GPU for the whole process — paamd, or a client in direct
// mode. Levels map onto CUDA stream priorities: the device's range (0 … −5 on H100/H200, six
// levels) is asked at start, `options.levels` is clamped to it, level 0 gets the greatest
// priority and the lowest level the least; levels in between are spread evenly. Every
// (GPU, level, lane) has its own non-blocking stream and events, used by one worker at a time;
// the lowest level has `options.best_effort_lanes` lanes (several best-effort kernels run
// concurrently at the lowest priority), every other level one.
//
// Data plane: AttachRegion page-locks the region's mapping (cudaHostRegister) and allocates its
// device input/output buffers on the region's GPU once; Run copies input in, runs the kernel and
// copies output out asynchronously on the lane's stream, then waits for that stream work only.
// Run allocates nothing on success. A region registered with device buffers
// (RegionMemory::device, CUDA IPC) has them opened here too, once (cudaIpcOpenMemHandle,
// reference-counted per allocation, closed by DetachRegion); a KernelCall with device_data runs
// the kernel on them in place, with no copies. A region that reaches Run without AttachRegion (a caller
// that builds a fresh RegionMemory per call) is attached implicitly on first use, keyed by its
// host areas, and released with the backend; AttachRegion remains the way to avoid that first
// request's cost. Waiting polls an event (spin, lowest latency, one core per
// busy worker) unless PAAM_CUDA_WAIT=block is set in the environment, which sleeps in the driver.
// DeviceTimes bracket the kernel: they come from events around it, anchored to CLOCK_MONOTONIC
// at the moment completion is seen (about a microsecond of error with spin waiting).
// Cancellation: each lane's CancelWord lives in mapped pinned host memory (cuda_cancel.h); the
// built-in kernels read it from the GPU and stop at their next block (spin: slice; matmul:
// k-slice) once the server raises it, and Run returns kCancelled. Plugin kernels run to their end.
// Preemption (BackendOptions::gpu_preempt, cuda_preempt.h): a request counts itself into its
// GPU's words of the levels below its own while it runs; a lower level's request waits before
// it starts while more urgent work runs or is queued (the server's QueueDepth), its built-in
// kernels stop taking work when such work comes and are taken up where they stopped once it is
// gone, and a plugin kernel with CUDA slices runs slice by slice, waiting between them.
//
// Thread safety: as for Backend. Run() sets the calling thread's current CUDA device to the
// region's GPU if it differs; AttachRegion/DetachRegion restore the caller's current device.
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"
#include "kernels/registry.h"
#include "paam/status.h"

namespace paam {

// Creates the CUDA backend over `options.cuda_devices` ("0,1"; empty: every visible GPU) and
// attaches the CUDA versions of the built-in kernels to `registry` (their run_cuda).
// Fails with kInvalidArgument when no GPU or driver is present (the message says which) or a
// device index is out of range, kResourceExhausted when streams or events cannot be made.
// Sets CUDA_DEVICE_MAX_CONNECTIONS=32 unless the user set it (then warns if it is lower), so
// that every bucket stream gets its own hardware queue: streams that share one run FIFO
// whatever their priority. Must run before the process's first CUDA call; the server's
// CreateCudaBackend calls it (direct mode does not: the client's process is the user's).
void ReserveCudaHardwareQueues();

Result<std::unique_ptr<Backend>> CreateCudaBackend(const BackendOptions& options, KernelRegistry* registry);

// Number of CUDA devices this process sees; 0 when there is none or no usable driver, with
// the reason in *why (if given): "no CUDA GPU found (<CUDA error name>: ...)". Safe to call on
// machines without a GPU (CI).
int CudaDeviceCount(std::string* why = nullptr);

// Sets run_cuda of the built-in kernels present in `registry` (vector_add, matmul, reduction,
// histogram, spin). Needs no GPU. REQUIRES: no concurrent Find() on `registry`.
void AttachCudaBuiltins(KernelRegistry* registry);

}  // namespace paam
