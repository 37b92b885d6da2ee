// server/live_record.cc — the hot path's part of the live statistics and the trace: what a
// worker records when it starts and ends a request, and what every answered request adds to
// its client's figures and bound monitor (live_stats.h). No locks, no allocation, no system
// calls; while no trace is recorded, the trace costs one relaxed load per request.
#include "server/server_impl.h"

namespace paam {

bool Server::Impl::LiveBegin(int unit, int bucket, int lane) {
  live_.Lane(unit, bucket, lane).Begin();
  return bucket + 1 < buckets_ && live_.LowerBusy(unit, bucket);
}

void Server::Impl::LiveEnd(const QueueEntry& e, int bucket, int lane, Errc code, const shm::Timestamps& ts,
                           bool contended) {
  const Session* s = e.session;
  LaneLive& l = live_.Lane(s->unit, bucket, lane);
  l.End(ts, code == Errc::kOk, contended);
  if (!live_.tracing.load(std::memory_order_relaxed)) return;
  TraceRing* ring = l.trace.load(std::memory_order_acquire);
  if (ring == nullptr) return;
  TraceRecord r;
  r.client = s->id;
  r.sequence = e.sequence;
  r.t[0] = ts.submitted;
  r.t[1] = ts.dequeued;
  r.t[2] = ts.picked;
  r.t[3] = ts.device_start;
  r.t[4] = ts.device_end;
  r.t[5] = ts.completed;
  r.kernel = e.region->kernel;
  r.pid = static_cast<int32_t>(s->peer.pid);
  r.priority = s->priority;
  r.status = code;
  r.unit = static_cast<uint16_t>(s->unit);
  r.bucket = static_cast<uint8_t>(bucket);
  r.lane = static_cast<uint8_t>(lane);
  (void)ring->Push(r);  // full: counted as dropped
}

void Server::Impl::LiveClient(Session* s, Errc code, const shm::Timestamps& ts) {
  if (code == Errc::kCancelled) cancelled_requests_.fetch_add(1, std::memory_order_relaxed);
  if (s->live.Record(code == Errc::kOk, ts.submitted, ts.completed)) {
    // SYNC POINT: the control thread that sees the new total sees the client's first violation.
    live_.violations_total.fetch_add(1, std::memory_order_release);
  }
}

}  // namespace paam
