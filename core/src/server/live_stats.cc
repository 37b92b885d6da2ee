// server/live_stats.cc — the lock-free records of live_stats.h: the writers' side (workers,
// dispatcher) and the readers' side (the control thread).
#include "server/live_stats.h"

#include <algorithm>
#include <cmath>

namespace paam {

namespace {

constexpr size_t kMinTraceRing = size_t{1} << 10;
constexpr size_t kMaxTraceRing = size_t{1} << 16;  // per lane: about 6 MiB of records

size_t RoundUpPow2(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

}  // namespace

// --- TraceRing ---

TraceRing::TraceRing(size_t capacity_pow2)
    : mask_(capacity_pow2 - 1), slots_(std::make_unique<TraceRecord[]>(capacity_pow2)) {}

bool TraceRing::Push(const TraceRecord& r) {
  const uint64_t h = head_.load(std::memory_order_relaxed);
  if (h - tail_.load(std::memory_order_acquire) > mask_) {  // SYNC POINT: the consumer freed the slot
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  slots_[h & mask_] = r;
  head_.store(h + 1, std::memory_order_release);  // SYNC POINT: publish the record
  return true;
}

size_t TraceRing::Size() const {
  return static_cast<size_t>(head_.load(std::memory_order_acquire) - tail_.load(std::memory_order_relaxed));
}

bool TraceRing::Pop(TraceRecord* out) {
  const uint64_t t = tail_.load(std::memory_order_relaxed);
  if (t == head_.load(std::memory_order_acquire)) return false;
  *out = slots_[t & mask_];
  tail_.store(t + 1, std::memory_order_release);
  return true;
}

void TraceRing::Clear() { tail_.store(head_.load(std::memory_order_acquire), std::memory_order_release); }

// --- LaneLive ---

LaneLive::LaneLive() : slots_(std::make_unique<Slot[]>(kLaneWindow)) {
  for (size_t i = 0; i < kLaneWindow; ++i) {
    for (auto& t : slots_[i].t) t.store(0, std::memory_order_relaxed);
    slots_[i].flags.store(0, std::memory_order_relaxed);
  }
}

void LaneLive::End(const shm::Timestamps& ts, bool ok, bool contended) {
  const uint64_t h = head_.load(std::memory_order_relaxed);
  // SYNC POINT (seqlock): announce the slot before writing it, so that a reader that sees any
  // of the new values also sees the claim and discards the entry.
  claimed_.store(h + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  Slot& s = slots_[h % kLaneWindow];
  const uint64_t t[6] = {ts.submitted, ts.dequeued, ts.picked, ts.device_start, ts.device_end, ts.completed};
  for (int i = 0; i < 6; ++i) s.t[i].store(t[i], std::memory_order_relaxed);
  s.flags.store((ok ? 1u : 0u) | (contended ? 2u : 0u), std::memory_order_relaxed);
  head_.store(h + 1, std::memory_order_release);
  std::atomic<uint64_t>& counter = ok ? served_ : failed_;
  counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);  // single writer
  in_flight_.store(0, std::memory_order_relaxed);
}

std::vector<StageSample> LaneLive::Window(uint64_t since_ns) const {
  const uint64_t head = head_.load(std::memory_order_acquire);
  const uint64_t n = std::min<uint64_t>(head, kLaneWindow);
  std::vector<StageSample> out(static_cast<size_t>(n));
  for (uint64_t k = 0; k < n; ++k) {
    const Slot& s = slots_[(head - n + k) % kLaneWindow];
    StageSample& o = out[static_cast<size_t>(k)];
    for (int i = 0; i < 6; ++i) o.t[i] = s.t[i].load(std::memory_order_relaxed);
    const uint32_t f = s.flags.load(std::memory_order_relaxed);
    o.ok = (f & 1u) != 0;
    o.contended = (f & 2u) != 0;
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  const uint64_t claimed = claimed_.load(std::memory_order_relaxed);
  // The slot of index claimed - 1 is (or was) being written over index claimed - 1 - window:
  // entries from there down may be torn.
  const uint64_t intact_from = claimed > kLaneWindow ? claimed - kLaneWindow : 0;
  std::vector<StageSample> kept;
  kept.reserve(out.size());
  for (uint64_t k = 0; k < n; ++k) {
    if (head - n + k < intact_from) continue;
    const StageSample& o = out[static_cast<size_t>(k)];
    if (o.t[5] >= since_ns) kept.push_back(o);
  }
  return kept;
}

// --- ClientLive ---

void ClientLive::Enable() {
  if (storage_) return;
  storage_ = std::make_unique<Slot[]>(kClientWindow);
  slots_.store(storage_.get(), std::memory_order_release);
}

bool ClientLive::Record(bool ok, uint64_t submitted_ns, uint64_t completed_ns) {
  // The submit stamp is the client's own: a client that lies about it skews only its figures.
  const uint64_t latency = completed_ns > submitted_ns ? completed_ns - submitted_ns : 0;
  const uint64_t i = count_.fetch_add(1, std::memory_order_relaxed);
  if (Slot* slots = slots_.load(std::memory_order_acquire)) {
    Slot& s = slots[i % kClientWindow];
    s.latency.store(latency, std::memory_order_relaxed);
    s.completed.store(completed_ns, std::memory_order_release);
  }
  if (!ok) failed_.fetch_add(1, std::memory_order_relaxed);
  uint64_t worst = worst_ns_.load(std::memory_order_relaxed);
  while (latency > worst && !worst_ns_.compare_exchange_weak(worst, latency, std::memory_order_relaxed)) {
  }
  const uint64_t bound = bound_ns.load(std::memory_order_relaxed);
  if (bound == 0 || latency <= bound) return false;
  if (violations_.fetch_add(1, std::memory_order_relaxed) == 0) {
    first_bound_ns_.store(bound, std::memory_order_relaxed);
    first_observed_ns_.store(latency, std::memory_order_release);  // SYNC POINT: with the bound
  }
  return true;
}

void ClientLive::FirstViolation(uint64_t* observed_ns, uint64_t* bound) const {
  *observed_ns = first_observed_ns_.load(std::memory_order_acquire);
  *bound = *observed_ns != 0 ? first_bound_ns_.load(std::memory_order_relaxed) : 0;
}

std::vector<uint64_t> ClientLive::Latencies(uint64_t since_ns) const {
  const uint64_t count = count_.load(std::memory_order_acquire);
  const uint64_t n = std::min<uint64_t>(count, kClientWindow);
  std::vector<uint64_t> out;
  const Slot* slots = slots_.load(std::memory_order_acquire);
  if (slots == nullptr) return out;
  out.reserve(static_cast<size_t>(n));
  for (uint64_t k = count - n; k < count; ++k) {
    const Slot& s = slots[k % kClientWindow];
    // A slot being rewritten gives the old or the new request's values: both are real.
    const uint64_t completed = s.completed.load(std::memory_order_acquire);
    if (completed != 0 && completed >= since_ns) out.push_back(s.latency.load(std::memory_order_relaxed));
  }
  return out;
}

// --- LiveStats ---

void LiveStats::Init(int units, const std::vector<int>& lanes) {
  units_ = units;
  buckets_ = static_cast<int>(lanes.size());
  lanes_per_bucket_ = lanes;
  base_.clear();
  lanes_.clear();
  for (int u = 0; u < units; ++u) {
    for (int b = 0; b < buckets_; ++b) {
      base_.push_back(lanes_.size());
      for (int l = 0; l < lanes[static_cast<size_t>(b)]; ++l) lanes_.push_back(std::make_unique<LaneLive>());
    }
  }
}

bool LiveStats::LowerBusy(int unit, int bucket) const {
  for (int b = bucket + 1; b < buckets_; ++b) {
    const size_t first = base_[static_cast<size_t>(unit * buckets_ + b)];
    for (int l = 0; l < lanes_per_bucket_[static_cast<size_t>(b)]; ++l) {
      if (lanes_[first + static_cast<size_t>(l)]->busy()) return true;
    }
  }
  return false;
}

void LiveStats::StartTrace(uint32_t capacity, uint64_t start_ns) {
  tracing.store(false, std::memory_order_release);
  const size_t per_lane = std::clamp(RoundUpPow2(std::max<size_t>(capacity, 1) / std::max<size_t>(lanes_.size(), 1)),
                                     kMinTraceRing, kMaxTraceRing);
  if (rings_.empty() || per_lane > trace_capacity_) {
    for (auto& r : rings_) retired_.push_back(std::move(r));
    rings_.clear();
    for (auto& lane : lanes_) {
      rings_.push_back(std::make_unique<TraceRing>(per_lane));
      lane->trace.store(rings_.back().get(), std::memory_order_release);
    }
    trace_capacity_ = per_lane;
  } else {
    for (auto& r : rings_) r->Clear();
  }
  dropped_base_ = 0;
  for (auto& r : rings_) dropped_base_ += r->dropped();
  trace_start_ns_ = start_ns;
  tracing.store(true, std::memory_order_release);
}

size_t LiveStats::Drain(std::vector<TraceRecord>* out, size_t max) {
  TraceRecord r;
  for (auto& ring : rings_) {
    while (out->size() < max && ring->Pop(&r)) {
      // A worker that saw the previous trace still on may have added one record after the
      // restart cleared its ring.
      if (r.t[5] >= trace_start_ns_) out->push_back(r);
    }
  }
  return out->size();
}

size_t LiveStats::TraceWaiting() const {
  size_t n = 0;
  for (const auto& r : rings_) n += r->Size();
  return n;
}

uint64_t LiveStats::TraceDropped() const {
  uint64_t n = 0;
  for (const auto& r : rings_) n += r->dropped();
  return n - dropped_base_;
}

Summary Summarize(std::vector<double>* v) {
  Summary s;
  s.n = v->size();
  if (v->empty()) return s;
  std::sort(v->begin(), v->end());
  // Nearest rank: the smallest value with at least p of the samples at or below it.
  auto rank = [&](double p) {
    const auto k = static_cast<size_t>(std::ceil(p * static_cast<double>(v->size())));
    return (*v)[std::clamp<size_t>(k, 1, v->size()) - 1];
  };
  s.p50 = rank(0.50);
  s.p99 = rank(0.99);
  s.max = v->back();
  return s;
}

}  // namespace paam
