// analysis/admission_analysis.cc — admission control of paamd by the response-time analysis.
//
// The policy keeps every admitted registration (one per callback) and, for each new one,
// rebuilds the chain set with it added and runs Analyze(). A registration is admitted only if
// every admitted chain that is not best-effort stays schedulable.
//
// Partial chains: the callbacks of one chain register separately (often from different
// processes). Until all `chain_length` callbacks are present, the chain is analysed with the
// callbacks present, in callback_index order, as if it were the whole chain. Every later
// registration reruns the full test, so the complete chain is checked when its last callback
// arrives; a chain is never trusted on a promise of callbacks that have not registered yet.
// The price: an early callback can be admitted and a later one of the same chain refused.
//
// One server owns one accelerator set, described by AcceleratorParams: the analysis models each
// unit (GPU) it serves as one accelerator with the given epsilon and kappa. The bucket map is
// the server's (ReservesLowestBucket): with n > 1 buckets, the lowest is kept for registrations
// without a timing model, so the analysed chains are down-sampled onto the n - 1 above it and
// every analysed segment pays kappa; with n == 1 such registrations are refused, since they would
// share the one non-preemptive bucket with unbounded segments.
// Executors are identified by name across clients; two registrations naming one executor must
// agree on its CPU, priority and wait mode. Hybrid waiting is analysed as spinning.
//
// Thread safety: none of its own; the server serializes Admit/Remove (see admission.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "analysis/rta.h"
#include "server/admission.h"

namespace paam {
namespace {

std::string Ms(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f ms", v);
  return buf;
}

struct Registration {
  uint64_t client_id = 0;
  int64_t chain_priority = 0;
  int unit = 0;
  TimingModel model;
};

double EffectiveDeadline(const TimingModel& m) { return m.deadline_ms > 0 ? m.deadline_ms : m.period_ms; }

class AnalysisAdmissionPolicy final : public AdmissionPolicy {
 public:
  explicit AnalysisAdmissionPolicy(const AcceleratorParams& params) : params_(params) {}

  AdmissionDecision Admit(const AdmissionRequest& request) override {
    if (request.timing == nullptr) {
      if (params_.buckets <= 1) {
        return {false,
                "a registration without a timing model cannot be admitted by analysis on a server with one "
                "bucket: its kernels would share the non-preemptive bucket with the analysed chains and could "
                "block them for an unbounded time. Send a timing model (best_effort=true is fine: it is then "
                "analysed as interference) or start paamd with --buckets 2 or more (the lowest bucket then "
                "takes registrations without a model)"};
      }
      best_effort_.insert(request.client_id);
      return {true, "admitted as best-effort into the lowest bucket (" + std::to_string(params_.buckets - 1) +
                        "), which no analysed chain shares: the registration carries no timing model, so it was "
                        "not analysed; its kernels can delay analysed chains only by the preemption cost"};
    }
    Registration reg{request.client_id, request.chain_priority, request.unit, *request.timing};
    if (std::string why = CheckModel(reg); !why.empty()) return {false, why};
    if (std::string why = CheckConsistent(reg); !why.empty()) return {false, why};

    std::vector<const Registration*> candidate;
    for (const auto& [id, r] : admitted_) candidate.push_back(&r);
    candidate.push_back(&reg);
    rta::System system = Build(candidate);

    Result<rta::Report> report = rta::Analyze(system);
    if (!report.ok()) return {false, "chain set rejected by the analysis: " + report.status().message()};
    if (!report->schedulable) return {false, Refusal(system, *report)};

    SetBounds(candidate, system, *report);
    admitted_.emplace(reg.client_id, std::move(reg));
    return {true, Summary(*report, request.timing->chain, request.timing->chain_length)};
  }

  void Remove(uint64_t client_id) override {
    admitted_.erase(client_id);
    best_effort_.erase(client_id);
    bounds_.clear();
    if (admitted_.empty()) return;
    // The others' bounds change too: their interference, and with the bucket map their blocking.
    std::vector<const Registration*> rest;
    for (const auto& [id, r] : admitted_) rest.push_back(&r);
    const rta::System system = Build(rest);
    if (Result<rta::Report> report = rta::Analyze(system); report.ok()) SetBounds(rest, system, *report);
  }

  bool ReservesLowestBucket() const override { return true; }

  std::optional<double> RequestBoundMs(uint64_t client_id) const override {
    auto it = bounds_.find(client_id);
    if (it == bounds_.end()) return std::nullopt;
    return it->second;
  }

 private:
  static std::string CheckModel(const Registration& reg) {
    const TimingModel& m = reg.model;
    if (m.chain.empty()) return "timing model: chain name is empty";
    const std::string where = "chain '" + m.chain + "': ";
    if (m.chain_length < 1) return where + "chain_length must be at least 1";
    if (m.callback_index >= m.chain_length)
      return where + "callback_index " + std::to_string(m.callback_index) + " is not below chain_length " +
             std::to_string(m.chain_length);
    if (m.executor.empty()) return where + "executor name is empty";
    return {};
  }

  // Registrations of one chain must agree on the chain's parameters, one callback index is
  // registered once, and one executor name means one executor.
  std::string CheckConsistent(const Registration& reg) const {
    const TimingModel& m = reg.model;
    const std::string where = "chain '" + m.chain + "': ";
    for (const auto& [id, other] : admitted_) {
      const TimingModel& o = other.model;
      if (o.chain == m.chain) {
        if (o.callback_index == m.callback_index)
          return where + "callback_index " + std::to_string(m.callback_index) + " is already registered by client " +
                 std::to_string(id);
        if (other.chain_priority != reg.chain_priority)
          return where + "chain priority " + std::to_string(reg.chain_priority) + " differs from " +
                 std::to_string(other.chain_priority) + " given by client " + std::to_string(id);
        if (o.period_ms != m.period_ms || EffectiveDeadline(o) != EffectiveDeadline(m) ||
            o.chain_length != m.chain_length || o.best_effort != m.best_effort)
          return where + "period/deadline/chain_length/best_effort differ from those given by client " +
                 std::to_string(id);
      } else if (other.chain_priority == reg.chain_priority) {
        return where + "chain priority " + std::to_string(reg.chain_priority) + " is already used by chain '" +
               o.chain + "' (chain priorities must be unique)";
      }
      if (o.executor == m.executor &&
          (o.executor_cpu != m.executor_cpu || o.executor_priority != m.executor_priority ||
           (o.executor_wait == WaitMode::kSuspend) != (m.executor_wait == WaitMode::kSuspend)))
        return where + "executor '" + m.executor + "' is already registered with another cpu, priority or wait mode";
    }
    return {};
  }

  // The chain set of the given registrations. CheckConsistent guarantees that one executor
  // name stands for one executor; two names on one (cpu, priority) fail rta::Validate.
  rta::System Build(const std::vector<const Registration*>& regs) const {
    rta::System sys;
    sys.comm_cost = params_.comm_cost_ms;
    // One accelerator per unit in use, as paamd maps buckets per unit; the lowest bucket is
    // kept for registrations without a timing model (see ReservesLowestBucket).
    std::map<int, int> accelerator_of_unit;
    for (const Registration* r : regs) {
      auto [it, fresh] = accelerator_of_unit.emplace(r->unit, static_cast<int>(sys.accelerators.size()));
      if (!fresh) continue;
      rta::Accelerator acc;
      acc.name = "unit" + std::to_string(r->unit);
      acc.buckets = params_.buckets > 1 ? params_.buckets - 1 : 1;
      acc.overhead = params_.overhead_ms;
      acc.preemption = params_.preemption_ms;
      acc.best_effort_bucket = params_.buckets > 1;
      sys.accelerators.push_back(std::move(acc));
    }
    std::map<std::string, int> executor_index;
    std::map<std::string, std::vector<const Registration*>> by_chain;
    for (const Registration* r : regs) by_chain[r->model.chain].push_back(r);
    for (auto& [name, members] : by_chain) {
      std::sort(members.begin(), members.end(), [](const Registration* a, const Registration* b) {
        return a->model.callback_index < b->model.callback_index;
      });
      const TimingModel& first = members.front()->model;
      rta::Chain chain;
      chain.name = name;
      chain.priority = members.front()->chain_priority;
      chain.period = first.period_ms;
      chain.deadline = first.deadline_ms;
      chain.best_effort = first.best_effort;
      for (const Registration* r : members) {
        const TimingModel& m = r->model;
        auto [it, fresh] = executor_index.emplace(m.executor, static_cast<int>(sys.executors.size()));
        if (fresh) {
          sys.executors.push_back({m.executor, m.executor_cpu, m.executor_priority,
                                   m.executor_wait == WaitMode::kSuspend ? rta::Wait::kSuspend : rta::Wait::kSpin});
        }
        rta::Callback cb;
        cb.name = name + "[" + std::to_string(m.callback_index) + "]";
        cb.executor = it->second;
        cb.wcet = m.cpu_wcet_ms;
        for (double a : m.segments_ms) cb.segments.push_back({accelerator_of_unit.at(r->unit), a});
        chain.callbacks.push_back(std::move(cb));
      }
      sys.chains.push_back(std::move(chain));
    }
    return sys;
  }

  // Names the highest-priority chain that misses, with its real bound (iterated past D).
  static std::string Refusal(const rta::System& system, const rta::Report& report) {
    int worst = -1;
    for (size_t c = 0; c < report.chains.size(); ++c) {
      const rta::ChainResult& r = report.chains[c];
      if (r.schedulable || r.best_effort) continue;
      if (worst < 0 || system.chains[c].priority > system.chains[worst].priority) worst = static_cast<int>(c);
    }
    if (worst < 0) return "chain set is not schedulable";
    rta::Options full;
    full.stop_at_deadline = false;
    Result<rta::Report> exact = rta::Analyze(system, full);
    const rta::ChainResult& r = exact.ok() ? exact->chains[worst] : report.chains[worst];
    std::string msg = "chain '" + r.name + "' would miss its deadline " + Ms(r.deadline);
    if (std::isinf(r.wcrt)) return msg + ": its bound is unbounded (an accelerator or a CPU is overloaded)";
    return msg + " by " + Ms(r.wcrt - r.deadline) + " (bound " + Ms(r.wcrt) + ")";
  }

  std::string Summary(const rta::Report& report, const std::string& chain, uint32_t length) const {
    int critical = 0;
    std::string bound;
    for (const rta::ChainResult& r : report.chains) {
      if (!r.best_effort) ++critical;
      if (r.name == chain) bound = "; bound of '" + chain + "' " + Ms(r.wcrt) + " (deadline " + Ms(r.deadline) + ")";
    }
    uint32_t present = 0;
    for (const auto& [id, r] : admitted_) present += r.model.chain == chain ? 1 : 0;
    std::string partial;
    if (present < length)
      partial = " [partial chain: " + std::to_string(present) + " of " + std::to_string(length) + " callbacks registered]";
    return "admitted: all " + std::to_string(critical) + " critical chains schedulable" + bound + partial;
  }

  // The bound of one request of each registration, for the server's bound monitor: the
  // largest over its segments of the segment's handling time as the analysis bounds it, plus
  // epsilon (Eq. (1) charges epsilon per segment). A segment's handling time is at most Lemma
  // 2's H_{c,i,j}, and at most Lemma 3's H^chain of its sub-chain (which bounds all of that
  // sub-chain's segments of one job together) where the sub-chain's response time converged.
  // A registration with an unbounded segment, or none, gets no bound.
  void SetBounds(const std::vector<const Registration*>& regs, const rta::System& system, const rta::Report& report) {
    bounds_.clear();
    for (size_t c = 0; c < system.chains.size() && c < report.chains.size(); ++c) {
      std::vector<const Registration*> members;  // the chain's callbacks, in Build's order
      for (const Registration* r : regs) {
        if (r->model.chain == system.chains[c].name) members.push_back(r);
      }
      std::sort(members.begin(), members.end(), [](const Registration* a, const Registration* b) {
        return a->model.callback_index < b->model.callback_index;
      });
      for (const rta::SubChainResult& sub : report.chains[c].subchains) {
        size_t k = 0;  // into sub.segment_handling
        for (int i = sub.first_callback; i <= sub.last_callback && i < static_cast<int>(members.size()); ++i) {
          const Registration* r = members[static_cast<size_t>(i)];
          double worst = 0.0;
          bool bounded = !r->model.segments_ms.empty();
          for (size_t j = 0; j < r->model.segments_ms.size(); ++j, ++k) {
            double h = k < sub.segment_handling.size() ? sub.segment_handling[k] : rta::kInfinity;
            if (sub.converged && std::isfinite(sub.handling_per_chain)) h = std::min(h, sub.handling_per_chain);
            bounded = bounded && std::isfinite(h);
            worst = std::max(worst, h + params_.overhead_ms);
          }
          if (bounded) bounds_[r->client_id] = worst;
        }
      }
    }
  }

  const AcceleratorParams params_;
  std::map<uint64_t, double> bounds_;          // client id -> RequestBoundMs
  std::map<uint64_t, Registration> admitted_;  // client id -> its callback's registration
  std::set<uint64_t> best_effort_;             // admitted without a timing model
};

}  // namespace

std::unique_ptr<AdmissionPolicy> MakeAnalysisAdmissionPolicy(const AcceleratorParams& params) {
  return std::make_unique<AnalysisAdmissionPolicy>(params);
}

}  // namespace paam
