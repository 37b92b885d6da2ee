// backend/cuda/slice_plan.h — how the CUDA built-in kernels cut a request's work into slices:
// the launches ("phases") a request issues and the items each launch covers. Plain C++ (no CUDA
// types): the kernels' host code plans with it, and a CPU-only test checks that the slices cover
// the work exactly once for any size.
//
// Preemption (cuda_kernels.h, docs/gpu.md "Preemption in slices"): a preemptible launch hands out
// its items through a ticket counter in device memory, one counter per phase, so a launch that
// stopped early is resumed by launching it again: the items already taken are skipped, the others
// run once. kMaxPhases bounds the counters a request needs.
//
// Thread safety: pure functions.
#pragma once

#include <algorithm>
#include <cstdint>

namespace paam::cuda {

// Launches of one request that keep a ticket counter (the per-lane state holds this many).
inline constexpr uint64_t kMaxPhases = 1024;
// The slice length of preemptible kernels unless the server names another (--gpu-slice-us).
inline constexpr uint64_t kDefaultPreemptSliceNs = 20'000;

// ---------------------------------------------------------------- ranges
// [begin, end) of slice `i` of `count` near-equal slices of `n` items (the first n % count
// slices one item longer). REQUIRES: count >= 1, i < count.
struct Range {
  uint64_t begin = 0;
  uint64_t end = 0;
};
constexpr Range SliceRange(uint64_t n, uint64_t count, uint64_t i) {
  const uint64_t base = n / count, extra = n % count;
  const uint64_t begin = i * base + std::min(i, extra);
  return {begin, begin + base + (i < extra ? 1 : 0)};
}
// Number of slices of at most `per_slice` items that cover `n` (0 for n == 0).
constexpr uint64_t SliceCount(uint64_t n, uint64_t per_slice) {
  return per_slice == 0 ? 0 : (n + per_slice - 1) / per_slice;
}

// ---------------------------------------------------------------- matmul
// matmul's k dimension in launches of `chunk` (a multiple of kMatmulTileK): one launch per chunk,
// each adding its part to C. kMatmulSliceK keeps a 64x64 tile's block at about 20 us on an
// H100 at 1024^3 (docs/gpu.md).
inline constexpr uint64_t kMatmulTileK = 16;
inline constexpr uint64_t kMatmulSliceK = 128;
inline constexpr uint64_t kMatmulMaxChunk = 1024;

struct KSlices {
  uint64_t chunk = kMatmulSliceK;
  uint64_t count = 0;
  Range At(uint64_t k, uint64_t i) const { return {i * chunk, std::min(k, (i + 1) * chunk)}; }
};
// Not preemptible: chunks of kMatmulSliceK. Preemptible (slice_ns > 0): the chunk scaled to the
// slice length (128 for 20 us), at least kMatmulTileK, at most kMatmulMaxChunk, and long enough
// that the request needs at most kMaxPhases launches (then a block outlasts the slice: a k of
// more than 131072 with 20 us slices).
constexpr KSlices MatmulKSlices(uint64_t k, uint64_t slice_ns) {
  uint64_t chunk = kMatmulSliceK;
  if (slice_ns > 0) {
    const uint64_t scaled = kMatmulSliceK * slice_ns / kDefaultPreemptSliceNs;
    chunk = std::clamp<uint64_t>(scaled / kMatmulTileK * kMatmulTileK, kMatmulTileK, kMatmulMaxChunk);
    const uint64_t least = (SliceCount(k, kMaxPhases) + kMatmulTileK - 1) / kMatmulTileK * kMatmulTileK;
    chunk = std::max(chunk, least);
  }
  return {chunk, SliceCount(k, chunk)};
}

// ---------------------------------------------------------------- spin
// A spin of `duration_ns` holds `width` block slots (of the GPU's `slots`) for `waves` slices of
// `slice_ns` each (waves * slice_ns <= duration_ns, within one ns per wave).
// Not preemptible: a full-width spin is one launch of waves * slots blocks; a narrower one
// launches its waves one by one (at most kMaxSpinWaveLaunches, longer slices past that) so that
// the GPU cannot run its later waves beside the first.
// Preemptible: `width` persistent blocks take `waves * width` slices from one ticket counter, so
// the slice stays at most the server's slice however long the spin.
inline constexpr uint64_t kMaxSpinWaveLaunches = 512;

struct SpinPlan {
  uint64_t width = 0;     // blocks at once
  uint64_t waves = 0;
  uint64_t slice_ns = 0;
  uint64_t launches = 0;  // kernel launches (one when preemptible or full width)
  uint64_t blocks = 0;    // blocks per launch
  uint64_t items = 0;     // slices handed out by the ticket counter (preemptible only)
};
// slice_target_ns: the kernel's own slice (params[1], or its default); preempt_slice_ns: the
// server's slice, 0 when not preemptible. width_pct in 1..100. REQUIRES: slots >= 1,
// duration_ns >= 1, slice_target_ns >= 1.
constexpr SpinPlan PlanSpin(uint64_t duration_ns, uint64_t slice_target_ns, uint64_t slots, uint64_t width_pct,
                            uint64_t preempt_slice_ns) {
  SpinPlan p;
  const bool full = width_pct >= 100;
  p.width = full ? slots : std::max<uint64_t>(1, (slots * width_pct + 99) / 100);
  uint64_t target = slice_target_ns;
  if (preempt_slice_ns > 0) {
    target = std::min(target, preempt_slice_ns);
  } else if (!full) {
    target = std::max(target, SliceCount(duration_ns, kMaxSpinWaveLaunches));
  }
  p.waves = SliceCount(duration_ns, target);
  p.slice_ns = duration_ns / p.waves;
  if (preempt_slice_ns > 0) {
    p.launches = 1;
    p.blocks = p.width;
    p.items = p.waves * p.width;
  } else if (full) {
    p.launches = 1;
    p.blocks = p.waves * p.width;
  } else {
    p.launches = p.waves;
    p.blocks = p.width;
  }
  return p;
}

}  // namespace paam::cuda
