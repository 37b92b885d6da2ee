// analysis/model.h — the system model of the PAAM response-time analysis.
//
// Plain values, built by the caller (the Python YAML loader, the admission policy, the
// random chain-set generator) and read by Analyze() in rta.h. The notation follows
// ../shared/ANALYSIS.md (the PAAM paper, Sec. IV-F). All times are in milliseconds.
//
// Thread safety: plain values; a const System may be analysed from several threads at once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace paam::rta {

// How an executor waits while one of its callbacks has an accelerator request outstanding.
// kSpin: the executor keeps its CPU (an HP executor interferes with E + H* per job).
// kSuspend: the executor sleeps (an HP executor interferes with E + delta*epsilon per job).
// Hybrid waiting (spin for a while, then sleep) must be modelled as kSpin: it is the safe side.
enum class Wait : uint8_t { kSpin = 0, kSuspend = 1 };

// One accelerator unit with its own PAAM server (rule R1).
struct Accelerator {
  std::string name;
  int buckets = 1;            // n >= 1: hardware priority levels used by the server
  double overhead = 0.0;      // epsilon: per-request server overhead
  double preemption = 0.0;    // kappa: device-level preemption cost; ignored when buckets == 1
                              // unless best_effort_bucket is set
  // The server keeps one more bucket below these n for work the analysis does not model
  // (paamd --admission analysis puts registrations without a timing model there). It can
  // delay an analysed segment by kappa, so kappa applies even with n == 1.
  bool best_effort_bucket = false;
};

// A single-threaded, non-preemptive, priority-driven (PiCAS) executor pinned to one CPU.
struct Executor {
  std::string name;
  int cpu = 0;
  int priority = 0;           // OS real-time priority; unique among the executors of one CPU
  Wait wait = Wait::kSuspend;
};

// Accelerator segment tau_{i,j}: WCET A_{i,j} on accelerator r_{i,j} (index into System).
struct Segment {
  int accelerator = 0;
  double wcet = 0.0;
};

// Callback tau_i: E_i (all its CPU segments together) and its accelerator segments.
struct Callback {
  std::string name;
  int executor = 0;           // index into System::executors
  double wcet = 0.0;          // E_i
  std::vector<Segment> segments;
};

// Chain Gamma_c: callbacks in order, period T_c, constrained deadline D_c <= T_c.
struct Chain {
  std::string name;
  int64_t priority = 0;       // unique; larger = more critical
  double period = 0.0;
  double deadline = 0.0;      // 0 means "equal to the period"
  bool best_effort = false;   // interferes with others, but need not meet its deadline
  std::vector<Callback> callbacks;
};

struct System {
  std::vector<Accelerator> accelerators;
  std::vector<Executor> executors;
  std::vector<Chain> chains;
  double comm_cost = 0.0;     // epsilon': cost of one executor-to-executor hop in a chain
};

}  // namespace paam::rta
