// common/bucket_map.h — down-sampling of chain priorities onto buckets (rule R2). The one definition,
// used by the server (runtime mapping) and the analysis (the mapping it assumes).
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
template <typename Priority>
int BucketOf(Priority priority, const std::vector<Priority>& distinct_desc, int buckets) {
  if (buckets <= 1 || distinct_desc.empty()) return 0;
  auto it = std::find(distinct_desc.begin(), distinct_desc.end(), priority);
  const auto rank = static_cast<uint64_t>(it - distinct_desc.begin());
  const auto n = static_cast<uint64_t>(buckets);
  const auto count = static_cast<uint64_t>(distinct_desc.size());
  return static_cast<int>(std::min<uint64_t>(rank * n / count, n - 1));
}

// Sorted-descending distinct copy of `priorities`.
template <typename Priority>
std::vector<Priority> DistinctDescending(std::vector<Priority> priorities) {
  std::sort(priorities.begin(), priorities.end(), [](Priority a, Priority b) { return a > b; });
  priorities.erase(std::unique(priorities.begin(), priorities.end()), priorities.end());
  return priorities;
}

}  // namespace paam
