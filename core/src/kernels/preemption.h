// kernels/preemption.h — preemption points of long CPU kernels.
//
// A GPU switches to a more urgent stream at thread-block boundaries. The CPU backend's "device"
// is a core, and it relies on OS priorities for that, which Linux 6.12 and later override: the
// fair server lends a starved SCHED_OTHER thread (the best-effort bucket's worker, at nice 19)
// up to 50 ms of every second ahead of the SCHED_FIFO buckets' workers. So a long CPU kernel
// calls CpuPreemptionPoint() about every kCpuPreemptionSliceNs of its CPU time, and the CPU
// backend installs a hook for the worker thread that runs it, which parks the kernel while a
// more urgent level runs one.
//
// Thread safety: the hook is the calling thread's own (thread_local).
#pragma once

#include <cstdint>

namespace paam {

// The CPU time between two preemption points of a long kernel: one GPU `spin` block's slice.
inline constexpr uint64_t kCpuPreemptionSliceNs = 20'000;

using CpuPreemptionHook = void (*)(void* context);

// Installs `hook(context)` as this thread's preemption point (nullptr: none).
void SetCpuPreemptionHook(CpuPreemptionHook hook, void* context);

// Calls this thread's hook, if any: returns at once, or once no more urgent work runs.
void CpuPreemptionPoint();

}  // namespace paam
