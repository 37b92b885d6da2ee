// analysis/generator.cc — random chain sets for the schedulability study (see generator.h).
#include "analysis/generator.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace paam::rta {
namespace {

uint64_t SplitMix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

inline uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

Rng::Rng(uint64_t seed) {
  for (uint64_t& word : s_) word = SplitMix64(seed);
}

uint64_t Rng::Next() {
  const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = Rotl(s_[3], 45);
  return result;
}

double Rng::Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

uint64_t MixSeed(uint64_t seed, uint64_t a, uint64_t b) {
  uint64_t x = seed;
  uint64_t h = SplitMix64(x);
  x = h ^ a;
  h = SplitMix64(x);
  x = h ^ b;
  return SplitMix64(x);
}

std::vector<double> UUniFastDiscard(int n, double total, double max_each, Rng& rng) {
  std::vector<double> u(static_cast<size_t>(std::max(n, 0)));
  if (n <= 0) return u;
  for (int attempt = 0; attempt < 100000; ++attempt) {
    double sum = total;
    for (int i = 0; i < n - 1; ++i) {
      const double next = sum * std::pow(rng.Uniform(), 1.0 / (n - 1 - i));
      u[i] = sum - next;
      sum = next;
    }
    u[n - 1] = sum;
    if (*std::max_element(u.begin(), u.end()) <= max_each) return u;
  }
  // Only reachable when total is (nearly) n * max_each: the even split is the one point left.
  std::fill(u.begin(), u.end(), total / n);
  return u;
}

Status ValidateGeneratorParams(const GeneratorParams& p) {
  auto bad = [](const std::string& what) { return Status(Errc::kInvalidArgument, what); };
  if (p.chains < 1) return bad("chains must be at least 1");
  if (p.callbacks_per_chain < 1) return bad("callbacks_per_chain must be at least 1");
  if (p.segments_per_callback < 0) return bad("segments_per_callback must be >= 0");
  if (p.cpus < 1) return bad("cpus must be at least 1");
  if (p.executors_per_cpu < 1) return bad("executors_per_cpu must be at least 1");
  if (!(p.utilization_per_chain > 0 && p.utilization_per_chain <= 1))
    return bad("utilization_per_chain must be in (0, 1]");
  if (!(p.accelerator_share >= 0 && p.accelerator_share <= 1)) return bad("accelerator_share must be in [0, 1]");
  if (p.segments_per_callback == 0 && p.accelerator_share > 0)
    return bad("accelerator_share must be 0 when callbacks have no segments");
  if (!(p.period_min > 0 && p.period_max >= p.period_min)) return bad("need 0 < period_min <= period_max");
  if (p.buckets < 1) return bad("buckets must be at least 1");
  if (!(p.overhead >= 0) || !(p.preemption >= 0)) return bad("overhead and preemption must be >= 0");
  return Status::Ok();
}

System GenerateChainSet(const GeneratorParams& p, uint64_t seed) {
  Rng rng(seed);
  System sys;
  sys.accelerators.push_back({"acc0", p.buckets, p.overhead, p.preemption});
  for (int cpu = 0; cpu < p.cpus; ++cpu) {
    for (int k = 0; k < p.executors_per_cpu; ++k) {
      sys.executors.push_back({"ex" + std::to_string(cpu) + "_" + std::to_string(k), cpu, 90 - k, p.wait});
    }
  }
  const std::vector<double> util = UUniFastDiscard(p.chains, p.chains * p.utilization_per_chain, 1.0, rng);
  const double log_min = std::log(p.period_min);
  const double log_max = std::log(p.period_max);
  std::vector<double> periods(p.chains);
  for (double& t : periods) t = std::exp(log_min + (log_max - log_min) * rng.Uniform());

  // Rate-monotonic chain priorities: the shortest period gets the largest number.
  std::vector<int> by_period(p.chains);
  std::iota(by_period.begin(), by_period.end(), 0);
  std::stable_sort(by_period.begin(), by_period.end(), [&](int a, int b) { return periods[a] < periods[b]; });
  std::vector<int64_t> priority(p.chains);
  for (int rank = 0; rank < p.chains; ++rank) priority[by_period[rank]] = p.chains - rank;

  // Worst-fit decreasing of whole chains by (E + A) / T: onto the least loaded CPU, there onto
  // its least loaded executor.
  std::vector<int> by_util(p.chains);
  std::iota(by_util.begin(), by_util.end(), 0);
  std::stable_sort(by_util.begin(), by_util.end(), [&](int a, int b) { return util[a] > util[b]; });
  std::vector<double> cpu_load(p.cpus, 0.0);
  std::vector<double> load(sys.executors.size(), 0.0);
  std::vector<int> executor_of(p.chains, 0);
  for (int c : by_util) {
    const int cpu = static_cast<int>(std::min_element(cpu_load.begin(), cpu_load.end()) - cpu_load.begin());
    const auto first = load.begin() + cpu * p.executors_per_cpu;
    const int e = static_cast<int>(std::min_element(first, first + p.executors_per_cpu) - load.begin());
    executor_of[c] = e;
    load[e] += util[c];
    cpu_load[cpu] += util[c];
  }
  // PiCAS executor priorities: on each CPU, the executor with the more critical chains (by its
  // highest chain priority) gets the higher OS priority: 90, 89, ...
  std::vector<int64_t> top(sys.executors.size(), -1);
  for (int c = 0; c < p.chains; ++c) top[executor_of[c]] = std::max(top[executor_of[c]], priority[c]);
  for (int cpu = 0; cpu < p.cpus; ++cpu) {
    std::vector<int> local(p.executors_per_cpu);
    std::iota(local.begin(), local.end(), cpu * p.executors_per_cpu);
    std::stable_sort(local.begin(), local.end(), [&](int a, int b) { return top[a] > top[b]; });
    for (int k = 0; k < p.executors_per_cpu; ++k) sys.executors[local[k]].priority = 90 - k;
  }

  const int segments = p.callbacks_per_chain * p.segments_per_callback;
  for (int c = 0; c < p.chains; ++c) {
    Chain ch;
    ch.name = "chain" + std::to_string(c + 1);
    ch.priority = priority[c];
    ch.period = periods[c];
    ch.deadline = periods[c];
    const double cpu_total = util[c] * (1.0 - p.accelerator_share) * periods[c];
    const double acc_total = util[c] * p.accelerator_share * periods[c];
    for (int i = 0; i < p.callbacks_per_chain; ++i) {
      Callback cb;
      cb.name = ch.name + "_" + std::to_string(i + 1);
      cb.executor = executor_of[c];
      cb.wcet = cpu_total / p.callbacks_per_chain;
      for (int j = 0; j < p.segments_per_callback; ++j) cb.segments.push_back({0, acc_total / segments});
      ch.callbacks.push_back(std::move(cb));
    }
    sys.chains.push_back(std::move(ch));
  }
  return sys;
}

StudyCounts RunStudyBatch(const GeneratorParams& params, uint64_t seed, uint64_t point,
                          uint64_t first_set, int count) {
  StudyCounts counts;
  Options min_opt, seg_opt, chain_opt;
  seg_opt.handling = HandlingBound::kPerSegment;
  chain_opt.handling = HandlingBound::kPerChain;
  for (int i = 0; i < count; ++i) {
    const System sys = GenerateChainSet(params, MixSeed(seed, point, first_set + static_cast<uint64_t>(i)));
    ++counts.sets;
    auto schedulable = [&](const Options& opt) {
      Result<Report> r = Analyze(sys, opt);
      return r.ok() && r->schedulable;
    };
    counts.schedulable_min += schedulable(min_opt) ? 1 : 0;
    counts.schedulable_per_segment += schedulable(seg_opt) ? 1 : 0;
    counts.schedulable_per_chain += schedulable(chain_opt) ? 1 : 0;
  }
  return counts;
}

}  // namespace paam::rta
