// fuzz/fuzz_analysis.cc — the input of the response-time analysis: an rta::System, which is what
// a system YAML becomes (python/paam/analysis/model.py builds it through the bindings, and paam
// analyze/plan and the experiments run it). The fuzzer builds a system of any shape and values,
// including ones the YAML loader would refuse (out-of-range indices, negative, NaN or infinite
// times, duplicate priorities), so Validate is the last line of defence.
// Properties: no crash, hang or undefined behaviour; Analyze fails exactly when Validate does;
// a report has one result per chain, a chain is schedulable only with a finite bound within
// its deadline, the set only if every chain that is not best-effort is; every bucket of
// AssignBuckets is within the accelerator's buckets.
// Input: consumed with FuzzedDataProvider (counts and values; see Time()).
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstring>

#include "analysis/rta.h"
#include "fuzz_check.h"

using namespace paam;

namespace {

// A time in ms: mostly the kind a model has, sometimes any double (negative, NaN, infinite).
double Time(FuzzedDataProvider& p) {
  switch (p.ConsumeIntegralInRange<int>(0, 3)) {
    case 0:
      return p.ConsumeIntegralInRange<int>(0, 200);
    case 1:
      return p.ConsumeIntegralInRange<int>(0, 1'000'000) / 1000.0;
    case 2:
      return p.ConsumeFloatingPoint<double>();
    default: {
      double v = 0;
      const std::vector<uint8_t> raw = p.ConsumeBytes<uint8_t>(sizeof(v));
      if (!raw.empty()) std::memcpy(&v, raw.data(), raw.size());
      return v;
    }
  }
}

int SmallInt(FuzzedDataProvider& p, int lo, int hi) {
  return p.ConsumeBool() ? p.ConsumeIntegralInRange<int>(lo, hi) : p.ConsumeIntegral<int>();
}

rta::System MakeSystem(FuzzedDataProvider& p) {
  rta::System sys;
  const int n_acc = p.ConsumeIntegralInRange<int>(0, 4);
  const int n_ex = p.ConsumeIntegralInRange<int>(0, 6);
  const int n_chain = p.ConsumeIntegralInRange<int>(0, 10);
  for (int a = 0; a < n_acc; ++a) {
    rta::Accelerator acc;
    acc.name = "a" + std::to_string(a);
    acc.buckets = SmallInt(p, 0, 8);
    acc.overhead = Time(p);
    acc.preemption = Time(p);
    acc.best_effort_bucket = p.ConsumeBool();
    sys.accelerators.push_back(acc);
  }
  for (int e = 0; e < n_ex; ++e) {
    rta::Executor ex;
    ex.name = "e" + std::to_string(e);
    ex.cpu = SmallInt(p, 0, 3);
    ex.priority = SmallInt(p, 1, 99);
    ex.wait = p.ConsumeBool() ? rta::Wait::kSpin : rta::Wait::kSuspend;
    sys.executors.push_back(ex);
  }
  sys.comm_cost = Time(p);
  for (int c = 0; c < n_chain; ++c) {
    rta::Chain ch;
    ch.name = p.ConsumeIntegralInRange<int>(0, 15) == 0 ? "c0" : "c" + std::to_string(c);
    ch.priority = p.ConsumeBool() ? p.ConsumeIntegralInRange<int64_t>(0, 20) : p.ConsumeIntegral<int64_t>();
    ch.period = Time(p);
    ch.deadline = Time(p);
    ch.best_effort = p.ConsumeBool();
    const int n_cb = p.ConsumeIntegralInRange<int>(0, 5);
    for (int i = 0; i < n_cb; ++i) {
      rta::Callback cb;
      cb.executor = SmallInt(p, -1, n_ex);
      cb.wcet = Time(p);
      const int n_seg = p.ConsumeIntegralInRange<int>(0, 4);
      for (int s = 0; s < n_seg; ++s) cb.segments.push_back({SmallInt(p, -1, n_acc), Time(p)});
      ch.callbacks.push_back(std::move(cb));
    }
    sys.chains.push_back(std::move(ch));
  }
  return sys;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider p(data, size);
  const rta::System sys = MakeSystem(p);
  rta::Options opt;
  opt.handling = static_cast<rta::HandlingBound>(p.ConsumeIntegralInRange<int>(0, 2));
  opt.blocking = p.ConsumeBool() ? rta::Blocking::kCpu : rta::Blocking::kCallback;
  opt.stop_at_deadline = p.ConsumeBool();

  const Status valid = rta::Validate(sys);
  const Result<rta::Report> report = rta::Analyze(sys, opt);
  PAAM_FUZZ_CHECK(report.ok() == valid.ok());
  if (!report.ok()) return 0;
  PAAM_FUZZ_CHECK(report->chains.size() == sys.chains.size());
  bool all = true;
  for (const rta::ChainResult& r : report->chains) {
    if (r.schedulable) PAAM_FUZZ_CHECK(std::isfinite(r.wcrt) && r.wcrt <= r.deadline);
    if (!r.best_effort) all = all && r.schedulable;
  }
  PAAM_FUZZ_CHECK(report->schedulable == all);

  const std::vector<std::vector<int>> buckets = rta::AssignBuckets(sys);
  PAAM_FUZZ_CHECK(buckets.size() == sys.accelerators.size());
  for (size_t a = 0; a < buckets.size(); ++a) {
    PAAM_FUZZ_CHECK(buckets[a].size() == sys.chains.size());
    for (int b : buckets[a]) PAAM_FUZZ_CHECK(b >= -1 && b < std::max(1, sys.accelerators[a].buckets));
  }
  return 0;
}
