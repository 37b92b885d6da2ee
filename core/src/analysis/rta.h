// analysis/rta.h — worst-case end-to-end response times of chains under PAAM.
//
// Implements ../shared/ANALYSIS.md exactly: Lemma 2 (per-segment handling time), Lemma 3
// (per-chain handling time), their minimum, the arrival bound ceil(t/T)+1, Theorem 1 (with
// spin versus suspend for executors of higher OS priority on the same CPU), Lemma 4 (PiCAS,
// chains without accelerator segments), sub-chains over several executors with the
// communication cost epsilon', and bucket down-sampling floor(rank*n/N).
//
// What the bound assumes (do not trust it outside this):
//  - executors are single-threaded, non-preemptive between callbacks, each pinned to one CPU
//    with a unique real-time priority on that CPU, scheduled by fixed priority (SCHED_FIFO);
//  - chains are periodic (or sporadic with minimum inter-arrival T) with constrained deadlines
//    D <= T, and every chain is schedulable (the "+1" carry-in rests on it; best-effort chains
//    are assumed not to build up a backlog either);
//  - WCETs E and A are true upper bounds; the PAAM server runs on CPUs of its own;
//  - callbacks inherit their chain's priority (PiCAS Algorithm 1 gives exactly that order).
//
// Thread safety: Analyze() is a pure function of its arguments; call it from any thread.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "analysis/model.h"
#include "paam/status.h"

namespace paam::rta {

inline constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Which accelerator handling-time bound to use. The analysis of ANALYSIS.md is kMin; the
// other two exist to show (tests, Fig. 14 study) that neither lemma dominates the other.
enum class HandlingBound : uint8_t {
  kMin = 0,           // min(Lemma 2, Lemma 3) — the PAAM analysis
  kPerSegment = 1,    // Lemma 2 only
  kPerChain = 2,      // Lemma 3 only
};

// What a callback of a lower-priority chain on the same executor blocks a chain with (B_c).
enum class Blocking {
  // ANALYSIS.md's Lemma 4 / Theorem 1 as written: its CPU WCET E_j.
  kCpu,
  // E_j plus the handling time of the callback's accelerator segments (Lemma 2 at its own
  // chain's priority, plus epsilon each): the single-threaded, non-preemptive executor stays
  // with a callback until its requests complete, spinning or suspended. Safe where ANALYSIS.md
  // is optimistic (docs/analysis.md, "Blocking while a lower-priority callback waits").
  kCallback,
};

struct Options {
  HandlingBound handling = HandlingBound::kMin;
  Blocking blocking = Blocking::kCpu;
  // Stop a fixed-point iteration as soon as R > D (ANALYSIS.md). With false, iterate on to
  // the fixed point so an unschedulable chain reports its real bound (kInfinity when the
  // iteration diverges); used to say by how much a chain misses.
  bool stop_at_deadline = true;
};

// One maximal run of consecutive callbacks of a chain on one executor.
struct SubChainResult {
  int executor = 0;
  int first_callback = 0;     // index into Chain::callbacks
  int last_callback = 0;      // inclusive
  double wcrt = 0.0;          // R of the sub-chain
  double blocking = 0.0;      // B: longest callback of a lower-priority chain on the executor
                              // (CPU only, or with its accelerator handling: Options::blocking)
  double own_cpu = 0.0;       // E: sum of the callbacks' CPU WCETs
  double handling = 0.0;      // H*: accelerator handling incl. delta*epsilon (at wcrt)
  double handling_per_segment = 0.0;  // Lemma 2's H^seg (without delta*epsilon)
  double handling_per_chain = 0.0;    // Lemma 3's H^chain(wcrt) (without delta*epsilon)
  double interference_executor = 0.0; // from higher-priority chains on the same executor
  double interference_cpu = 0.0;      // from executors of higher OS priority on the CPU
  int segments = 0;           // delta of the sub-chain
  // Lemma 2's H_{c,i,j} of each of its segments (without epsilon), callbacks in order and
  // each callback's segments in order; kInfinity where the iteration diverged.
  std::vector<double> segment_handling;
  bool converged = false;     // reached a fixed point (false: stopped as soon as R > D)
};

struct ChainResult {
  std::string name;
  double wcrt = 0.0;          // end-to-end bound R* (a lower bound of it when !converged)
  double deadline = 0.0;      // effective D
  bool schedulable = false;   // wcrt <= deadline
  bool best_effort = false;
  bool converged = false;     // every sub-chain reached its fixed point
  // Parts of wcrt (sums over the sub-chains): wcrt = blocking + own_cpu + handling +
  // interference + communication.
  double blocking = 0.0;
  double own_cpu = 0.0;
  double handling = 0.0;
  double interference = 0.0;
  double communication = 0.0; // hops * epsilon'
  std::vector<SubChainResult> subchains;
};

struct Report {
  std::vector<ChainResult> chains;  // in the order of System::chains
  bool schedulable = false;         // every chain that is not best-effort is schedulable
};

// Checks the model: indices in range, unique chain priorities, D <= T, positive periods,
// non-negative times, at least one bucket, unique executor priorities per CPU. The message
// names the chain (or executor/accelerator) and the field.
Status Validate(const System& system);

// Validates, then analyses every chain from the highest priority down. Best-effort chains are
// analysed too (their bounds are reported) but do not count towards Report::schedulable.
Result<Report> Analyze(const System& system, const Options& options = {});

// The bucket of every chain on every accelerator: result[a][c] is the bucket (0 = highest) of
// chain c on accelerator a, or -1 if chain c has no segment on a. Rule R2, down-sampling.
std::vector<std::vector<int>> AssignBuckets(const System& system);

}  // namespace paam::rta
