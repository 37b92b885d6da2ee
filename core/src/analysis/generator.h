// analysis/generator.h — random chain sets for the schedulability study (PAAM paper, Fig. 14).
//
// Seeded and portable: the same (params, seed) gives the same chain set on every platform
// (own xoshiro256** generator; no std:: distributions, whose output is implementation-defined).
//
// A chain set: `chains` chains of `callbacks_per_chain` callbacks, one accelerator. The chains'
// utilizations (E + A) / T are drawn by UUniFast-Discard (Bini & Buttazzo 2005; Davis & Burns
// 2009) around a total of chains * utilization_per_chain, each at most 1. A chain's utilization
// is split between accelerator and CPU by `accelerator_share` (0.5 is the paper's 1:1) and spread
// equally over its callbacks (each callback one CPU part and `segments_per_callback` segments).
// Periods are log-uniform in [period_min, period_max], deadlines equal periods, and chain
// priorities are rate-monotonic. Chains go whole onto `cpus * executors_per_cpu` executors by
// worst-fit decreasing on (E + A) / T (executors block while their callbacks wait for the
// accelerator, so that is their load): the least loaded CPU, there the least loaded executor.
// On each CPU the executors get OS priorities 90, 89, ... in the order of the most critical
// chain each hosts (PiCAS executor priority assignment).
//
// Thread safety: pure functions of their arguments.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "analysis/model.h"
#include "analysis/rta.h"

namespace paam::rta {

// xoshiro256** seeded through SplitMix64.
class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t Next();
  double Uniform();  // [0, 1), 53 random bits

 private:
  std::array<uint64_t, 4> s_{};
};

// Mixes a study seed with coordinates (point, set) into the seed of one chain set, so a set
// does not depend on how the study is batched or threaded.
uint64_t MixSeed(uint64_t seed, uint64_t a, uint64_t b);

// n utilizations summing to `total`, uniformly distributed over that simplex (UUniFast),
// redrawn until each is at most `max_each` (the Discard variant). REQUIRES: total <= n*max_each.
std::vector<double> UUniFastDiscard(int n, double total, double max_each, Rng& rng);

struct GeneratorParams {
  int chains = 10;
  int callbacks_per_chain = 4;
  int segments_per_callback = 1;
  int cpus = 4;
  int executors_per_cpu = 1;
  double utilization_per_chain = 0.1;  // mean (E + A) / T of a chain
  double accelerator_share = 0.5;      // A / (E + A) of every chain; 0.5 = 1:1
  double period_min = 10.0;            // ms
  double period_max = 1000.0;          // ms
  int buckets = 1;
  double overhead = 0.05;              // epsilon, ms
  double preemption = 0.0;             // kappa, ms
  Wait wait = Wait::kSuspend;
};

// Checks the generator's parameters; the message names the bad one.
Status ValidateGeneratorParams(const GeneratorParams& params);

// REQUIRES: ValidateGeneratorParams(params).ok().
System GenerateChainSet(const GeneratorParams& params, uint64_t seed);

// How many of `count` random sets (set i has seed MixSeed(seed, point, i)) are schedulable
// under each handling-time bound.
struct StudyCounts {
  int sets = 0;
  int schedulable_min = 0;          // the PAAM analysis: min(Lemma 2, Lemma 3)
  int schedulable_per_segment = 0;  // Lemma 2 only
  int schedulable_per_chain = 0;    // Lemma 3 only
};
StudyCounts RunStudyBatch(const GeneratorParams& params, uint64_t seed, uint64_t point,
                          uint64_t first_set, int count);

}  // namespace paam::rta
