// backend/backend.h — the device interface the server's workers drive.
//
// A backend owns one accelerator set (the CPU "device", or one CUDA context over one or more
// GPUs). It reports how many hardware priority levels it has (buckets map onto them, level 0 =
// highest), how many kernels a level may run at once (its lanes: the lowest level may run several
// best-effort kernels concurrently, and BackendOptions::lanes gives any level several), and runs
// a kernel on a given level.
//
// Thread safety: Levels()/Lanes()/name() are constant after construction. PrepareWorker() is
// called once from each worker thread before it serves. Run() is called concurrently from the
// workers (one call at a time per (level, lane)). AttachRegion()/DetachRegion() are called from
// the registration and monitor threads, never concurrently with a Run() on the same region.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/registry.h"
#include "paam/status.h"
#include "paam/types.h"

namespace paam {

// A client region's memory as the server (or a direct-mode client) sees it.
struct RegionMemory {
  void* input = nullptr;       // host input area
  uint64_t input_capacity = 0;
  void* output = nullptr;      // host output area
  uint64_t output_capacity = 0;
  void* base = nullptr;        // whole mapping (for pinning)
  uint64_t mapping_bytes = 0;
  int device_index = 0;        // which unit of the backend serves this region
  void* backend_state = nullptr;  // owned by the backend (device buffers, ...)
  // Device buffers the client shares through CUDA IPC (registration; the server's private
  // copy, never re-read from shared memory). Only the CUDA backend accepts them: AttachRegion
  // opens the handles and sets device_input/device_output (the buffers, offsets applied),
  // DetachRegion closes them and clears both. Requests with KernelCall::device_data run on
  // these, bounded by device->input_bytes / device->output_bytes.
  std::optional<DeviceBuffers> device;
  void* device_input = nullptr;
  void* device_output = nullptr;
};

// One kernel invocation, validated already (KernelEntry::Plan succeeded).
struct KernelCall {
  const KernelEntry* kernel = nullptr;
  RegionMemory* region = nullptr;
  uint64_t input_bytes = 0;
  uint64_t output_bytes = 0;
  uint64_t params[PAAM_MAX_PARAMS] = {0, 0, 0, 0};
  // Run on region->device_input/device_output (opened CUDA IPC buffers) in place: no copies.
  // The caller checked that the region has them and that the sizes fit.
  bool device_data = false;
  // Cancellation: the request stops early once *cancel holds `ticket` (nonzero, unique per
  // request), at the next slice point of a kernel that has them (CPU preemption points, the
  // CUDA spin's blocks and matmul's k-slices); Run then returns kCancelled. nullptr: never.
  // For the CUDA kernels to see it, it must be the backend's own CancelWord of the run's
  // (unit, level, lane).
  const std::atomic<uint64_t>* cancel = nullptr;
  uint64_t ticket = 0;
};

// Device-side timestamps of one run, CLOCK_MONOTONIC nanoseconds.
struct DeviceTimes {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string_view name() const = 0;
  // Number of hardware priority levels (>= 1). Level 0 is the highest.
  virtual int Levels() const = 0;
  // Number of kernels `level` may run concurrently (>= 1). Typically > 1 only for the lowest.
  virtual int Lanes(int level) const = 0;
  // Number of accelerator units (GPUs) behind this backend (>= 1).
  virtual int Units() const { return 1; }
  // The unit that serves device (GPU ordinal) `device`, or -1 when none does (or the backend
  // has no GPUs). Used to place a registration with device buffers on their GPU.
  virtual int UnitOfDevice(int /*device*/) const { return -1; }
  // A CPU the backend's workers own (the CPU backend's device core), which the server's other
  // threads stay off; -1 if none.
  virtual int ReservedCpu() const { return -1; }

  // Called on each worker thread before it serves requests of (unit, level, lane).
  // Real-time settings that the OS denies are reported through `note`, not as errors.
  virtual Status PrepareWorker(int unit, int level, int lane, std::string* note) = 0;

  // Registration-time preparation of a region (pinning, device buffers, opening the client's
  // CUDA IPC handles when region->device is set). Never on the hot path.
  virtual Status AttachRegion(RegionMemory* region) = 0;
  virtual void DetachRegion(RegionMemory* region) = 0;

  // Runs one kernel on `level`/`lane` and returns when its output is in region->output.
  // Must not allocate on success.
  virtual Status Run(const KernelCall& call, int level, int lane, DeviceTimes* times) = 0;

  // The word through which the server cancels the request running on (unit, level, lane)
  // (KernelCall::cancel), where the backend needs a word of its own: the CUDA backend's lives
  // in mapped pinned host memory that its kernels read. nullptr: any word will do. Stable for
  // the backend's life.
  virtual std::atomic<uint64_t>* CancelWord(int unit, int level, int lane) {
    (void)unit, (void)level, (void)lane;
    return nullptr;
  }
  // True once `unit` has failed in a way that leaves it unusable for this process (the CUDA
  // backend: a sticky CUDA error, after which every call on the context fails). The server's
  // fallback policy then runs the kernels' CPU versions. Safe from any thread.
  virtual bool Lost(int unit) const {
    (void)unit;
    return false;
  }
  // Called after a cancel word was raised, so that a kernel parked at a preemption point
  // behind more urgent work (the CPU backend) looks at its word now.
  virtual void CancelRaised() {}

  // How many requests the server holds for (unit, level), queued or taken by a worker and not
  // yet finished, for a backend that preempts in software (the CPU one parks less urgent
  // kernels while more urgent work waits or runs). Set once by the server before it serves;
  // without a server (direct mode) unset.
  using QueueDepth = std::function<uint32_t(int unit, int level)>;
  virtual void SetQueueDepth(QueueDepth depth) { (void)depth; }
};

struct BackendOptions {
  std::string kind = "cpu";    // "cpu" | "cuda"
  int levels = 1;              // requested buckets; clamped to what the device offers
  // Concurrency of the lowest level when there are several (with one level every request runs
  // alone, in priority order); 0: the backend's default (cuda 4, cpu 1).
  int best_effort_lanes = 0;
  // Concurrency per level, from the most urgent (level 0): an entry above 0 sets that level's
  // lanes (each its own worker and stream at the level's hardware priority, all serving the
  // level's one queue in priority order); levels without one keep the rule above. For a chain
  // whose branches submit side by side (a DAG flattened to one chain priority), so that its
  // requests need not wait for each other. The analysis still assumes one kernel at a time per
  // level: its bound holds where concurrent kernels do not slow each other down.
  std::vector<int> lanes;
  int device_cpu = -1;         // CPU backend: core that plays the device (-1: last core, -2: none)
  bool realtime = false;       // CPU backend: SCHED_FIFO per level (falls back to nice)
  // CPU backend with `realtime`: how many of the lowest levels stay SCHED_OTHER on the nice
  // ladder (for levels that hold only best-effort chains); -1: 1 with several levels, else 0.
  int fair_levels = -1;
  int rt_priority_base = 80;   // SCHED_FIFO priority of the lowest level
  std::string cuda_devices;    // CUDA backend: "0,1" (empty: all)
  // CUDA backend: how a worker waits for its stream work (ParseCudaWait's forms; empty:
  // $PAAM_CUDA_WAIT, else "nap" in paamd and "spin" in direct mode: ResolveCudaWait).
  std::string cuda_wait;
  // CUDA backend: the most urgent N levels spin on their completion word where cuda_wait is
  // nap (the server's spin_buckets; other waits are kept as they are).
  int spin_levels = 0;
  // CUDA backend: preemption of the lower levels in slices (paamd --gpu-preempt; docs/gpu.md,
  // "Preemption in slices"). While a more urgent level of the GPU has work, running or queued,
  // a lower level's built-in kernels stop taking work and later resume where they stopped, its
  // plugin kernels with CUDA slices wait between slices, and its other kernels wait before they
  // start. gpu_slice_us: the longest a built-in kernel's unit of work takes (1..10000).
  bool gpu_preempt = false;
  int gpu_slice_us = 20;
  bool direct = false;         // true inside a client's direct mode (no server)
};

// The device-level preemption cost kappa (ms) under preemption in slices of `slice_us`: a more
// urgent kernel waits for the slices already running, plus the time for the lower kernels to see
// the urgent word and leave the GPU. kSliceLaunchUs covers every delay p99 that
// `paam bench gpu-preempt` measured with 20 us slices on an H100 (the largest, spin's, 32.8 us;
// docs/gpu.md), not its maxima: an observation, as a measured kappa is. paamd takes it as kappa
// under --gpu-preempt unless --preemption-ms is given.
inline constexpr double kSliceLaunchUs = 15.0;
inline double SlicedPreemptionMs(int slice_us) { return (slice_us + kSliceLaunchUs) / 1000.0; }

// The lanes of each of `levels` levels: options.lanes[level] where given and above 0, else
// `best_effort` (at least 1) for the lowest of several levels and 1 for the others.
inline std::vector<int> LanesPerLevel(const BackendOptions& options, int levels, int best_effort) {
  std::vector<int> lanes(static_cast<size_t>(std::max(levels, 0)), 1);
  if (levels > 1) lanes.back() = std::max(1, best_effort);
  for (size_t l = 0; l < lanes.size() && l < options.lanes.size(); ++l) {
    if (options.lanes[l] > 0) lanes[l] = options.lanes[l];
  }
  return lanes;
}

// How a CUDA worker waits for its stream work, from "spin" (the stream writes a word into pinned
// host memory and the worker spins on it: the fastest, a busy core per running request), "poll"
// (cudaEventQuery in a loop), "block" (cudaEventSynchronize on a blocking-sync event: the core
// sleeps, the driver's wake-up and launches are slower) or "nap" / "nap:US" (the word of "spin",
// spun on for US microseconds, default kDefaultNapUs, then looked at between sleeps of US: a
// short request completes as under spin, a long one's core mostly sleeps and sees completion up
// to one nap late; the launch path is spin's).
struct CudaWait {
  static constexpr int kDefaultNapUs = 50;
  enum class Kind { kSpin, kPoll, kBlock, kNap };
  Kind kind = Kind::kSpin;
  int nap_us = 0;  // kNap only: 1..10000
};
// `text`'s wait, or an invalid_argument error that quotes it and names the valid forms.
Result<CudaWait> ParseCudaWait(std::string_view text);

// The wait of a CUDA backend built from `options`: options.cuda_wait, else `env_wait` (the
// value of $PAAM_CUDA_WAIT, or null; an error from it says so), else the default. The default
// is "nap" for paamd's workers and "spin" in a client's direct mode: a direct client stands for
// a plain CUDA program, and CUDA's own default for a process with one context spins while it
// waits. A direct client that naps lets other threads onto its core during every kernel, which
// changes the direct-invocation baselines (case study 1's PiCAS chain 1: 141 ms spinning, 291-297 ms
// napping, H100, 2026-11-25).
Result<CudaWait> ResolveCudaWait(const BackendOptions& options, const char* env_wait);

// Creates the backend named by options.kind, or an error naming the valid kinds
// (and saying so when CUDA support was not compiled in or no GPU is present).
Result<std::unique_ptr<Backend>> CreateBackend(const BackendOptions& options, KernelRegistry* registry);

}  // namespace paam
