// backend/cpu_backend.h — the default backend: one CPU core plays the accelerator.
//
// All workers are pinned to the "device core" (BackendOptions::device_cpu; default the last
// online core), so requests contend for one device as they would for a GPU. Levels: as many as
// asked (1 by default). Higher levels preempt lower ones through OS priorities on that core:
// SCHED_FIFO (base + level rank) when `realtime` is set and the OS permits; otherwise a nice
// ladder (level 0 at nice 0, the lowest at nice 19), which the OS always permits and which gives
// the higher level ~98% of the core under contention. With several levels the lowest
// (best-effort) one stays on the nice ladder even with `realtime`, so best-effort load cannot run
// the core's real-time budget dry; BackendOptions::fair_levels keeps more of the lowest levels
// there (those whose chains are all best-effort). The lowest level may have several lanes
// (best-effort concurrency), and BackendOptions::lanes gives any level several: its workers
// then share the device core at that level's priority.
// OS priorities are not the whole story: Linux's fair server (6.12+) runs that nice-19 worker
// for up to 50 ms a second ahead of the SCHED_FIFO ones. So a long kernel (`spin`) also stops at
// preemption points (kernels/preemption.h) while a more urgent level runs a kernel or has
// requests waiting in the server's queue, as a GPU switches streams between thread blocks.
// Those points are also where a cancelled request's kernel stops (KernelCall::cancel).
//
// Thread safety: see backend.h. In direct mode (no server) Run() pins the calling thread to the
// device core for the duration of the kernel and restores its affinity afterwards.
#pragma once

#include <sched.h>

#include <atomic>
#include <memory>
#include <utility>
#include <vector>

#include "backend/backend.h"

namespace paam {

class CpuBackend final : public Backend {
 public:
  CpuBackend(const BackendOptions& options, bool direct);

  std::string_view name() const override { return "cpu"; }
  int Levels() const override { return levels_; }
  int Lanes(int level) const override { return lanes_[static_cast<size_t>(level)]; }
  int ReservedCpu() const override { return device_cpu_; }
  // The lowest levels that stay on the nice ladder under `realtime` (BackendOptions::fair_levels
  // resolved and clamped to 0..Levels()).
  int FairLevels() const { return fair_levels_; }

  Status PrepareWorker(int unit, int level, int lane, std::string* note) override;
  // Refuses regions with device buffers (CUDA IPC): the CPU device cannot reach GPU memory.
  Status AttachRegion(RegionMemory* region) override;
  void DetachRegion(RegionMemory*) override {}
  Status Run(const KernelCall& call, int level, int lane, DeviceTimes* times) override;
  void SetQueueDepth(QueueDepth depth) override { depth_ = std::move(depth); }
  // Wakes the kernels parked at their preemption points, so that a cancelled one stops.
  void CancelRaised() override;

  int device_cpu() const { return device_cpu_; }

 private:
  const int levels_;
  const std::vector<int> lanes_;  // per level (LanesPerLevel)
  const int device_cpu_;  // -1: do not pin
  const bool realtime_;
  const int fair_levels_;
  const int rt_priority_base_;
  const bool direct_;
  cpu_set_t device_set_;
  // Kernels running per level, and a count of kernels ended (waited on by the preemption points
  // of less urgent kernels; CancelRaised() counts one more to wake them).
  std::unique_ptr<std::atomic<int>[]> running_;
  std::atomic<uint32_t> ended_{0};

  struct Gate {  // a running kernel's preemption-point context
    CpuBackend* backend;
    int level;
    bool gated;                           // waits for more urgent levels
    const std::atomic<uint64_t>* cancel;  // KernelCall::cancel and ticket
    uint64_t ticket;
    bool stopped;                         // the kernel was told to stop
    bool Cancelled() const {
      return cancel != nullptr && ticket != 0 && cancel->load(std::memory_order_acquire) == ticket;
    }
  };
  QueueDepth depth_;  // the server's queues (unset in direct mode)

  bool MoreUrgentRunning(int level) const;
  bool MoreUrgentWaiting(int level) const;
  static bool PreemptionPoint(void* gate);
};

}  // namespace paam
