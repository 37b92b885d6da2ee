// backend/cuda/slice_plan_test.cc — the CUDA kernels' slicing plan (slice_plan.h), and the
// ticket protocol that resumes a stopped launch, simulated on the CPU. No GPU needed.
#include "backend/cuda/slice_plan.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

namespace paam::cuda {
namespace {

// Every slice boundary: slices are contiguous, non-empty where n allows, and cover [0, n) once.
TEST(SlicePlan, RangesCoverEveryItemExactlyOnceForAnyN) {
  for (uint64_t n : {0ull, 1ull, 2ull, 3ull, 7ull, 64ull, 1000ull, 1023ull, 1024ull, 1025ull, 99991ull}) {
    for (uint64_t count : {1ull, 2ull, 3ull, 5ull, 64ull, 1000ull}) {
      uint64_t next = 0, longest = 0, shortest = UINT64_MAX;
      for (uint64_t i = 0; i < count; ++i) {
        const Range r = SliceRange(n, count, i);
        ASSERT_EQ(r.begin, next) << "n=" << n << " count=" << count << " slice " << i;
        ASSERT_LE(r.begin, r.end);
        longest = std::max(longest, r.end - r.begin);
        shortest = std::min(shortest, r.end - r.begin);
        next = r.end;
      }
      EXPECT_EQ(next, n) << "n=" << n << " count=" << count;
      EXPECT_LE(longest - shortest, 1u) << "near-equal slices";
    }
  }
}

TEST(SlicePlan, SliceCountIsTheLeastThatCovers) {
  EXPECT_EQ(SliceCount(0, 10), 0u);
  EXPECT_EQ(SliceCount(1, 10), 1u);
  EXPECT_EQ(SliceCount(10, 10), 1u);
  EXPECT_EQ(SliceCount(11, 10), 2u);
  EXPECT_EQ(SliceCount(5, 0), 0u);
  for (uint64_t n = 1; n < 3000; n += 37) {
    for (uint64_t per : {1ull, 3ull, 128ull, 2048ull}) {
      const uint64_t c = SliceCount(n, per);
      EXPECT_GE(c * per, n);
      EXPECT_LT((c - 1) * per, n);
    }
  }
}

// matmul's k-slices: chunks of kMatmulTileK multiples that cover [0, k) once, as many as the
// unsliced kernel when preemption is off, and never more than kMaxPhases when it is on.
TEST(SlicePlan, MatmulKSlicesCoverKOnceAndRespectThePhaseLimit) {
  EXPECT_EQ(MatmulKSlices(1024, 0).chunk, kMatmulSliceK);
  EXPECT_EQ(MatmulKSlices(1024, kDefaultPreemptSliceNs).chunk, kMatmulSliceK) << "20 us: the unsliced chunk";
  EXPECT_EQ(MatmulKSlices(1024, 10'000).chunk, 64u);
  EXPECT_EQ(MatmulKSlices(1024, 1).chunk, kMatmulTileK) << "at least one tile of k";
  EXPECT_EQ(MatmulKSlices(1024, 1'000'000).chunk, kMatmulMaxChunk);
  for (uint64_t k : {1ull, 15ull, 16ull, 17ull, 127ull, 128ull, 129ull, 1000ull, 4096ull, 131072ull, 131073ull,
                     1ull << 20}) {
    for (uint64_t slice : {0ull, 1ull, 5'000ull, 20'000ull, 100'000ull}) {
      const KSlices ks = MatmulKSlices(k, slice);
      ASSERT_GT(ks.count, 0u);
      EXPECT_EQ(ks.chunk % kMatmulTileK, 0u);
      if (slice > 0) EXPECT_LE(ks.count, kMaxPhases) << "k=" << k << " slice=" << slice;
      uint64_t next = 0;
      for (uint64_t i = 0; i < ks.count; ++i) {
        const Range r = ks.At(k, i);
        ASSERT_EQ(r.begin, next);
        ASSERT_LT(r.begin, r.end) << "no empty k-slice";
        next = r.end;
      }
      EXPECT_EQ(next, k);
    }
  }
}

// spin: the waves add up to the duration (within a ns each), the slice never passes the
// server's when preemptible, and the unsliced plan is the one the kernel always had.
TEST(SlicePlan, SpinWavesAddUpToTheDurationWithinTheSlice) {
  const uint64_t slots = 4224;  // 132 SMs x 32 one-warp blocks (H100)
  for (uint64_t duration : {1ull, 999ull, 20'000ull, 20'001ull, 1'000'000ull, 123'456'789ull}) {
    for (uint64_t width : {1ull, 25ull, 100ull}) {
      for (uint64_t preempt : {0ull, 5'000ull, 20'000ull}) {
        const SpinPlan p = PlanSpin(duration, 20'000, slots, width, preempt);
        ASSERT_GE(p.waves, 1u);
        EXPECT_LE(p.waves * p.slice_ns, duration);
        EXPECT_GE(p.waves * p.slice_ns + p.waves, duration);
        EXPECT_EQ(p.width, width == 100 ? slots : (slots * width + 99) / 100);
        if (preempt > 0) {
          EXPECT_LE(p.slice_ns, preempt);
          EXPECT_EQ(p.launches, 1u);
          EXPECT_EQ(p.blocks, p.width);
          EXPECT_EQ(p.items, p.waves * p.width);
        } else if (width == 100) {
          EXPECT_EQ(p.launches, 1u);
          EXPECT_EQ(p.blocks, p.waves * slots);
        } else {
          EXPECT_EQ(p.launches, p.waves);
          EXPECT_LE(p.launches, kMaxSpinWaveLaunches);
        }
      }
    }
  }
  // A spin's own longer slice is cut to the server's.
  EXPECT_EQ(PlanSpin(1'000'000, 100'000, slots, 100, 20'000).slice_ns, 20'000u);
}

// The ticket protocol of a preemptible launch (cuda_kernels.cu, TakeItem), on CPU threads in
// place of blocks: each "block" checks the pause word, takes a ticket and always runs the item it
// took; a pause stops the launch early; a resumed launch (the same counter) runs what is left.
// Over many random pauses every item runs exactly once.
TEST(SlicePlan, TicketsResumeAStoppedLaunchWithEveryItemRunOnce) {
  std::mt19937_64 rng(7);
  for (uint64_t items : {1ull, 5ull, 64ull, 1000ull, 4097ull}) {
    std::vector<std::atomic<int>> runs(items);
    std::atomic<uint64_t> next{0};
    std::atomic<bool> pause{false};
    int launches = 0;
    while (next.load() < items) {
      ASSERT_LT(++launches, 10000) << "no progress";
      pause = false;
      const uint64_t stop_after = rng() % (items + 1);  // the host raises the word about here
      std::vector<std::thread> blocks;
      for (int b = 0; b < 4; ++b) {
        blocks.emplace_back([&] {
          for (;;) {
            if (pause.load()) return;
            const uint64_t t = next.fetch_add(1);
            if (t >= items) return;
            runs[t].fetch_add(1);
            if (t >= stop_after) pause = true;  // a leader saw the urgent word
          }
        });
      }
      for (auto& t : blocks) t.join();
    }
    for (uint64_t i = 0; i < items; ++i) ASSERT_EQ(runs[i].load(), 1) << "item " << i << " of " << items;
  }
}

}  // namespace
}  // namespace paam::cuda
