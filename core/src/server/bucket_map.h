// server/bucket_map.h — down-sampling of chain priorities onto buckets (rule R2).
//
// Exactly as ANALYSIS.md defines it: sort the distinct chain priorities of the chains on one
// accelerator from highest to lowest; with N of them and n buckets, the chain of 0-based rank
// `rank` goes to bucket floor(rank * n / N) (0 = highest-priority bucket).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace paam {

// `distinct_desc` must hold distinct priorities sorted from highest to lowest and contain
// `priority`. Returns the bucket index in [0, buckets).
inline int BucketOf(uint32_t priority, const std::vector<uint32_t>& distinct_desc, int buckets) {
  if (buckets <= 1 || distinct_desc.empty()) return 0;
  auto it = std::find(distinct_desc.begin(), distinct_desc.end(), priority);
  const auto rank = static_cast<uint64_t>(it - distinct_desc.begin());
  const auto n = static_cast<uint64_t>(buckets);
  const auto count = static_cast<uint64_t>(distinct_desc.size());
  return static_cast<int>(std::min<uint64_t>(rank * n / count, n - 1));
}

// Sorted-descending distinct copy of `priorities`.
inline std::vector<uint32_t> DistinctDescending(std::vector<uint32_t> priorities) {
  std::sort(priorities.begin(), priorities.end(), [](uint32_t a, uint32_t b) { return a > b; });
  priorities.erase(std::unique(priorities.begin(), priorities.end()), priorities.end());
  return priorities;
}

}  // namespace paam
