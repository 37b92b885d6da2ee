// server/admission.h — the admission-control hook of the server.
//
// The server asks the policy before admitting a registration and tells it when a client
// leaves. Thread safety: the server serializes all calls (registration thread and monitor hold
// the server's registry mutex), so implementations need no locking of their own.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "paam/types.h"

namespace paam {

struct AdmissionRequest {
  uint64_t client_id = 0;          // server-assigned, unique for the server's lifetime
  uint32_t chain_priority = 0;     // larger = more critical
  int pid = 0;                     // from SO_PEERCRED
  const TimingModel* timing = nullptr;  // null: best-effort registration without a model
  int unit = 0;                    // the accelerator unit the server placed it on
};

struct AdmissionDecision {
  bool admitted = true;
  // Human-readable: why refused ("chain 'c2' would miss its deadline 50 ms by 3.2 ms"), or
  // how it was admitted ("admitted: all 4 chains schedulable; bound of 'c2' 46.8 ms").
  std::string reason;
};

class AdmissionPolicy {
 public:
  virtual ~AdmissionPolicy() = default;
  virtual AdmissionDecision Admit(const AdmissionRequest& request) = 0;
  // The client left (deregistered or died); forget its contribution.
  virtual void Remove(uint64_t client_id) = 0;
  // The bucket map the policy's guarantees assume. false (admit-all): rule R2 over the
  // priorities of every registration on a unit. true (analysis): the lowest bucket is kept for
  // registrations without a timing model, and rule R2 maps the priorities of the registrations
  // with one onto the buckets above it (all of them when the server has one bucket).
  virtual bool ReservesLowestBucket() const { return false; }
  // The bound the policy's analysis puts on the response time of one request of this client
  // (submitted to completed), in ms: the largest over its callback's accelerator segments
  // (server/stats_json.cc compares each request with it). nullopt: no bound (no analysis, no
  // timing model, or an unbounded segment).
  virtual std::optional<double> RequestBoundMs(uint64_t /*client_id*/) const { return std::nullopt; }
};

// Admits everything and says that no analysis was run.
std::unique_ptr<AdmissionPolicy> MakeAdmitAllPolicy();

// Accelerator parameters the analysis needs (milliseconds). One set for every unit the server
// serves (its GPUs are of one kind); the analysis models each unit as its own accelerator.
struct AcceleratorParams {
  int buckets = 1;
  double overhead_ms = 0.05;    // epsilon: per-request server overhead
  double preemption_ms = 0.0;   // kappa: device preemption cost (0 with one bucket)
  double comm_cost_ms = 0.0;    // epsilon': executor-to-executor hop
};

// Admission by the PAAM response-time analysis (core/src/analysis). Defined by the analysis
// module; returns nullptr if the analysis is not built.
std::unique_ptr<AdmissionPolicy> MakeAnalysisAdmissionPolicy(const AcceleratorParams& params);

}  // namespace paam
