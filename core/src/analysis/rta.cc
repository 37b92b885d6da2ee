// analysis/rta.cc — the PAAM response-time analysis (see rta.h and ../shared/ANALYSIS.md).
#include "analysis/rta.h"

#include "common/bucket_map.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <set>
#include <utility>

namespace paam::rta {
namespace {

// Arrival bound of Eq. (2): at most ceil(t/T) + 1 jobs (the +1 is the carry-in job) of a
// periodic chain (or of one of its segments) fall into an interval of length t.
// The 1e-9 guard keeps a quotient such as 2.0000000000004 (floating-point noise on an exact
// multiple of the period) from counting one job more; it is far below any real timing unit.
inline double Arrivals(double t, double period) {
  const double q = std::ceil(t / period - 1e-9);
  return (q > 0 ? q : 0.0) + 1.0;
}

// A job source that interferes: `cost` per job of a chain with period `period`.
struct Demand {
  double period;
  double cost;
};

inline double Interference(const std::vector<Demand>& demands, double t) {
  double sum = 0.0;
  for (const Demand& d : demands) sum += Arrivals(t, d.period) * d.cost;
  return sum;
}

// Long-run demand per unit of time. When the demands of a recurrence x <- c + sum mu(x)*cost
// reach 1, it has no fixed point: mu(x) >= x/T + 1 makes the right side exceed x everywhere.
inline double Slope(const std::vector<Demand>& demands) {
  double sum = 0.0;
  for (const Demand& d : demands) sum += d.cost / d.period;
  return sum;
}

// No analysis of a sane system needs this many steps; past it the bound is reported infinite.
constexpr int kMaxIterations = 1'000'000;

struct FixedPoint {
  double value = 0.0;
  bool converged = false;
};

// Iterates x <- f(x) from `start` (f monotone, start <= least fixed point). Stops at the fixed
// point, or as soon as x > stop (not converged, x is the first value above stop), or returns
// infinity once x > cap (divergence).
template <typename F>
FixedPoint Iterate(F&& f, double start, double stop, double cap) {
  double x = start;
  if (x > cap) return {kInfinity, false};
  if (x > stop) return {x, false};
  for (int i = 0; i < kMaxIterations; ++i) {
    const double next = f(x);
    if (next <= x) return {x, true};
    if (next > cap) return {kInfinity, false};
    if (next > stop) return {next, false};
    x = next;
  }
  return {kInfinity, false};
}

std::string Fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

Status Invalid(std::string message) { return Status(Errc::kInvalidArgument, std::move(message)); }

bool BadTime(double v) { return !std::isfinite(v) || v < 0; }

// A maximal run of consecutive callbacks of one chain on one executor.
struct SubChain {
  int chain = 0;
  int executor = 0;
  int first = 0;
  int last = 0;
  double cpu = 0.0;        // E
  double max_callback = 0.0;  // largest E_j (what it blocks a higher-priority chain with)
  double max_hold = 0.0;      // largest E_j + its segments' Lemma 2 handling + epsilon each
  int segments = 0;        // delta
  double overhead = 0.0;   // sum of epsilon over its segments (= delta*epsilon, one accelerator)
  // Lemma 2 terms of its own segments: sum over segments of A* + B (start of Lemma 3) and the
  // per-segment fixed points summed (H^seg; infinity when a segment's iteration diverged).
  double own_plus_blocking = 0.0;
  double h_seg = 0.0;
  std::vector<double> segment_h;  // each segment's own fixed point (its part of h_seg)
  // Lemma 3's interfering segments: per higher-priority chain, the sum of A* of its segments
  // on any accelerator this sub-chain uses (the union of hps, each segment counted once).
  std::vector<Demand> chain_hps;
  // Final values, set once analysed; read by lower-priority chains.
  bool analysed = false;
  double h_star_final = 0.0;  // H* to charge per job of this sub-chain when it interferes
};

class Analyzer {
 public:
  Analyzer(const System& system, const Options& options) : sys_(system), opt_(options) {}

  Report Run();

 private:
  void Prepare();
  double Lemma2Segment(int chain, int accelerator, double a_star, double blocking) const;
  void AnalyseSubChain(int index, SubChainResult& out);

  double Deadline(int c) const {
    const Chain& ch = sys_.chains[c];
    return ch.deadline > 0 ? ch.deadline : ch.period;
  }
  double Kappa(int a) const {
    const Accelerator& acc = sys_.accelerators[a];
    // One bucket and nothing below it: nothing is ever preempted.
    return acc.buckets > 1 || acc.best_effort_bucket ? acc.preemption : 0.0;
  }
  bool Higher(int c, int h) const { return sys_.chains[h].priority > sys_.chains[c].priority; }

  const System& sys_;
  const Options& opt_;
  double cap_ = kInfinity;                 // divergence cap for fixed points
  std::vector<std::vector<int>> bucket_;   // [accelerator][chain]
  std::vector<std::vector<double>> sum_a_; // [accelerator][chain]: sum of A* on it
  std::vector<std::vector<double>> max_a_; // [accelerator][chain]: largest A* on it
  std::vector<SubChain> subs_;
  std::vector<std::vector<int>> chain_subs_;     // [chain] -> sub-chain indices in order
  std::vector<std::vector<int>> executor_subs_;  // [executor] -> sub-chain indices
};

void Analyzer::Prepare() {
  const int n_acc = static_cast<int>(sys_.accelerators.size());
  const int n_chain = static_cast<int>(sys_.chains.size());
  double max_period = 0.0;
  for (const Chain& ch : sys_.chains) max_period = std::max(max_period, ch.period);
  // A fixed point beyond a thousand of the longest periods means an overloaded resource.
  cap_ = 1000.0 * std::max(max_period, 1.0);

  bucket_ = AssignBuckets(sys_);
  sum_a_.assign(n_acc, std::vector<double>(n_chain, 0.0));
  max_a_.assign(n_acc, std::vector<double>(n_chain, 0.0));
  for (int c = 0; c < n_chain; ++c) {
    for (const Callback& cb : sys_.chains[c].callbacks) {
      for (const Segment& s : cb.segments) {
        const double a_star = s.wcet + 2 * Kappa(s.accelerator);
        sum_a_[s.accelerator][c] += a_star;
        max_a_[s.accelerator][c] = std::max(max_a_[s.accelerator][c], a_star);
      }
    }
  }

  chain_subs_.assign(n_chain, {});
  executor_subs_.assign(sys_.executors.size(), {});
  for (int c = 0; c < n_chain; ++c) {
    const auto& cbs = sys_.chains[c].callbacks;
    for (int i = 0; i < static_cast<int>(cbs.size()); ++i) {
      if (i == 0 || cbs[i].executor != cbs[i - 1].executor) {
        SubChain s;
        s.chain = c;
        s.executor = cbs[i].executor;
        s.first = i;
        chain_subs_[c].push_back(static_cast<int>(subs_.size()));
        executor_subs_[s.executor].push_back(static_cast<int>(subs_.size()));
        subs_.push_back(s);
      }
      SubChain& s = subs_.back();
      s.last = i;
      s.cpu += cbs[i].wcet;
      s.max_callback = std::max(s.max_callback, cbs[i].wcet);
      s.segments += static_cast<int>(cbs[i].segments.size());
      for (const Segment& seg : cbs[i].segments) s.overhead += sys_.accelerators[seg.accelerator].overhead;
    }
  }

  // Lemma 2 for every segment, and the R-independent part of Lemma 3.
  for (SubChain& s : subs_) {
    const int c = s.chain;
    std::set<int> used;
    for (int i = s.first; i <= s.last; ++i) {
      double hold = sys_.chains[c].callbacks[i].wcet;
      for (const Segment& seg : sys_.chains[c].callbacks[i].segments) {
        const int a = seg.accelerator;
        used.insert(a);
        const double a_star = seg.wcet + 2 * Kappa(a);
        // B_{i,j}: longest A* of a lower-priority chain's segment in the same bucket on a.
        double blocking = 0.0;
        for (int l = 0; l < static_cast<int>(sys_.chains.size()); ++l) {
          if (Higher(l, c) && bucket_[a][l] == bucket_[a][c] && max_a_[a][l] > 0)
            blocking = std::max(blocking, max_a_[a][l]);
        }
        s.own_plus_blocking += a_star + blocking;
        // Iterated to its fixed point even past the deadline: H^seg is also what a spinning
        // executor of higher OS priority charges chains analysed before this one.
        const double h = Lemma2Segment(c, a, a_star, blocking);
        s.h_seg += h;
        s.segment_h.push_back(h);
        hold += h + sys_.accelerators[a].overhead;
      }
      s.max_hold = std::max(s.max_hold, hold);
    }
    for (int h = 0; h < static_cast<int>(sys_.chains.size()); ++h) {
      if (!Higher(c, h)) continue;
      double cost = 0.0;
      for (int a : used) cost += sum_a_[a][h];
      if (cost > 0) s.chain_hps.push_back({sys_.chains[h].period, cost});
    }
  }
}

// Lemma 2: H <- A* + B + sum_{hps} mu(H) * A*, from A* + B. Infinity if it diverges (the
// higher-priority segments keep the accelerator busy all the time).
double Analyzer::Lemma2Segment(int c, int a, double a_star, double blocking) const {
  std::vector<Demand> hps;
  for (int h = 0; h < static_cast<int>(sys_.chains.size()); ++h) {
    if (Higher(c, h) && sum_a_[a][h] > 0) hps.push_back({sys_.chains[h].period, sum_a_[a][h]});
  }
  if (Slope(hps) >= 1.0) return kInfinity;
  const double base = a_star + blocking;
  FixedPoint fp =
      Iterate([&](double x) { return base + Interference(hps, x); }, base, kInfinity, cap_);
  return fp.converged ? fp.value : kInfinity;
}

void Analyzer::AnalyseSubChain(int index, SubChainResult& out) {
  SubChain& s = subs_[index];
  const int c = s.chain;
  const Executor& ex = sys_.executors[s.executor];

  // B_c (Lemma 4): the longest callback of a lower-priority chain on the same executor (with
  // Blocking::kCallback, for as long as it holds the executor, its requests included).
  double blocking = 0.0;
  std::vector<Demand> hp;   // same executor, higher chain priority: E_h + H*_h per job
  for (int o : executor_subs_[s.executor]) {
    const SubChain& other = subs_[o];
    if (other.chain == c) continue;  // a chain's own jobs never overlap (R <= D <= T)
    if (Higher(c, other.chain)) {
      hp.push_back({sys_.chains[other.chain].period, other.cpu + other.h_star_final});
    } else {
      blocking = std::max(blocking, opt_.blocking == Blocking::kCallback ? other.max_hold
                                                                         : other.max_callback);
    }
  }
  // hpp: executors of higher OS priority on the same CPU: E_h + spin(Gamma_h) per job.
  std::vector<Demand> hpp;
  for (int e = 0; e < static_cast<int>(sys_.executors.size()); ++e) {
    const Executor& other_ex = sys_.executors[e];
    if (e == s.executor || other_ex.cpu != ex.cpu || other_ex.priority <= ex.priority) continue;
    for (int o : executor_subs_[e]) {
      const SubChain& other = subs_[o];
      if (other.chain == c) continue;
      double spin = other.overhead;  // suspend: only delta*epsilon
      if (other_ex.wait == Wait::kSpin) {
        // A chain of lower chain priority is analysed later: use Lemma 2's bound for it.
        spin = Higher(c, other.chain) ? other.h_star_final : other.h_seg + other.overhead;
      }
      hpp.push_back({sys_.chains[other.chain].period, other.cpu + spin});
    }
  }

  const double lemma3_base = s.own_plus_blocking;
  auto handling_at = [&](double r, double* seg, double* chain) {
    *seg = s.h_seg;
    *chain = s.segments > 0 ? lemma3_base + Interference(s.chain_hps, r) : 0.0;
    double h = 0.0;
    if (s.segments > 0) {
      switch (opt_.handling) {
        case HandlingBound::kMin: h = std::min(*seg, *chain); break;
        case HandlingBound::kPerSegment: h = *seg; break;
        case HandlingBound::kPerChain: h = *chain; break;
      }
    }
    return h + s.overhead;  // Eq. (1): H* = H + delta*epsilon
  };

  const double deadline = Deadline(c);
  const double stop = opt_.stop_at_deadline ? deadline : kInfinity;
  // Growth of H*(R): that of Lemma 3 unless the R-independent Lemma 2 bound caps it.
  const bool handling_capped =
      s.segments == 0 || (opt_.handling != HandlingBound::kPerChain && std::isfinite(s.h_seg));
  const double handling_slope = handling_capped ? 0.0 : Slope(s.chain_hps);
  double dummy_seg = 0, dummy_chain = 0;
  // Start: the fixed point of R = B + E + H*(R) (H^chain evaluated at the start value itself).
  FixedPoint start = Iterate(
      [&](double r) { return blocking + s.cpu + handling_at(r, &dummy_seg, &dummy_chain); },
      blocking + s.cpu + s.overhead, stop, handling_slope >= 1.0 ? 0.0 : cap_);

  SubChainResult& res = out;
  res.executor = s.executor;
  res.first_callback = s.first;
  res.last_callback = s.last;
  res.blocking = blocking;
  res.own_cpu = s.cpu;
  res.segments = s.segments;
  res.segment_handling = s.segment_h;

  auto evaluate = [&](double r) {
    res.handling = handling_at(r, &res.handling_per_segment, &res.handling_per_chain);
    res.interference_executor = Interference(hp, r);
    res.interference_cpu = Interference(hpp, r);
    return blocking + s.cpu + res.handling + res.interference_executor + res.interference_cpu;
  };

  FixedPoint fp = start;
  if (start.converged) {
    // Theorem 1 (Lemma 4 when no chain involved has an accelerator segment). After Iterate,
    // the parts in `res` are those of the last evaluation, which produced fp.value.
    const double slope = handling_slope + Slope(hp) + Slope(hpp);
    fp = Iterate(evaluate, start.value, stop, slope >= 1.0 ? 0.0 : cap_);
  } else {
    // Already past the deadline before any interference: all of it is handling time.
    res.handling = fp.value - blocking - s.cpu;
    res.handling_per_segment = s.h_seg;
    res.handling_per_chain = s.segments > 0 ? lemma3_base + Interference(s.chain_hps, fp.value) : 0.0;
  }
  res.wcrt = fp.value;
  res.converged = fp.converged;
  if (std::isinf(fp.value)) res.handling = res.interference_executor = res.interference_cpu = kInfinity;

  // What this sub-chain costs the chains analysed after it, per job.
  s.analysed = true;
  if (s.segments == 0) {
    s.h_star_final = 0.0;
  } else if (fp.converged) {
    double seg = 0, chain = 0;
    s.h_star_final = handling_at(fp.value, &seg, &chain);
  } else {
    s.h_star_final = s.h_seg + s.overhead;  // R-independent Lemma 2 bound (maybe infinite)
  }
}

Report Analyzer::Run() {
  Prepare();
  Report report;
  report.chains.resize(sys_.chains.size());
  std::vector<int> order(sys_.chains.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int x, int y) { return sys_.chains[x].priority > sys_.chains[y].priority; });

  report.schedulable = true;
  for (int c : order) {  // highest priority first: H*_h of hp chains is final when needed
    const Chain& ch = sys_.chains[c];
    ChainResult& cr = report.chains[c];
    cr.name = ch.name;
    cr.deadline = Deadline(c);
    cr.best_effort = ch.best_effort;
    cr.converged = true;
    const int hops = static_cast<int>(chain_subs_[c].size()) - 1;
    cr.communication = hops > 0 ? hops * sys_.comm_cost : 0.0;
    cr.wcrt = cr.communication;
    for (int si : chain_subs_[c]) {
      SubChainResult sr;
      AnalyseSubChain(si, sr);
      cr.wcrt += sr.wcrt;
      cr.blocking += sr.blocking;
      cr.own_cpu += sr.own_cpu;
      cr.handling += sr.handling;
      cr.interference += sr.interference_executor + sr.interference_cpu;
      cr.converged = cr.converged && sr.converged;
      cr.subchains.push_back(sr);
    }
    cr.schedulable = cr.converged && cr.wcrt <= cr.deadline;
    if (!cr.schedulable && !cr.best_effort) report.schedulable = false;
  }
  return report;
}

}  // namespace

std::vector<std::vector<int>> AssignBuckets(const System& system) {
  const int n_chain = static_cast<int>(system.chains.size());
  std::vector<std::vector<int>> buckets(system.accelerators.size(), std::vector<int>(n_chain, -1));
  for (size_t a = 0; a < system.accelerators.size(); ++a) {
    std::vector<int> users;
    for (int c = 0; c < n_chain; ++c) {
      bool uses = false;
      for (const Callback& cb : system.chains[c].callbacks)
        for (const Segment& s : cb.segments) uses = uses || s.accelerator == static_cast<int>(a);
      if (uses) users.push_back(c);
    }
    std::vector<int64_t> priorities;
    for (int c : users) priorities.push_back(system.chains[c].priority);
    const std::vector<int64_t> distinct = DistinctDescending(priorities);
    const int n = std::max(1, system.accelerators[a].buckets);
    for (int c : users) buckets[a][c] = BucketOf(system.chains[c].priority, distinct, n);
  }
  return buckets;
}

Status Validate(const System& sys) {
  const int n_acc = static_cast<int>(sys.accelerators.size());
  const int n_ex = static_cast<int>(sys.executors.size());
  for (const Accelerator& a : sys.accelerators) {
    const std::string where = "accelerator '" + a.name + "': ";
    if (a.buckets < 1) return Invalid(where + "buckets must be at least 1 (got " + std::to_string(a.buckets) + ")");
    if (BadTime(a.overhead)) return Invalid(where + "overhead must be a finite time >= 0 (got " + Fmt(a.overhead) + ")");
    if (BadTime(a.preemption)) return Invalid(where + "preemption must be a finite time >= 0 (got " + Fmt(a.preemption) + ")");
  }
  std::map<std::pair<int, int>, std::string> cpu_prio;
  for (const Executor& e : sys.executors) {
    auto [it, fresh] = cpu_prio.emplace(std::make_pair(e.cpu, e.priority), e.name);
    if (!fresh)
      return Invalid("executor '" + e.name + "': priority " + std::to_string(e.priority) +
                     " on cpu " + std::to_string(e.cpu) + " is already used by executor '" +
                     it->second + "' (executors on one CPU need distinct priorities)");
  }
  if (BadTime(sys.comm_cost)) return Invalid("comm_cost must be a finite time >= 0 (got " + Fmt(sys.comm_cost) + ")");
  std::map<int64_t, std::string> priorities;
  std::set<std::string> names;
  for (const Chain& ch : sys.chains) {
    const std::string where = "chain '" + ch.name + "': ";
    if (!names.insert(ch.name).second) return Invalid(where + "name: duplicate chain name");
    auto [it, fresh] = priorities.emplace(ch.priority, ch.name);
    if (!fresh)
      return Invalid(where + "priority " + std::to_string(ch.priority) + " is already used by chain '" +
                     it->second + "' (chain priorities must be unique)");
    if (!std::isfinite(ch.period) || ch.period <= 0) return Invalid(where + "period must be > 0 (got " + Fmt(ch.period) + ")");
    if (BadTime(ch.deadline)) return Invalid(where + "deadline must be a finite time >= 0 (got " + Fmt(ch.deadline) + ")");
    if (ch.deadline > ch.period)
      return Invalid(where + "deadline " + Fmt(ch.deadline) + " is above the period " + Fmt(ch.period) +
                     " (the analysis needs constrained deadlines)");
    if (ch.callbacks.empty()) return Invalid(where + "callbacks: a chain needs at least one callback");
    for (size_t i = 0; i < ch.callbacks.size(); ++i) {
      const Callback& cb = ch.callbacks[i];
      const std::string cw = where + "callback '" + (cb.name.empty() ? std::to_string(i) : cb.name) + "': ";
      if (cb.executor < 0 || cb.executor >= n_ex) return Invalid(cw + "executor: index " + std::to_string(cb.executor) + " out of range");
      if (BadTime(cb.wcet)) return Invalid(cw + "wcet must be a finite time >= 0 (got " + Fmt(cb.wcet) + ")");
      for (const Segment& s : cb.segments) {
        if (s.accelerator < 0 || s.accelerator >= n_acc)
          return Invalid(cw + "segments: accelerator index " + std::to_string(s.accelerator) + " out of range");
        if (BadTime(s.wcet)) return Invalid(cw + "segments: wcet must be a finite time >= 0 (got " + Fmt(s.wcet) + ")");
      }
    }
  }
  return Status::Ok();
}

Result<Report> Analyze(const System& system, const Options& options) {
  Status st = Validate(system);
  if (!st.ok()) return st;
  Analyzer analyzer(system, options);
  return analyzer.Run();
}

}  // namespace paam::rta
