#include "backend/cpu_backend.h"

#include <pthread.h>
#include <time.h>

#include <algorithm>

#include "common/clock.h"
#include "common/realtime.h"
#include "kernels/preemption.h"

namespace paam {

namespace {
int ResolveDeviceCpu(int requested) {
  if (requested == -1) return OnlineCpus() - 1;  // default: the last core
  if (requested < -1) return -1;                 // explicitly unpinned
  return std::min(requested, OnlineCpus() - 1);
}

int ResolveFairLevels(int requested, int levels) {
  if (requested < 0) return levels > 1 ? 1 : 0;
  return std::min(requested, levels);
}
}  // namespace

CpuBackend::CpuBackend(const BackendOptions& options, bool direct)
    : levels_(std::clamp(options.levels, 1, 16)),
      lanes_(LanesPerLevel(options, levels_, options.best_effort_lanes)),
      device_cpu_(ResolveDeviceCpu(options.device_cpu)),
      realtime_(options.realtime),
      fair_levels_(ResolveFairLevels(options.fair_levels, levels_)),
      rt_priority_base_(options.rt_priority_base),
      direct_(direct),
      running_(std::make_unique<std::atomic<int>[]>(static_cast<size_t>(levels_))) {
  CPU_ZERO(&device_set_);
  if (device_cpu_ >= 0) CPU_SET(device_cpu_, &device_set_);
}

Status CpuBackend::PrepareWorker(int /*unit*/, int level, int /*lane*/, std::string* note) {
  std::string notes = PinThisThread(device_cpu_);
  if (levels_ > 1 || realtime_) {
    const int rank_from_bottom = levels_ - 1 - level;  // 0 for the lowest level
    std::string rt_note;
    // The lowest (best-effort) levels stay SCHED_OTHER on the nice ladder (by default the
    // lowest one when there are several): busy best-effort work at SCHED_FIFO would exhaust the
    // kernel's real-time budget and get every real-time thread on the core throttled (measured:
    // the critical chain stalled 27 ms once a second under sched_rt_runtime_us = 950000). FIFO
    // levels above them preempt them, except in the fair server's 50 ms a second (Linux 6.12+),
    // which Run()'s preemption points cover.
    const bool fifo = realtime_ && level < levels_ - fair_levels_;
    if (fifo) rt_note = SetThisThreadFifo(rt_priority_base_ + rank_from_bottom);
    if (!fifo || !rt_note.empty()) {
      // Nice ladder: level 0 keeps nice 0, the lowest level gets 19.
      const int nice_value = levels_ > 1 ? (19 * level) / (levels_ - 1) : 0;
      std::string nice_note = nice_value != 0 ? SetThisThreadNice(nice_value) : "";
      if (!rt_note.empty()) rt_note += "; using nice " + std::to_string(nice_value) + " instead";
      if (!nice_note.empty()) rt_note += (rt_note.empty() ? "" : "; ") + nice_note;
    }
    if (!rt_note.empty()) notes += (notes.empty() ? "" : "; ") + rt_note;
  }
  if (note != nullptr) *note = notes;
  return Status::Ok();
}

Status CpuBackend::AttachRegion(RegionMemory* region) {
  if (region != nullptr && region->device.has_value()) {
    return Status(Errc::kInvalidArgument,
                  "device buffers (CUDA IPC handles) need the cuda backend; this one is 'cpu' and cannot reach "
                  "GPU memory: send host data instead, or start paamd with --backend cuda");
  }
  return Status::Ok();
}

Status CpuBackend::Run(const KernelCall& call, int level, int /*lane*/, DeviceTimes* times) {
  if (call.device_data) return Status(Errc::kInvalidArgument, "the cpu backend has no device data");
  paam_kernel_args args{};
  args.input = call.region->input;
  args.input_bytes = call.input_bytes;
  args.output = call.region->output;
  args.output_bytes = call.output_bytes;
  for (int i = 0; i < PAAM_MAX_PARAMS; ++i) args.params[i] = call.params[i];
  args.device = PAAM_DEVICE_CPU;
  args.level = level;
  args.host_input = call.region->input;

  cpu_set_t saved;
  const bool pin = direct_ && device_cpu_ >= 0 &&
                   pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved) == 0 &&
                   pthread_setaffinity_np(pthread_self(), sizeof(device_set_), &device_set_) == 0;
  // Less urgent kernels wait at their preemption points while this one runs; this one waits at
  // its own while a more urgent one runs, and stops there once its request is cancelled.
  const bool counted = level >= 0 && level < levels_;
  const bool gated = counted && level > 0;  // level 0 waits for nobody
  Gate gate{this, level, gated, call.cancel, call.ticket, false};
  const bool hooked = gated || call.cancel != nullptr;
  if (hooked) SetCpuPreemptionHook(&CpuBackend::PreemptionPoint, &gate);
  if (counted) running_[level].fetch_add(1, std::memory_order_acq_rel);
  times->start_ns = NowNs();
  char err[160];  // a version 2 kernel's message
  int rc = call.kernel->RunCpu(&args, err, sizeof(err));
  times->end_ns = NowNs();
  if (counted) {
    running_[level].fetch_sub(1, std::memory_order_acq_rel);
    ended_.fetch_add(1, std::memory_order_acq_rel);
    ended_.notify_all();  // no syscall unless a preemption point waits
  }
  if (hooked) SetCpuPreemptionHook(nullptr, nullptr);
  if (pin) pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
  if (!call.kernel->HasCpu()) {
    return Status(Errc::kUnknownKernel, "kernel '" + call.kernel->name + "' has no CPU implementation");
  }
  if (rc != PAAM_KERNEL_OK && gate.stopped) {
    return Status(Errc::kCancelled, "kernel '" + call.kernel->name + "' was stopped at a preemption point");
  }
  if (rc != PAAM_KERNEL_OK) {
    return Status(rc == PAAM_KERNEL_EINVAL ? Errc::kInvalidArgument : Errc::kKernelFailed,
                  err[0] != '\0' ? std::string(err) : "kernel '" + call.kernel->name + "' failed");
  }
  return Status::Ok();
}

bool CpuBackend::MoreUrgentRunning(int level) const {
  for (int l = 0; l < level; ++l) {
    if (running_[l].load(std::memory_order_acquire) > 0) return true;
  }
  return false;
}

bool CpuBackend::MoreUrgentWaiting(int level) const {
  if (!depth_) return false;
  for (int l = 0; l < level; ++l) {
    if (depth_(0, l) > 0) return true;
  }
  return false;
}

bool CpuBackend::PreemptionPoint(void* gate) {
  auto* g = static_cast<Gate*>(gate);
  for (;;) {
    // SYNC POINT: read the count before looking, so that a kernel ending after the look
    // changes it and the wait returns at once; likewise a cancel raised after the look
    // (CancelRaised() counts one after the server stored the word).
    const uint32_t ended = g->backend->ended_.load(std::memory_order_acquire);
    if (g->Cancelled()) return g->stopped = true;
    if (!g->gated) return false;
    if (g->backend->MoreUrgentRunning(g->level)) {
      g->backend->ended_.wait(ended, std::memory_order_acquire);
    } else if (g->backend->MoreUrgentWaiting(g->level)) {
      // Its worker has yet to take it, or to finish it outside the kernel (it may be waiting
      // for this core): look again shortly. A request dropped from the queue unrun (its
      // client died) then holds nobody for long.
      const timespec nap{0, 20'000};
      nanosleep(&nap, nullptr);
    } else {
      return false;
    }
  }
}

void CpuBackend::CancelRaised() {
  ended_.fetch_add(1, std::memory_order_acq_rel);
  ended_.notify_all();
}

}  // namespace paam
