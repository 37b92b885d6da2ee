// server/workers.cc — the workers (hot path): one thread per (unit, bucket, lane), each
// popping the most urgent request of its bucket and running it on the backend at its bucket's
// hardware priority level, then publishing the result to the waiting client.
#include <pthread.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/futex.h"
#include "common/realtime.h"
#include "server/server_impl.h"

namespace paam {

// thread_cpus: the workers take [1], [2], ... round the list ([0] is the dispatcher's) when
// `pin_workers`; otherwise they stay where the backend puts them.
std::string Server::Impl::StartWorkers(bool pin_workers) {
  const std::vector<int>& cpus = options_.thread_cpus;
  std::string placement;  // ", w0.0.0 5, w0.1.0 6": worker and CPU, for the note on pinning
  std::atomic<int> ready{0};
  int total = 0;
  for (int u = 0; u < units_; ++u) {
    for (int b = 0; b < buckets_; ++b) {
      for (int lane = 0; lane < backend_->Lanes(b); ++lane) {
        const int cpu = pin_workers ? cpus[static_cast<size_t>(1 + total) % cpus.size()] : -1;
        // Names show in `ps -L` / `top -H`: "paamd-w<unit>.<bucket>.<lane>" (15 chars max).
        const std::string name = "paamd-w" + std::to_string(u) + "." + std::to_string(b) + "." + std::to_string(lane);
        if (cpu >= 0) placement += ", " + name.substr(6) + " " + std::to_string(cpu);
        ++total;
        running_.push_back(std::make_unique<RunningRequest>());
        RunningRequest* w = running_.back().get();
        if (std::atomic<uint64_t>* word = backend_->CancelWord(u, b, lane)) w->cancel = word;
        workers_.emplace_back([this, u, b, lane, cpu, name, w, &ready] {
          pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
          // Pinned before the backend prepares the thread, so that what it sets up for the
          // thread is set up where the thread will run.
          std::string note = PinThisThread(cpu);
          std::string backend_note;
          Status s = backend_->PrepareWorker(u, b, lane, &backend_note);
          if (!s.ok()) backend_note += (backend_note.empty() ? "" : "; ") + s.ToString();
          if (!backend_note.empty()) note += (note.empty() ? "" : "; ") + backend_note;
          if (!note.empty()) AddNote("worker unit " + std::to_string(u) + " bucket " + std::to_string(b) + ": " + note);
          ready.fetch_add(1);
          WorkerLoop(u, b, lane, w);
        });
      }
    }
  }
  while (ready.load() < total) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return placement;
}

void Server::Impl::WorkerLoop(int unit, int bucket, int lane, RunningRequest* w) {
  BucketQueue& queue = *queues_[static_cast<size_t>(unit * buckets_ + bucket)];
  uint64_t last_work = NowNs();
  const bool spins = bucket < options_.spin_buckets;
  QueueEntry e;
  while (!stop_.load(std::memory_order_relaxed)) {
    if (queue.TryPop(&e)) {
      RunEntry(e, bucket, lane, w);
      queue.Done();
      last_work = NowNs();
      continue;
    }
    if (spins || NowNs() - last_work < options_.poll_ns) {
      CpuRelax();
      continue;
    }
    if (queue.WaitPop(&e, stop_, std::chrono::milliseconds(100))) {
      RunEntry(e, bucket, lane, w);
      queue.Done();
    }
    last_work = NowNs();
  }
}

// Publishes the request in `w` while it runs, so that the watchdog and the monitor can stop it
// (cancel.cc); one taken after its deadline, or after its client went away, is answered
// cancelled without running.
void Server::Impl::RunEntry(const QueueEntry& e, int bucket, int lane, RunningRequest* w) {
  // A lost device: the CPU fallback takes what it can (fallback_worker.cc).
  if (fallback_queue_ != nullptr && backend_->Lost(e.session->unit) && RerouteLost(e)) return;
  shm::Timestamps ts{e.submit_ns, e.dequeue_ns, NowNs(), 0, 0, 0};
  const uint64_t ticket = e.order + 1;
  w->deadline_ns.store(e.deadline_ns, std::memory_order_relaxed);
  w->session.store(e.session, std::memory_order_relaxed);
  // SYNC POINT: seq_cst store, then seq_cst load of `gone`; the monitor stores `gone`, then
  // loads the tickets: it sees this request or this sees `gone`.
  w->ticket.store(ticket, std::memory_order_seq_cst);
  if (ts.picked >= e.deadline_ns || e.session->gone.load(std::memory_order_seq_cst)) {
    w->ticket.store(0, std::memory_order_release);
    ts.completed = NowNs();
    CompleteCancelled(e, ts.picked, /*ran=*/false, ts);
    return;
  }
  const bool contended = LiveBegin(e.session->unit, bucket, lane);  // live_record.cc
  KernelCall call;
  call.kernel = e.region->kernel;
  call.region = &e.region->memory;
  call.input_bytes = e.input_bytes;
  call.output_bytes = e.output_bytes;
  std::memcpy(call.params, e.params, sizeof(call.params));
  call.device_data = e.device_data;
  call.cancel = w->cancel;
  call.ticket = ticket;
  DeviceTimes times;
  Status st = backend_->Run(call, bucket, lane, &times);
  w->ticket.store(0, std::memory_order_release);
  ts.device_start = times.start_ns;
  ts.device_end = times.end_ns;
  ts.completed = NowNs();
  LiveEnd(e, bucket, lane, st.code(), ts, contended);
  if (st.ok()) RecordDeviceTime(e, bucket, times.end_ns - times.start_ns);
  // The device failed for good under this request: its CPU version runs it instead.
  if (!st.ok() && st.code() != Errc::kCancelled && fallback_queue_ != nullptr &&
      backend_->Lost(e.session->unit) && RerouteLost(e)) {
    return;
  }
  if (st.code() == Errc::kCancelled && stop_.load(std::memory_order_relaxed)) {
    // Stopped by Stop(): not answered, as no outstanding request is (clients see the server
    // die); the region goes with the server.
    e.session->in_flight.fetch_sub(1, std::memory_order_release);
    return;
  }
  if (st.code() == Errc::kCancelled) {
    CompleteCancelled(e, ts.completed, /*ran=*/true, ts, device_ran_on_);
    return;
  }
  Complete(e.region, e.session, e.sequence, st.code(), st.ok() ? nullptr : st.message().c_str(),
           st.ok() ? e.output_bytes : 0, ts, device_ran_on_);
}

// Publishes a completion into the client's region. Also used for the requests the dispatcher
// refuses.
// REQUIRES: the caller counted the request in s->in_flight; this releases it.
void Server::Impl::Complete(RegionSlot* r, Session* s, uint64_t sequence, Errc code, const char* error,
                            uint64_t output_bytes, const shm::Timestamps& ts, uint32_t ran_on) {
  shm::RegionHeader* h = r->header;
  h->sequence = sequence;
  h->status = static_cast<int32_t>(code);
  h->ran_on = ran_on;
  h->output_bytes = output_bytes;
  h->ts = ts;
  if (code != Errc::kOk && error != nullptr) {
    std::strncpy(h->error, error, sizeof(h->error) - 1);
    h->error[sizeof(h->error) - 1] = '\0';
  } else {
    h->error[0] = '\0';
  }
  LiveClient(s, code, ts);
  (code == Errc::kOk ? completed_ : failed_).fetch_add(1, std::memory_order_relaxed);
  r->in_flight.store(false, std::memory_order_release);
  // SYNC POINT: publish everything above, then wake a suspended client if there is one.
  h->state.store(code == Errc::kOk ? shm::kDone : shm::kFailed, std::memory_order_seq_cst);
  if (h->waiters.load(std::memory_order_seq_cst) != 0) FutexWake(&h->state);
  s->in_flight.fetch_sub(1, std::memory_order_release);  // last touch of s and r
}

}  // namespace paam
