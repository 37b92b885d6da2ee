// The random chain-set generator of the schedulability study.
#include <gtest/gtest.h>

#include <numeric>

#include "analysis/generator.h"

namespace paam::rta {
namespace {

TEST(UUniFast, SumsToTheTotalAndRespectsTheCap) {
  Rng rng(42);
  for (int n : {1, 2, 5, 30}) {
    std::vector<double> u = UUniFastDiscard(n, 0.4 * n, 1.0, rng);
    ASSERT_EQ(u.size(), static_cast<size_t>(n));
    EXPECT_NEAR(std::accumulate(u.begin(), u.end(), 0.0), 0.4 * n, 1e-9);
    for (double x : u) {
      EXPECT_GE(x, 0.0);
      EXPECT_LE(x, 1.0);
    }
  }
}

TEST(UUniFast, MeanOfEachShareIsTheTotalOverN) {
  // Unbiased: every position has the same expectation total/n.
  Rng rng(7);
  std::vector<double> mean(4, 0.0);
  const int draws = 20000;
  for (int i = 0; i < draws; ++i) {
    std::vector<double> u = UUniFastDiscard(4, 1.0, 1.0, rng);
    for (int k = 0; k < 4; ++k) mean[k] += u[k] / draws;
  }
  for (double m : mean) EXPECT_NEAR(m, 0.25, 0.01);
}

TEST(Generator, SameSeedSameSetAndTheRequestedShape) {
  GeneratorParams p;
  p.chains = 6;
  p.accelerator_share = 0.3;
  System a = GenerateChainSet(p, 123);
  System b = GenerateChainSet(p, 123);
  System c = GenerateChainSet(p, 124);
  ASSERT_TRUE(Validate(a).ok());
  ASSERT_EQ(a.chains.size(), 6u);
  EXPECT_EQ(a.chains[2].period, b.chains[2].period);
  EXPECT_NE(a.chains[2].period, c.chains[2].period);
  double total = 0;
  for (const Chain& ch : a.chains) {
    ASSERT_EQ(ch.callbacks.size(), 4u);
    double e = 0, acc = 0;
    for (const Callback& cb : ch.callbacks) {
      e += cb.wcet;
      ASSERT_EQ(cb.segments.size(), 1u);
      acc += cb.segments[0].wcet;
      EXPECT_EQ(cb.executor, ch.callbacks[0].executor);  // a chain stays on one executor
    }
    EXPECT_NEAR(acc / (acc + e), 0.3, 1e-9);  // accelerator : CPU = 3 : 7
    EXPECT_GE(ch.period, p.period_min);
    EXPECT_LE(ch.period, p.period_max);
    total += (e + acc) / ch.period;
  }
  EXPECT_NEAR(total, 6 * p.utilization_per_chain, 1e-9);
}

TEST(Generator, StudyBatchCountsDoNotDependOnBatching) {
  GeneratorParams p;
  p.chains = 12;
  StudyCounts whole = RunStudyBatch(p, 9, 3, 0, 40);
  StudyCounts first = RunStudyBatch(p, 9, 3, 0, 25);
  StudyCounts rest = RunStudyBatch(p, 9, 3, 25, 15);
  EXPECT_EQ(whole.sets, 40);
  EXPECT_EQ(whole.schedulable_min, first.schedulable_min + rest.schedulable_min);
  EXPECT_GE(whole.schedulable_min, whole.schedulable_per_segment);
  EXPECT_GE(whole.schedulable_min, whole.schedulable_per_chain);
}

}  // namespace
}  // namespace paam::rta
