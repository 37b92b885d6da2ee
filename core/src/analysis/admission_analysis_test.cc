// Admission control through MakeAnalysisAdmissionPolicy: what the server sees.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "server/admission.h"

namespace paam {
namespace {

TimingModel Model(const std::string& chain, double period, double deadline, double cpu, double segment,
                  const std::string& executor, int cpu_index, uint32_t index = 0, uint32_t length = 1) {
  TimingModel m;
  m.chain = chain;
  m.callback_index = index;
  m.chain_length = length;
  m.period_ms = period;
  m.deadline_ms = deadline;
  m.cpu_wcet_ms = cpu;
  if (segment > 0) m.segments_ms = {segment};
  m.executor = executor;
  m.executor_cpu = cpu_index;
  m.executor_priority = 90;
  m.executor_wait = WaitMode::kSuspend;
  return m;
}

AdmissionDecision Register(AdmissionPolicy& p, uint64_t id, uint32_t priority, const TimingModel* m) {
  AdmissionRequest r;
  r.client_id = id;
  r.chain_priority = priority;
  r.pid = 1000 + static_cast<int>(id);
  r.timing = m;
  return p.Admit(r);
}

AcceleratorParams NoOverhead() {
  AcceleratorParams a;
  a.buckets = 1;
  a.overhead_ms = 0;
  a.preemption_ms = 0;
  return a;
}

TEST(Admission, RefusesTheNewChainThatWouldMissAndSaysByHowMuch) {
  auto policy = MakeAnalysisAdmissionPolicy(NoOverhead());
  ASSERT_NE(policy, nullptr);
  TimingModel c1 = Model("c1", 100, 0, 10, 20, "exA", 0);
  // c1 alone: R = 10 + 20 = 30.
  AdmissionDecision d = Register(*policy, 1, 2, &c1);
  EXPECT_TRUE(d.admitted) << d.reason;
  EXPECT_NE(d.reason.find("30.000 ms"), std::string::npos) << d.reason;
  // c2 (lower priority, D = 50): Lemma 2 = Lemma 3 = 10 + (ceil(H/100)+1)*20 = 50;
  // R = 5 + 50 = 55 > 50: misses by 5.
  TimingModel c2 = Model("c2", 50, 50, 5, 10, "exB", 1);
  d = Register(*policy, 2, 1, &c2);
  EXPECT_FALSE(d.admitted);
  EXPECT_EQ(d.reason, "chain 'c2' would miss its deadline 50.000 ms by 5.000 ms (bound 55.000 ms)");
}

TEST(Admission, RefusesANewChainThatBreaksAnAdmittedOneAndNamesTheVictim) {
  auto policy = MakeAnalysisAdmissionPolicy(NoOverhead());
  TimingModel c1 = Model("c1", 100, 60, 10, 20, "exA", 0);
  ASSERT_TRUE(Register(*policy, 1, 2, &c1).admitted);
  // c0 of higher priority with a 16 ms segment: c1's H = 20 + (ceil(H/100)+1)*16 = 52,
  // R = 62 > 60. (c0 itself: B = 20, H = 36, R = 37: fine.)
  TimingModel c0 = Model("c0", 100, 0, 1, 16, "exC", 2);
  AdmissionDecision d = Register(*policy, 3, 3, &c0);
  EXPECT_FALSE(d.admitted);
  EXPECT_EQ(d.reason, "chain 'c1' would miss its deadline 60.000 ms by 2.000 ms (bound 62.000 ms)");
  // With 15 ms it fits exactly: H = 20 + 2*15 = 50, R = 60 <= 60.
  TimingModel c0_small = Model("c0", 100, 0, 1, 15, "exC", 2);
  EXPECT_TRUE(Register(*policy, 4, 3, &c0_small).admitted);
}

TEST(Admission, RemovingAClientFreesItsShare) {
  auto policy = MakeAnalysisAdmissionPolicy(NoOverhead());
  TimingModel c1 = Model("c1", 100, 60, 10, 20, "exA", 0);
  ASSERT_TRUE(Register(*policy, 1, 2, &c1).admitted);
  TimingModel c0 = Model("c0", 100, 0, 1, 16, "exC", 2);
  EXPECT_FALSE(Register(*policy, 2, 3, &c0).admitted);
  policy->Remove(1);
  EXPECT_TRUE(Register(*policy, 3, 3, &c0).admitted);
}

TEST(Admission, RegistrationsWithoutATimingModelAreBestEffortInTheLowestBucket) {
  AcceleratorParams two = NoOverhead();
  two.buckets = 2;
  auto policy = MakeAnalysisAdmissionPolicy(two);
  EXPECT_TRUE(policy->ReservesLowestBucket());
  AdmissionDecision d = Register(*policy, 7, 1, nullptr);
  EXPECT_TRUE(d.admitted);
  EXPECT_NE(d.reason.find("best-effort into the lowest bucket (1)"), std::string::npos) << d.reason;
}

TEST(Admission, WithOneBucketARegistrationWithoutATimingModelIsRefused) {
  // It would share the one non-preemptive bucket with the analysed chains, unbounded.
  auto policy = MakeAnalysisAdmissionPolicy(NoOverhead());
  AdmissionDecision d = Register(*policy, 7, 1, nullptr);
  EXPECT_FALSE(d.admitted);
  EXPECT_NE(d.reason.find("--buckets 2"), std::string::npos) << d.reason;
}

TEST(Admission, AnalysedChainsShareTheBucketsAboveTheReservedOne) {
  // 2 buckets, kappa = 1: the lowest is kept for registrations without a model, so c1 and c2
  // share bucket 0 (R2 over 2 - 1 = 1 bucket) and c2 blocks c1. A* = A + 2*kappa.
  AcceleratorParams p = NoOverhead();
  p.buckets = 2;
  p.preemption_ms = 1;
  auto policy = MakeAnalysisAdmissionPolicy(p);
  TimingModel c1 = Model("c1", 100, 50, 10, 20, "exA", 0);
  // c1 alone: R = 10 + 22 = 32.
  AdmissionDecision d = Register(*policy, 1, 2, &c1);
  ASSERT_TRUE(d.admitted) << d.reason;
  EXPECT_NE(d.reason.find("32.000 ms"), std::string::npos) << d.reason;
  // c2 (lower, 25 ms segment, A* = 27) in c1's bucket: c1's H = 22 + B 27 = 49, R = 59 > 50.
  // (Had R2 run over both buckets, c2 would sit alone in bucket 1 and c1 would keep 32.)
  TimingModel c2 = Model("c2", 100, 0, 1, 25, "exB", 1);
  d = Register(*policy, 2, 1, &c2);
  EXPECT_FALSE(d.admitted);
  EXPECT_EQ(d.reason, "chain 'c1' would miss its deadline 50.000 ms by 9.000 ms (bound 59.000 ms)");
}

TEST(Admission, EachUnitIsItsOwnAccelerator) {
  // The victim case above (c0 breaks c1 on one accelerator) is admitted when c0 runs on
  // another unit: c1's bound stays 10 + 20 = 30, c0's is 1 + 16 = 17.
  auto policy = MakeAnalysisAdmissionPolicy(NoOverhead());
  TimingModel c1 = Model("c1", 100, 60, 10, 20, "exA", 0);
  AdmissionRequest r;
  r.client_id = 1;
  r.chain_priority = 2;
  r.timing = &c1;
  r.unit = 0;
  ASSERT_TRUE(policy->Admit(r).admitted);
  TimingModel c0 = Model("c0", 100, 0, 1, 16, "exC", 2);
  r.client_id = 2;
  r.chain_priority = 3;
  r.timing = &c0;
  r.unit = 1;
  AdmissionDecision d = policy->Admit(r);
  EXPECT_TRUE(d.admitted) << d.reason;
  EXPECT_NE(d.reason.find("17.000 ms"), std::string::npos) << d.reason;
}

TEST(Admission, PartialChainsAreAnalysedWithTheCallbacksPresent) {
  auto policy = MakeAnalysisAdmissionPolicy(NoOverhead());
  // Chain "p" has 3 callbacks of 10 ms CPU + 10 ms accelerator each, D = 50.
  TimingModel first = Model("p", 100, 50, 10, 10, "exA", 0, 0, 3);
  TimingModel second = Model("p", 100, 50, 10, 10, "exA", 0, 1, 3);
  TimingModel third = Model("p", 100, 50, 10, 10, "exA", 0, 2, 3);
  AdmissionDecision d = Register(*policy, 1, 5, &first);
  EXPECT_TRUE(d.admitted) << d.reason;
  EXPECT_NE(d.reason.find("partial chain: 1 of 3"), std::string::npos) << d.reason;
  EXPECT_TRUE(Register(*policy, 2, 5, &second).admitted);  // R = 2*(10+10) = 40 <= 50
  d = Register(*policy, 3, 5, &third);                      // R = 60 > 50
  EXPECT_FALSE(d.admitted);
  EXPECT_EQ(d.reason, "chain 'p' would miss its deadline 50.000 ms by 10.000 ms (bound 60.000 ms)");
}

TEST(Admission, InconsistentRegistrationsAreRefused) {
  auto policy = MakeAnalysisAdmissionPolicy(NoOverhead());
  TimingModel a = Model("a", 100, 0, 1, 1, "exA", 0, 0, 2);
  ASSERT_TRUE(Register(*policy, 1, 5, &a).admitted);
  AdmissionDecision d = Register(*policy, 2, 5, &a);  // same callback index again
  EXPECT_FALSE(d.admitted);
  EXPECT_NE(d.reason.find("already registered"), std::string::npos) << d.reason;
  TimingModel b = Model("b", 100, 0, 1, 1, "exB", 1);
  d = Register(*policy, 3, 5, &b);  // another chain with the same priority
  EXPECT_FALSE(d.admitted);
  EXPECT_NE(d.reason.find("chain 'b'"), std::string::npos) << d.reason;
  TimingModel a2 = Model("a", 100, 0, 1, 1, "exA", 3, 1, 2);  // exA on another CPU
  d = Register(*policy, 4, 5, &a2);
  EXPECT_FALSE(d.admitted);
  EXPECT_NE(d.reason.find("executor 'exA'"), std::string::npos) << d.reason;
  TimingModel late = Model("late", 10, 20, 1, 1, "exC", 2);  // deadline above the period
  d = Register(*policy, 5, 9, &late);
  EXPECT_FALSE(d.admitted);
  EXPECT_NE(d.reason.find("deadline"), std::string::npos) << d.reason;
}

// The bound the server's monitor compares each request with: per segment, Lemma 2's handling
// time (or Lemma 3's, where smaller) plus epsilon; the largest over the client's segments.
TEST(Admission, RequestBoundsAreEachSegmentsHandlingTimePlusEpsilon) {
  AcceleratorParams a = NoOverhead();
  a.overhead_ms = 0.5;
  auto policy = MakeAnalysisAdmissionPolicy(a);
  TimingModel hi = Model("hi", 100, 0, 1, 4, "exA", 0);
  TimingModel lo = Model("lo", 100, 0, 1, 0, "exB", 1);
  lo.segments_ms = {10, 6};
  ASSERT_TRUE(Register(*policy, 1, 9, &hi).admitted);
  ASSERT_EQ(policy->RequestBoundMs(1), 4.5);  // alone: A + epsilon
  ASSERT_TRUE(Register(*policy, 2, 1, &lo).admitted);
  // One bucket: hi is blocked by lo's longest segment (10); lo's segments are each interfered
  // with by hi twice (ceil(t/100)+1): 10 + 8 and 6 + 8, the larger counts.
  EXPECT_EQ(policy->RequestBoundMs(1), 4 + 10 + 0.5);
  EXPECT_EQ(policy->RequestBoundMs(2), 10 + 2 * 4 + 0.5);
  TimingModel none = Model("none", 100, 0, 1, 0, "exC", 2);  // no segment: no bound
  ASSERT_TRUE(Register(*policy, 3, 5, &none).admitted);
  EXPECT_FALSE(policy->RequestBoundMs(3).has_value());
  EXPECT_FALSE(policy->RequestBoundMs(42).has_value());
  policy->Remove(2);  // the blocking goes with it
  EXPECT_EQ(policy->RequestBoundMs(1), 4.5);
  EXPECT_FALSE(policy->RequestBoundMs(2).has_value());
  EXPECT_FALSE(MakeAdmitAllPolicy()->RequestBoundMs(1).has_value());
}

}  // namespace
}  // namespace paam
