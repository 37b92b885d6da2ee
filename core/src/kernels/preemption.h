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
// The same points are where a kernel stops early when the server cancels its request (its time
// limit passed, or its client went away): the hook then returns true, and the kernel returns
// kCpuKernelStopped at once (its output is not valid). A kernel without preemption points runs
// to its end whatever happens.
//
// Thread safety: the hook is the calling thread's own (thread_local).
#pragma once

#include <cstdint>

namespace paam {

// The CPU time between two preemption points of a long kernel: one GPU `spin` block's slice.
inline constexpr uint64_t kCpuPreemptionSliceNs = 20'000;

// What a kernel returns when it stopped at a preemption point (not one of the kernel ABI's
// codes: only built-in kernels reach the points).
inline constexpr int kCpuKernelStopped = 3;

// Returns true when the kernel must stop (its request was cancelled).
using CpuPreemptionHook = bool (*)(void* context);

// Installs `hook(context)` as this thread's preemption point (nullptr: none).
void SetCpuPreemptionHook(CpuPreemptionHook hook, void* context);

// Calls this thread's hook, if any: returns false at once, or once no more urgent work runs;
// true when the kernel must stop now and return kCpuKernelStopped.
[[nodiscard]] bool CpuPreemptionPoint();

}  // namespace paam
