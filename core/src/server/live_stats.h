// server/live_stats.h — what paamd's workers record about the requests they run, for the live
// statistics and the trace that tools read over the control socket (control_requests.cc).
//
// The hot path takes no lock for it. Each lane (one worker thread) is the only writer of its
// LaneLive: counters, a ring of the last kLaneWindow requests' stamps, and, while a trace is
// recorded, a bounded single-producer ring of trace records. A client's ClientLive is written by
// the lanes of its bucket and by the dispatcher (requests it refuses): one fetch_add per request
// and plain stores into a ring of recent latencies. The control thread reads everything with
// acquire loads; a ring entry that a writer may have been overwriting while it was read is
// discarded (the writer announces the slot before it writes, as a seqlock does).
//
// Thread safety: as above. Init, StartTrace, StopTrace and Drain belong to the control thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "paam/status.h"
#include "shm/layout.h"

namespace paam {

struct KernelEntry;

inline constexpr size_t kLaneWindow = 4096;    // stage samples kept per lane
inline constexpr size_t kClientWindow = 512;   // latencies kept per client
inline constexpr uint64_t kWindowNs = 10'000'000'000;  // the "recent window" of the statistics

// One request as a lane keeps it: the six stamps (shm::Timestamps order) and how it ended.
struct StageSample {
  uint64_t t[6] = {0, 0, 0, 0, 0, 0};  // submitted, dequeued, picked, device_start, device_end, completed
  bool ok = false;
  // A lane of a lower-priority bucket of the same unit was running when this one was picked:
  // its start had to preempt (or wait for) that kernel.
  bool contended = false;
};

// One completed request in a trace. Ids only: names are looked up when the trace is read.
struct TraceRecord {
  uint64_t client = 0;
  uint64_t sequence = 0;
  uint64_t t[6] = {0, 0, 0, 0, 0, 0};
  const KernelEntry* kernel = nullptr;
  int32_t pid = 0;
  uint32_t priority = 0;
  Errc status = Errc::kOk;
  uint16_t unit = 0;
  uint8_t bucket = 0;
  uint8_t lane = 0;
};

// A bounded single-producer, single-consumer ring of trace records (one per lane).
class TraceRing {
 public:
  explicit TraceRing(size_t capacity_pow2);
  size_t capacity() const { return mask_ + 1; }
  // Producer (the lane's worker). False (and counted as dropped) when full.
  bool Push(const TraceRecord& r);
  // Consumer (the control thread).
  size_t Size() const;
  bool Pop(TraceRecord* out);
  void Clear();  // drops what is waiting; the producer may be mid-push of one more
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }  // since it was made

 private:
  const size_t mask_;
  std::unique_ptr<TraceRecord[]> slots_;
  alignas(64) std::atomic<uint64_t> head_{0};  // written by the producer
  alignas(64) std::atomic<uint64_t> tail_{0};  // written by the consumer
  std::atomic<uint64_t> dropped_{0};           // written by the producer
};

// One lane's counters and recent stage samples. Single writer: the lane's worker.
class LaneLive {
 public:
  LaneLive();
  // --- the worker ---
  void Begin() { in_flight_.store(1, std::memory_order_relaxed); }
  void End(const shm::Timestamps& ts, bool ok, bool contended);
  // --- any thread ---
  bool busy() const { return in_flight_.load(std::memory_order_relaxed) != 0; }
  uint64_t served() const { return served_.load(std::memory_order_relaxed); }
  uint64_t failed() const { return failed_.load(std::memory_order_relaxed); }
  // --- the control thread: the samples completed at or after `since_ns`, oldest first ---
  std::vector<StageSample> Window(uint64_t since_ns) const;

  // The lane's trace ring, while one exists (set by the control thread before tracing starts;
  // never freed while the server runs, so a worker may still hold it after a stop).
  std::atomic<TraceRing*> trace{nullptr};

 private:
  struct Slot {
    std::atomic<uint64_t> t[6];
    std::atomic<uint32_t> flags;  // bit 0: ok, bit 1: contended
  };
  std::atomic<uint32_t> in_flight_{0};
  std::atomic<uint64_t> served_{0}, failed_{0};
  std::atomic<uint64_t> claimed_{0};  // index + 1 of the slot being written
  std::atomic<uint64_t> head_{0};     // samples written
  std::unique_ptr<Slot[]> slots_;
};

// One client's counters, recent latencies and bound monitor. Written by several threads (the
// lanes of its bucket, the dispatcher), each with one fetch_add and plain stores per request.
class ClientLive {
 public:
  // Its latency ring is made at registration (Enable), so that a connection that never
  // registers costs no memory for it; requests before that are counted without latencies.
  void Enable();
  // Records one answered request; true when it exceeded the bound (a violation).
  bool Record(bool ok, uint64_t submitted_ns, uint64_t completed_ns);

  // The analysis' bound on one request's response time (ns); 0: none. Set by the control thread.
  std::atomic<uint64_t> bound_ns{0};

  uint64_t requests() const { return count_.load(std::memory_order_relaxed); }
  uint64_t failed() const { return failed_.load(std::memory_order_relaxed); }
  uint64_t worst_ns() const { return worst_ns_.load(std::memory_order_relaxed); }
  uint64_t violations() const { return violations_.load(std::memory_order_relaxed); }
  // The first violation's response time and the bound it broke (0, 0 until there is one).
  void FirstViolation(uint64_t* observed_ns, uint64_t* bound) const;
  // Response times (ns) of the requests completed at or after `since_ns` among the last
  // kClientWindow.
  std::vector<uint64_t> Latencies(uint64_t since_ns) const;

  bool violation_logged = false;  // control thread only

 private:
  struct Slot {
    std::atomic<uint64_t> completed{0}, latency{0};
  };
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> failed_{0};
  std::atomic<uint64_t> worst_ns_{0};
  std::atomic<uint64_t> violations_{0};
  std::atomic<uint64_t> first_observed_ns_{0}, first_bound_ns_{0};
  std::unique_ptr<Slot[]> storage_;       // owned here; published through slots_
  std::atomic<Slot*> slots_{nullptr};
};

// Every lane's LiveLane, the trace switch and the totals. Owned by Server::Impl.
class LiveStats {
 public:
  // Before the workers start: lanes[b] is the number of lanes of bucket b (on every unit).
  void Init(int units, const std::vector<int>& lanes);
  LaneLive& Lane(int unit, int bucket, int lane) {
    return *lanes_[base_[static_cast<size_t>(unit * buckets_ + bucket)] + static_cast<size_t>(lane)];
  }
  const LaneLive& Lane(int unit, int bucket, int lane) const {
    return *lanes_[base_[static_cast<size_t>(unit * buckets_ + bucket)] + static_cast<size_t>(lane)];
  }
  // True when a lane of a bucket below `bucket` on `unit` is running a request.
  bool LowerBusy(int unit, int bucket) const;
  int units() const { return units_; }
  int buckets() const { return buckets_; }
  int lanes(int bucket) const { return lanes_per_bucket_[static_cast<size_t>(bucket)]; }
  int lanes_total() const { return static_cast<int>(lanes_.size()); }

  // The trace. `tracing` is the one load a worker pays per request while no trace is recorded.
  std::atomic<bool> tracing{false};
  // Control thread: (re)starts a trace of about `capacity` records over all lanes, from
  // `start_ns` on; stops it; moves up to `max` waiting records into `out`.
  void StartTrace(uint32_t capacity, uint64_t start_ns);
  void StopTrace() { tracing.store(false, std::memory_order_release); }
  size_t Drain(std::vector<TraceRecord>* out, size_t max);
  size_t TraceWaiting() const;
  uint64_t TraceDropped() const;
  size_t trace_capacity() const { return trace_capacity_; }

  std::atomic<uint64_t> violations_total{0};

 private:
  int units_ = 0, buckets_ = 0;
  std::vector<int> lanes_per_bucket_;
  std::vector<size_t> base_;  // [unit * buckets + bucket]: index of its lane 0
  std::vector<std::unique_ptr<LaneLive>> lanes_;
  // Trace rings in use (one per lane) and the ones replaced by larger rings, kept until the
  // server goes because a worker may still hold a pointer to them.
  std::vector<std::unique_ptr<TraceRing>> rings_, retired_;
  size_t trace_capacity_ = 0;  // per lane
  uint64_t trace_start_ns_ = 0;
  uint64_t dropped_base_ = 0;  // the rings' drop counts when the trace started
};

// n, p50, p99 and max (in the values' unit) of `v` (sorted in place); zeros when empty.
struct Summary {
  size_t n = 0;
  double p50 = 0, p99 = 0, max = 0;
};
Summary Summarize(std::vector<double>* v);

}  // namespace paam
