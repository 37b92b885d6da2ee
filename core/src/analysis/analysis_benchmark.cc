// How long the analysis of a random chain set takes (Google Benchmark; prints, asserts nothing).
//   build/analysis/core/src/analysis/analysis_benchmark
#include <benchmark/benchmark.h>

#include "analysis/generator.h"
#include "analysis/rta.h"

namespace paam::rta {
namespace {

void BM_Analyze(benchmark::State& state) {
  GeneratorParams p;
  p.chains = static_cast<int>(state.range(0));
  p.cpus = 4;
  p.executors_per_cpu = 2;
  p.utilization_per_chain = 2.0 / p.chains;  // about half the accelerator and CPUs busy
  p.buckets = 4;
  p.preemption = 0.1;
  const System sys = GenerateChainSet(p, 2026);
  Options opt;
  opt.stop_at_deadline = state.range(1) == 0;  // 0: ANALYSIS.md's early exit; 1: full bounds
  for (auto _ : state) {
    Result<Report> r = Analyze(sys, opt);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_Analyze)
    ->ArgNames({"chains", "full"})
    ->ArgsProduct({{10, 50, 200}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace paam::rta

BENCHMARK_MAIN();
