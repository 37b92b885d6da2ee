// Hand-computed cases of the PAAM response-time analysis (ANALYSIS.md), plus property tests.
// Each expected value is derived in the comment above it, step by step, so a reader can check
// the arithmetic against the equations without running anything.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "analysis/generator.h"
#include "analysis/rta.h"

namespace paam::rta {
namespace {

constexpr double kTol = 1e-9;

struct Cb {
  int executor;
  double wcet;
  std::vector<double> segments;  // on accelerator 0
};

// One accelerator, `n` buckets, epsilon, kappa.
System MakeSystem(int buckets = 1, double overhead = 0.0, double preemption = 0.0) {
  System s;
  s.accelerators.push_back({"acc", buckets, overhead, preemption});
  return s;
}

int AddExecutor(System& s, int cpu, int priority, Wait wait = Wait::kSuspend) {
  s.executors.push_back({"ex" + std::to_string(s.executors.size()), cpu, priority, wait});
  return static_cast<int>(s.executors.size()) - 1;
}

int AddChain(System& s, const std::string& name, int64_t priority, double period,
             std::initializer_list<Cb> callbacks, double deadline = 0.0, bool best_effort = false) {
  Chain c;
  c.name = name;
  c.priority = priority;
  c.period = period;
  c.deadline = deadline;
  c.best_effort = best_effort;
  int i = 0;
  for (const Cb& cb : callbacks) {
    Callback x;
    x.name = name + "_" + std::to_string(++i);
    x.executor = cb.executor;
    x.wcet = cb.wcet;
    for (double a : cb.segments) x.segments.push_back({0, a});
    c.callbacks.push_back(x);
  }
  s.chains.push_back(c);
  return static_cast<int>(s.chains.size()) - 1;
}

Report MustAnalyze(const System& s, Options opt = {}) {
  Result<Report> r = Analyze(s, opt);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r.value() : Report{};
}

// ---------------------------------------------------------------------------------------------
// Lemma 4 (PiCAS): chains without accelerator segments, one executor.
TEST(Lemma4, BlockingOwnCpuAndHigherPriorityInterferenceWithCarryIn) {
  System s = MakeSystem();
  int ex = AddExecutor(s, 0, 90);
  int h = AddChain(s, "H", 3, 10, {{ex, 2, {}}});
  int c = AddChain(s, "C", 2, 50, {{ex, 3, {}}, {ex, 4, {}}});
  int l = AddChain(s, "L", 1, 100, {{ex, 5, {}}, {ex, 1, {}}});
  Report r = MustAnalyze(s);

  // H: B = longest callback of a lower chain on ex = max(3, 4, 5, 1) = 5; E = 2. R = 7.
  EXPECT_NEAR(r.chains[h].wcrt, 7.0, kTol);
  EXPECT_NEAR(r.chains[h].blocking, 5.0, kTol);
  // C: B = 5 (L's first callback), E = 3 + 4 = 7, start R = 12.
  //   R = 12 + (ceil(12/10) + 1) * 2 = 12 + 3*2 = 18
  //   R = 12 + (ceil(18/10) + 1) * 2 = 18  -> fixed point 18.
  EXPECT_NEAR(r.chains[c].wcrt, 18.0, kTol);
  EXPECT_NEAR(r.chains[c].interference, 6.0, kTol);
  // L: B = 0, E = 6, hp = {H (T 10, 2), C (T 50, 7)}.
  //   R1 = 6 + (ceil(0.6)+1)*2 + (ceil(0.12)+1)*7 = 6 + 4 + 14 = 24
  //   R2 = 6 + (ceil(2.4)+1)*2 + (ceil(0.48)+1)*7 = 6 + 8 + 14 = 28
  //   R3 = 6 + (ceil(2.8)+1)*2 + (ceil(0.56)+1)*7 = 28 -> fixed point 28.
  EXPECT_NEAR(r.chains[l].wcrt, 28.0, kTol);
  EXPECT_TRUE(r.schedulable);
}

TEST(Lemma4, ExecutorOfHigherOsPriorityOnTheSameCpuInterferes) {
  System s = MakeSystem();
  int lo = AddExecutor(s, 0, 80);
  int hi = AddExecutor(s, 0, 90);
  int other_cpu = AddExecutor(s, 1, 99);
  int c = AddChain(s, "C", 5, 100, {{lo, 10, {}}});
  AddChain(s, "P", 1, 30, {{hi, 4, {}}});          // lower chain priority, higher executor
  AddChain(s, "X", 9, 5, {{other_cpu, 4, {}}});    // another CPU: no interference at all
  Report r = MustAnalyze(s);
  // C: E = 10, hpp = {P (T 30, 4)}.  R = 10 + (ceil(10/30)+1)*4 = 18; 10 + (1+1)*4 = 18.
  EXPECT_NEAR(r.chains[c].wcrt, 18.0, kTol);
  EXPECT_NEAR(r.chains[c].subchains[0].interference_cpu, 8.0, kTol);
  EXPECT_NEAR(r.chains[c].subchains[0].interference_executor, 0.0, kTol);
}

TEST(ArrivalBound, ExactMultipleOfThePeriodCountsTheCarryInJob) {
  System s = MakeSystem();
  int ex = AddExecutor(s, 0, 90);
  AddChain(s, "H", 2, 10, {{ex, 1, {}}});
  int c = AddChain(s, "C", 1, 100, {{ex, 10, {}}});
  Report r = MustAnalyze(s);
  // R0 = 10; R1 = 10 + (ceil(10/10)+1)*1 = 12; R2 = 10 + (ceil(1.2)+1)*1 = 13;
  // R3 = 10 + (ceil(1.3)+1)*1 = 13 -> 13.
  EXPECT_NEAR(r.chains[c].wcrt, 13.0, kTol);
}

// ---------------------------------------------------------------------------------------------
// Lemma 2 and Lemma 3: neither dominates. Chains on executors of their own CPUs, so the only
// interaction is on the accelerator (n = 1, epsilon = kappa = 0).
TEST(HandlingTime, PerSegmentBoundWinsForFewSegmentsAndALongResponse) {
  System s = MakeSystem();
  int h = AddChain(s, "h", 2, 10, {{AddExecutor(s, 0, 90), 1, {1}}});
  int c = AddChain(s, "c", 1, 100, {{AddExecutor(s, 1, 90), 50, {2}}});
  // h: A = 1, B = 2 (c is lower, same bucket): H = 3; R = 1 + 3 = 4.
  // c, Lemma 2: H = 2 + (ceil(2/10)+1)*1 = 4; again 2 + (ceil(0.4)+1)*1 = 4 -> H^seg = 4.
  // c, Lemma 3: H^chain(R) = 2 + (ceil(R/10)+1)*1.
  // min: start R = 50 -> 50 + min(4, 2 + 6) = 54 -> 50 + min(4, 2 + 7) = 54. R = 54.
  Report r = MustAnalyze(s);
  EXPECT_NEAR(r.chains[h].wcrt, 4.0, kTol);
  EXPECT_NEAR(r.chains[c].wcrt, 54.0, kTol);
  EXPECT_NEAR(r.chains[c].subchains[0].handling_per_segment, 4.0, kTol);
  EXPECT_NEAR(r.chains[c].subchains[0].handling_per_chain, 9.0, kTol);  // 2 + (ceil(5.4)+1)
  // Lemma 3 alone: R = 52 + (ceil(R/10)+1): 50 -> 58 -> 59 -> 59.
  Options per_chain;
  per_chain.handling = HandlingBound::kPerChain;
  EXPECT_NEAR(MustAnalyze(s, per_chain).chains[c].wcrt, 59.0, kTol);
  Options per_segment;
  per_segment.handling = HandlingBound::kPerSegment;
  EXPECT_NEAR(MustAnalyze(s, per_segment).chains[c].wcrt, 54.0, kTol);
}

TEST(HandlingTime, PerChainBoundWinsForManySegmentsAndAShortResponse) {
  System s = MakeSystem();
  int h = AddChain(s, "h", 2, 100, {{AddExecutor(s, 0, 90), 1, {10}}});
  int ex = AddExecutor(s, 1, 90);
  int c = AddChain(s, "c", 1, 100, {{ex, 1, {1}}, {ex, 1, {1}}, {ex, 1, {1}}, {ex, 1, {1}}});
  // c, Lemma 2 per segment: H = 1 + (ceil(1/100)+1)*10 = 21; 1 + (ceil(0.21)+1)*10 = 21.
  //   Four segments: H^seg = 84.
  // c, Lemma 3: H^chain(R) = 4*1 + (ceil(R/100)+1)*10 = 24 for 0 < R <= 100 (h counted once).
  // R: start B + E + H* = 0 + 4 + min(84, 24) = 28; no CPU interference -> R = 28.
  Report r = MustAnalyze(s);
  EXPECT_NEAR(r.chains[c].wcrt, 28.0, kTol);
  EXPECT_NEAR(r.chains[c].subchains[0].handling_per_segment, 84.0, kTol);
  EXPECT_NEAR(r.chains[c].subchains[0].handling_per_chain, 24.0, kTol);
  // h: B = largest A* of a lower segment in its bucket = 1; H = 10 + 1 = 11; R = 1 + 11 = 12.
  EXPECT_NEAR(r.chains[h].wcrt, 12.0, kTol);
  Options per_segment;
  per_segment.handling = HandlingBound::kPerSegment;
  EXPECT_NEAR(MustAnalyze(s, per_segment).chains[c].wcrt, 88.0, kTol);  // 4 + 84
}

// ---------------------------------------------------------------------------------------------
// Buckets: floor(rank*n/N), blocking only from lower chains of the same bucket, A* = A + 2*kappa,
// H* = H + delta*epsilon.
TEST(Buckets, DownSamplingFloorOfRankTimesNOverN) {
  System s = MakeSystem(/*buckets=*/6);
  int ex = AddExecutor(s, 0, 90);
  for (int p = 8; p >= 1; --p) AddChain(s, "c" + std::to_string(p), p, 100, {{ex, 1, {1}}});
  AddChain(s, "cpu_only", 100, 100, {{ex, 1, {}}});  // uses no accelerator: no bucket
  auto b = AssignBuckets(s);
  // N = 8 users, n = 6: ranks 0..7 -> floor(r*6/8) = 0,0,1,2,3,3,4,5.
  EXPECT_EQ(b[0], (std::vector<int>{0, 0, 1, 2, 3, 3, 4, 5, -1}));
  s.accelerators[0].buckets = 1;
  EXPECT_EQ(AssignBuckets(s)[0], (std::vector<int>{0, 0, 0, 0, 0, 0, 0, 0, -1}));
}

// Blocking::kCallback: a lower chain's callback on the executor blocks for as long as it holds
// it, i.e. with its accelerator requests (Lemma 2 at its own priority, plus epsilon each).
TEST(Blocking, CallbackModeChargesTheLowerCallbacksRequests) {
  System s = MakeSystem(1, /*overhead=*/0.5);
  int ex = AddExecutor(s, 0, 90);
  int h = AddChain(s, "H", 3, 100, {{ex, 1, {}}});
  int l = AddChain(s, "L", 1, 200, {{ex, 2, {10}}});
  int g = AddChain(s, "G", 2, 100, {{AddExecutor(s, 1, 90), 1, {3}}});  // other CPU, HP on acc
  Options callback;
  callback.blocking = Blocking::kCallback;
  Report cpu = MustAnalyze(s);
  Report cb = MustAnalyze(s, callback);
  // CPU mode (ANALYSIS.md): B_H = L's E = 2; R_H = 2 + 1 = 3.
  EXPECT_NEAR(cpu.chains[h].blocking, 2.0, kTol);
  EXPECT_NEAR(cpu.chains[h].wcrt, 3.0, kTol);
  // Callback mode: L's segment, Lemma 2 with hps = {G's 3, T 100} and no lower chain in the
  //   bucket: 10 -> 10 + (ceil(0.1)+1)*3 = 16 -> 10 + (ceil(0.16)+1)*3 = 16 (fixed).
  //   Hold = E 2 + 16 + epsilon 0.5 = 18.5 = B_H; R_H = 18.5 + 1 = 19.5.
  EXPECT_NEAR(cb.chains[h].blocking, 18.5, kTol);
  EXPECT_NEAR(cb.chains[h].wcrt, 19.5, kTol);
  // Nothing below L, and G is on its own executor: their bounds are the same in both modes.
  EXPECT_NEAR(cb.chains[l].wcrt, cpu.chains[l].wcrt, kTol);
  EXPECT_NEAR(cb.chains[g].wcrt, cpu.chains[g].wcrt, kTol);
  // A lower callback without segments blocks with its E alone in both modes.
  System t = MakeSystem(1, 0.5);
  int ex2 = AddExecutor(t, 0, 90);
  int h2 = AddChain(t, "H", 2, 100, {{ex2, 1, {}}});
  AddChain(t, "L", 1, 200, {{ex2, 4, {}}});
  EXPECT_NEAR(MustAnalyze(t, callback).chains[h2].blocking, 4.0, kTol);
}

TEST(Buckets, BlockingOnlyWithinTheBucketAndPreemptionInflation) {
  System s = MakeSystem(/*buckets=*/2, /*overhead=*/0.1, /*preemption=*/0.5);
  int x = AddChain(s, "X", 3, 100, {{AddExecutor(s, 0, 90), 1, {2}}});
  int y = AddChain(s, "Y", 2, 100, {{AddExecutor(s, 1, 90), 1, {4}}});
  int z = AddChain(s, "Z", 1, 100, {{AddExecutor(s, 2, 90), 1, {8}}});
  // N = 3, n = 2: buckets X 0, Y floor(2/3) = 0, Z floor(4/3) = 1.
  // A* = A + 2*0.5: X 3, Y 5, Z 9.
  // X: B = 5 (Y, same bucket; Z is in bucket 1 and is preempted). H = 3 + 5 = 8.
  //    H* = 8 + 1*0.1 = 8.1. R = 1 + 8.1 = 9.1.
  // Y: B = 0 (nothing lower in bucket 0). H = 5 + (ceil(H/100)+1)*3 = 11. R = 1 + 11.1 = 12.1.
  // Z: H = 9 + 2*3 + 2*5 = 25. R = 1 + 25.1 = 26.1.
  Report r = MustAnalyze(s);
  EXPECT_NEAR(r.chains[x].wcrt, 9.1, kTol);
  EXPECT_NEAR(r.chains[x].handling, 8.1, kTol);
  EXPECT_NEAR(r.chains[y].wcrt, 12.1, kTol);
  EXPECT_NEAR(r.chains[z].wcrt, 26.1, kTol);
  // One bucket: kappa is not charged (nothing is preempted), A* = A; X is blocked by the
  // longest lower segment, Z's 8: H = 2 + 8 = 10, R = 1 + 10 + 0.1 = 11.1.
  s.accelerators[0].buckets = 1;
  EXPECT_NEAR(MustAnalyze(s).chains[x].wcrt, 11.1, kTol);
}

TEST(Buckets, BestEffortChainInALowerBucketCostsACriticalChainOnlyKappa) {
  // ANALYSIS.md has no best-effort rule of its own: a best-effort chain is a chain of lower
  // priority. In a lower bucket it is in no critical segment's hps and blocks nothing (Eq. 3,
  // same bucket only); its executor below the critical one on the same CPU is in no hpp.
  // What a critical segment pays is the 2*kappa in A*, which it pays whenever n > 1.
  System s = MakeSystem(/*buckets=*/2, /*overhead=*/0.1, /*preemption=*/0.5);
  int c = AddChain(s, "critical", 2, 100, {{AddExecutor(s, 0, 90), 1, {4}}});
  int be = AddChain(s, "be", 1, 60, {{AddExecutor(s, 0, 80), 5, {50}}}, 0, /*best_effort=*/true);
  // N = 2, n = 2: critical bucket 0, be floor(1*2/2) = 1. critical: A* = 4 + 2*0.5 = 5,
  // B = 0, no hps: H = 5, H* = 5.1, R = 1 + 5.1 = 6.1 (B_c = 0: be is on another executor).
  EXPECT_NEAR(MustAnalyze(s).chains[c].wcrt, 6.1, kTol);
  // Far more best-effort work (accelerator demand 1000/600 > 1, be unbounded): same bound.
  s.chains[be].callbacks[0].wcet = 50;
  s.chains[be].callbacks[0].segments = {{0, 500}, {0, 500}};
  s.chains[be].period = 600;
  s.chains[be].deadline = 0;
  EXPECT_NEAR(MustAnalyze(s).chains[c].wcrt, 6.1, kTol);
  // One bucket: no kappa, but be shares the bucket and blocks with its longest segment:
  // H = 4 + 500 = 504, R = 1 + 504 + 0.1 = 505.1.
  s.accelerators[0].buckets = 1;
  EXPECT_NEAR(MustAnalyze(s).chains[c].wcrt, 505.1, kTol);
}

// ---------------------------------------------------------------------------------------------
// Theorem 1: spin versus suspend of an executor of higher OS priority on the same CPU.
System SpinSuspendSystem(Wait wait) {
  System s = MakeSystem(1, /*overhead=*/0.5);
  int hi = AddExecutor(s, 0, 95, wait);
  int lo = AddExecutor(s, 0, 90);
  AddChain(s, "P", 2, 20, {{hi, 2, {3}}});
  AddChain(s, "Q", 1, 100, {{lo, 10, {}}});
  return s;
}

TEST(Theorem1, SpinningHigherExecutorChargesItsWholeHandlingTime) {
  // P: H = 3 (no other segment), H* = 3 + 0.5 = 3.5, R = 2 + 3.5 = 5.5.
  // Q: hpp = {P}, spin: E_P + H*_P = 5.5 per job.
  //   R = 10 -> 10 + (ceil(0.5)+1)*5.5 = 21 -> 10 + (ceil(1.05)+1)*5.5 = 26.5
  //   -> 10 + (ceil(1.325)+1)*5.5 = 26.5.
  Report r = MustAnalyze(SpinSuspendSystem(Wait::kSpin));
  EXPECT_NEAR(r.chains[0].wcrt, 5.5, kTol);
  EXPECT_NEAR(r.chains[1].wcrt, 26.5, kTol);
}

TEST(Theorem1, SuspendingHigherExecutorChargesOnlyTheServerOverhead) {
  // Q: suspend: E_P + delta_P*epsilon = 2 + 0.5 = 2.5 per job.
  //   R = 10 -> 10 + (ceil(0.5)+1)*2.5 = 15 -> 10 + (ceil(0.75)+1)*2.5 = 15.
  Report r = MustAnalyze(SpinSuspendSystem(Wait::kSuspend));
  EXPECT_NEAR(r.chains[1].wcrt, 15.0, kTol);
}

TEST(Theorem1, HigherExecutorChainOfLowerChainPriorityUsesLemma2) {
  System s = MakeSystem();
  AddChain(s, "G", 3, 100, {{AddExecutor(s, 1, 90), 1, {4}}});
  int lo = AddExecutor(s, 0, 90);
  int hi = AddExecutor(s, 0, 95, Wait::kSpin);
  int q = AddChain(s, "Q", 2, 200, {{lo, 10, {}}});
  int p = AddChain(s, "P", 1, 100, {{hi, 0.5, {1}}, {hi, 0.5, {1}}, {hi, 0.5, {1}}, {hi, 0.5, {1}}});
  Report r = MustAnalyze(s);
  // P (analysed last): Lemma 2 per segment 1 + (0+1+1)*4 = 9, H^seg = 36;
  //   Lemma 3: 4 + 2*4 = 12. R_P = 2 + min(36, 12) = 14.
  EXPECT_NEAR(r.chains[p].wcrt, 14.0, kTol);
  // Q (analysed before P, P sits on a spinning executor of higher OS priority on Q's CPU):
  //   P's H* is not known yet, so Lemma 2's H^seg + delta*eps = 36 is used: 2 + 36 = 38/job.
  //   R = 10 -> 10 + (ceil(0.1)+1)*38 = 86 -> 10 + (ceil(0.86)+1)*38 = 86.
  //   (With P's final H* = 12 it would have been 10 + 2*14 = 38.)
  EXPECT_NEAR(r.chains[q].wcrt, 86.0, kTol);
}

TEST(Theorem1, SameExecutorHigherChainChargesCpuPlusHandlingPerJob) {
  System s = MakeSystem(1, /*overhead=*/0.1);
  int ex = AddExecutor(s, 0, 90);
  int k = AddChain(s, "K", 5, 10, {{ex, 1, {}}});
  int m = AddChain(s, "M", 4, 100, {{ex, 2, {1}}, {ex, 3, {}}, {ex, 4, {2}}, {ex, 1, {}}});
  AddChain(s, "W", 6, 50, {{AddExecutor(s, 1, 90), 0, {0.5}}});  // other CPU, accelerator only
  Report r = MustAnalyze(s);
  // W: highest, H = 0.5 + B (largest lower segment: M's 2) = 2.5, H* = 2.6, R = 2.6.
  // K: B = 4 (M's longest callback), E = 1, no segment. R = 5.
  EXPECT_NEAR(r.chains[k].wcrt, 5.0, kTol);
  // M (one sub-chain, all on ex): B = 0, E = 10, delta = 2.
  //   Lemma 2: segment 1: 1 + (ceil(1/50)+1)*0.5 = 2; segment 2: 2 + 2*0.5 = 3 -> H^seg = 5.
  //   Lemma 3: 3 + (ceil(R/50)+1)*0.5.
  //   start: 10 + min(5, 3 + (ceil(R/50)+1)*0.5) + 0.2: R=10.2 -> 10 + 4 + 0.2 = 14.2 (fixed).
  //   Theorem 1 with hp = {K: E 1 + H* 0, T 10}:
  //   R = 14.2 + (ceil(1.42)+1)*1 = 17.2 -> 14.2 + (ceil(1.72)+1) = 17.2. H* stays 4.2.
  EXPECT_NEAR(r.chains[m].wcrt, 17.2, kTol);
  EXPECT_NEAR(r.chains[m].handling, 4.2, kTol);
  EXPECT_EQ(r.chains[m].subchains.size(), 1u);
}

TEST(Theorem1, SameExecutorHigherChainWithASegmentChargesItsFinalHStarPerJob) {
  // The hp term of Theorem 1 is mu_h(R) * (E_h + H*_h) whatever the executor's wait mode: on
  // the executor itself a waiting callback holds it (spin) or, suspended, still does not let
  // the non-preemptive executor run another callback; ANALYSIS.md (6) and rta.cc charge
  // E_h + H*_h in both cases (only hpp, other executors of the CPU, tell spin from suspend).
  // So the same numbers are expected for both modes.
  for (Wait wait : {Wait::kSpin, Wait::kSuspend}) {
    SCOPED_TRACE(wait == Wait::kSpin ? "spin" : "suspend");
    System s = MakeSystem(1, /*overhead=*/0.5);
    int ex = AddExecutor(s, 0, 90, wait);
    int h = AddChain(s, "H", 2, 20, {{ex, 2, {3}}});
    int l = AddChain(s, "L", 1, 100, {{ex, 10, {}}});
    int g = AddChain(s, "G", 3, 10, {{AddExecutor(s, 1, 90), 1, {1}}});  // other CPU
    Report r = MustAnalyze(s);
    // G (highest): A* = 1, B = longest lower segment in the bucket = H's 3: H = 4,
    //   H* = 4 + 0.5 = 4.5, R = 1 + 4.5 = 5.5.
    EXPECT_NEAR(r.chains[g].wcrt, 5.5, kTol);
    // H: B_c = L's callback 10 (lower chain, same executor), E = 2, delta = 1.
    //   Lemma 2: 3 + (ceil(H/10)+1)*1: 3 -> 3 + 2 = 5 -> 3 + (ceil(0.5)+1) = 5: H^seg = 5.
    //   Lemma 3: H^chain(R) = 3 + (ceil(R/10)+1)*1.
    //   start 10 + 2 + 0.5 = 12.5 -> 12 + min(5, 3 + (ceil(1.25)+1)) + 0.5 = 12 + 5 + 0.5 = 17.5
    //   -> 12 + min(5, 3 + (ceil(1.75)+1)) + 0.5 = 17.5 (fixed). No hp, no hpp: R_H = 17.5,
    //   final H*_H = min(5, 6) + 0.5 = 5.5 > 0.
    EXPECT_NEAR(r.chains[h].wcrt, 17.5, kTol);
    EXPECT_NEAR(r.chains[h].handling, 5.5, kTol);
    EXPECT_NEAR(r.chains[h].blocking, 10.0, kTol);
    // L: B = 0, E = 10, no segment (H*_L = 0), hp = {H: E_H + H*_H = 2 + 5.5 = 7.5, T 20}.
    //   R = 10 -> 10 + (ceil(0.5)+1)*7.5 = 25 -> 10 + (ceil(1.25)+1)*7.5 = 32.5
    //   -> 10 + (ceil(1.625)+1)*7.5 = 32.5 (fixed); interference 3*7.5 = 22.5.
    //   (Charging E_H alone would give 10 + 2*2 = 14.)
    EXPECT_NEAR(r.chains[l].wcrt, 32.5, kTol);
    EXPECT_NEAR(r.chains[l].subchains[0].interference_executor, 22.5, kTol);
    EXPECT_NEAR(r.chains[l].subchains[0].interference_cpu, 0.0, kTol);
    EXPECT_TRUE(r.schedulable);
  }
}

// ---------------------------------------------------------------------------------------------
// Sub-chains over several executors: R* = sum of sub-chain bounds + hops * epsilon'.
TEST(SubChains, SplitAtExecutorChangesAndAddTheCommunicationCost) {
  System s = MakeSystem(1, /*overhead=*/0.1);
  s.comm_cost = 0.25;
  int e1 = AddExecutor(s, 0, 90);
  int e2 = AddExecutor(s, 1, 90);
  int k = AddChain(s, "K", 5, 10, {{e2, 1, {}}});
  int m = AddChain(s, "M", 4, 100, {{e1, 2, {1}}, {e1, 3, {}}, {e2, 4, {2}}, {e1, 1, {}}});
  Report r = MustAnalyze(s);
  // Sub-chains of M: [e1: cb1 cb2], [e2: cb3], [e1: cb4]; two hops.
  // sub 1: E = 5, H = 1 (no other segment), H* = 1.1 -> R = 6.1.
  // sub 2: E = 4, H* = 2.1, hp = {K: 1 per job, T 10}: 6.1 -> 6.1 + (ceil(0.61)+1)*1 = 8.1 -> 8.1.
  // sub 3: E = 1 -> R = 1.
  // R* = 6.1 + 8.1 + 1 + 2*0.25 = 15.7.
  ASSERT_EQ(r.chains[m].subchains.size(), 3u);
  EXPECT_NEAR(r.chains[m].subchains[0].wcrt, 6.1, kTol);
  EXPECT_NEAR(r.chains[m].subchains[1].wcrt, 8.1, kTol);
  EXPECT_NEAR(r.chains[m].subchains[2].wcrt, 1.0, kTol);
  EXPECT_NEAR(r.chains[m].communication, 0.5, kTol);
  EXPECT_NEAR(r.chains[m].wcrt, 15.7, kTol);
  // K on e2: blocked by M's cb3 (4) only, not by M's callbacks on e1: R = 4 + 1 = 5.
  EXPECT_NEAR(r.chains[k].wcrt, 5.0, kTol);
}

TEST(SubChains, SameExecutorMeansOneSubChainAndNoCommunicationCost) {
  System s = MakeSystem(1, /*overhead=*/0.1);
  s.comm_cost = 0.25;
  int e1 = AddExecutor(s, 0, 90);
  int m = AddChain(s, "M", 4, 100, {{e1, 2, {1}}, {e1, 3, {}}, {e1, 4, {2}}, {e1, 1, {}}});
  // One sub-chain: E = 10, H = 1 + 2 = 3, H* = 3 + 2*0.1 = 3.2 -> R = 13.2, no hop.
  Report r = MustAnalyze(s);
  EXPECT_EQ(r.chains[m].subchains.size(), 1u);
  EXPECT_NEAR(r.chains[m].wcrt, 13.2, kTol);
  EXPECT_NEAR(r.chains[m].communication, 0.0, kTol);
}

// ---------------------------------------------------------------------------------------------
// Stopping rule and verdicts.
TEST(Verdict, StopsAsSoonAsTheBoundPassesTheDeadline) {
  System s = MakeSystem();
  int ex = AddExecutor(s, 0, 90);
  AddChain(s, "H", 3, 10, {{ex, 2, {}}});
  AddChain(s, "C", 2, 50, {{ex, 3, {}}, {ex, 4, {}}});
  int l = AddChain(s, "L", 1, 100, {{ex, 5, {}}, {ex, 1, {}}}, /*deadline=*/23);
  // L iterates 6 -> 24 -> 28 -> 28 (see Lemma4 above): 24 > 23 stops it at 24.
  Report r = MustAnalyze(s);
  EXPECT_FALSE(r.chains[l].schedulable);
  EXPECT_FALSE(r.chains[l].converged);
  EXPECT_NEAR(r.chains[l].wcrt, 24.0, kTol);
  EXPECT_FALSE(r.schedulable);
  Options full;
  full.stop_at_deadline = false;
  Report f = MustAnalyze(s, full);
  EXPECT_TRUE(f.chains[l].converged);
  EXPECT_NEAR(f.chains[l].wcrt, 28.0, kTol);
}

TEST(Verdict, BestEffortChainsMayMissWithoutMakingTheSetUnschedulable) {
  System s = MakeSystem();
  int ex = AddExecutor(s, 0, 90);
  AddChain(s, "critical", 2, 100, {{ex, 10, {}}});
  int be = AddChain(s, "be", 1, 20, {{ex, 15, {}}}, 0, /*best_effort=*/true);
  // be: 15 + (ceil(15/100)+1)*10 = 35 > 20.  critical: 15 (blocking) + 10 = 25.
  Report r = MustAnalyze(s);
  EXPECT_FALSE(r.chains[be].schedulable);
  EXPECT_TRUE(r.chains[0].schedulable);
  EXPECT_NEAR(r.chains[0].wcrt, 25.0, kTol);
  EXPECT_TRUE(r.schedulable);
}

TEST(Verdict, OverloadedAcceleratorGivesAnInfiniteBound) {
  System s = MakeSystem();
  AddChain(s, "hog", 2, 10, {{AddExecutor(s, 0, 90), 0, {10}}});
  int c = AddChain(s, "c", 1, 1000, {{AddExecutor(s, 1, 90), 0, {1}}});
  Options full;
  full.stop_at_deadline = false;
  // The hog keeps the accelerator busy 10 ms in every 10: H = 1 + (ceil(H/10)+1)*10 grows
  // by 10 per step for ever, and so does Lemma 3's 1 + (ceil(R/10)+1)*10.
  EXPECT_EQ(MustAnalyze(s, full).chains[c].wcrt, kInfinity);
  EXPECT_FALSE(MustAnalyze(s).chains[c].schedulable);
}

// ---------------------------------------------------------------------------------------------
// Validation names the chain and the field.
TEST(Validate, NamesTheChainAndTheField) {
  System s = MakeSystem();
  int ex = AddExecutor(s, 0, 90);
  AddChain(s, "a", 1, 10, {{ex, 1, {}}});
  AddChain(s, "b", 1, 10, {{ex, 1, {}}});
  Status st = Validate(s);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("chain 'b'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("priority"), std::string::npos) << st.message();

  s.chains[1].priority = 2;
  s.chains[1].deadline = 20;
  st = Validate(s);
  EXPECT_NE(st.message().find("deadline"), std::string::npos) << st.message();

  s.chains[1].deadline = 0;
  s.chains[1].callbacks[0].wcet = -1;
  st = Validate(s);
  EXPECT_NE(st.message().find("wcet"), std::string::npos) << st.message();

  s.chains[1].callbacks[0].wcet = 1;
  s.executors.push_back({"clash", 0, 90, Wait::kSpin});
  st = Validate(s);
  EXPECT_NE(st.message().find("executor 'clash'"), std::string::npos) << st.message();
  s.executors.back().priority = 91;
  EXPECT_TRUE(Validate(s).ok());
  Result<Report> empty = Analyze(System{});  // an empty system is valid and schedulable
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->schedulable);
}

// ---------------------------------------------------------------------------------------------
// Properties over random systems: more interference never lowers a bound; a lower overhead
// never raises one. Fixed seeds; several executors per CPU, spin and suspend mixed, chains
// split over executors.
System RandomSystem(uint64_t seed, int buckets) {
  GeneratorParams p;
  p.chains = 8;
  p.cpus = 2;
  p.executors_per_cpu = 2;
  p.utilization_per_chain = 0.08;
  p.buckets = buckets;
  p.overhead = 0.2;
  p.preemption = buckets > 1 ? 0.1 : 0.0;
  System s = GenerateChainSet(p, seed);
  Rng rng(seed ^ 0x5eed);
  for (Executor& e : s.executors) e.wait = rng.Uniform() < 0.5 ? Wait::kSpin : Wait::kSuspend;
  for (Chain& c : s.chains)
    for (Callback& cb : c.callbacks)
      if (rng.Uniform() < 0.3) cb.executor = static_cast<int>(rng.Next() % s.executors.size());
  return s;
}

TEST(Property, AddingAnInterferingChainNeverLowersABound) {
  // With one bucket. (With n > 1 buckets, a new chain re-maps the down-sampled buckets and can
  // move another chain away from its blocker; that is a property of rule R2, not a bug.)
  Options full;
  full.stop_at_deadline = false;
  int compared = 0;
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    System s = RandomSystem(seed, 1);
    Report before = MustAnalyze(s, full);
    Rng rng(seed * 7);
    Chain extra = s.chains[rng.Next() % s.chains.size()];
    extra.name = "extra";
    extra.priority = static_cast<int64_t>(rng.Next() % 20) * 2 + 1;  // odd: never clashes
    for (Chain& c : s.chains) c.priority *= 2;                         // keep the others even
    for (Callback& cb : extra.callbacks) cb.executor = static_cast<int>(rng.Next() % s.executors.size());
    s.chains.push_back(extra);
    Report after = MustAnalyze(s, full);
    for (size_t c = 0; c < before.chains.size(); ++c) {
      EXPECT_GE(after.chains[c].wcrt, before.chains[c].wcrt - 1e-9)
          << "seed " << seed << " chain " << before.chains[c].name;
      ++compared;
    }
  }
  EXPECT_EQ(compared, 150 * 8);
}

TEST(Property, LowerOverheadOrPreemptionCostNeverRaisesABound) {
  Options full;
  full.stop_at_deadline = false;
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    for (int buckets : {1, 3}) {
      System s = RandomSystem(seed, buckets);
      Report high = MustAnalyze(s, full);
      s.accelerators[0].overhead /= 4;
      s.accelerators[0].preemption /= 2;
      Report low = MustAnalyze(s, full);
      for (size_t c = 0; c < high.chains.size(); ++c)
        EXPECT_LE(low.chains[c].wcrt, high.chains[c].wcrt + 1e-9) << "seed " << seed;
    }
  }
}

TEST(Property, TheMinimumIsNeverWorseThanEitherLemmaAlone) {
  Options mn, seg, chn;
  mn.stop_at_deadline = seg.stop_at_deadline = chn.stop_at_deadline = false;
  seg.handling = HandlingBound::kPerSegment;
  chn.handling = HandlingBound::kPerChain;
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    System s = RandomSystem(seed, 2);
    Report a = MustAnalyze(s, mn), b = MustAnalyze(s, seg), c = MustAnalyze(s, chn);
    for (size_t i = 0; i < a.chains.size(); ++i) {
      EXPECT_LE(a.chains[i].wcrt, b.chains[i].wcrt + 1e-9);
      EXPECT_LE(a.chains[i].wcrt, c.chains[i].wcrt + 1e-9);
    }
  }
}

}  // namespace
}  // namespace paam::rta
