// server/fallback_worker.cc — multi-version kernels in the server (paamd --fallback): the
// dispatcher asks the policy (fallback.h) where each request goes; a request routed to the
// CPU runs its kernel's CPU version on the fallback worker, a thread of its own off the
// device (and off the CPU backend's device core), through a CPU backend of one level, so that
// the watchdog's cancellation reaches it at the kernel's preemption points as on the device.
// A device that is lost (Backend::Lost) sends what its workers still hold there too.
// Completions say where the kernel ran (shm::kRanFallback).
#include <pthread.h>

#include <chrono>
#include <cstring>
#include <string>

#include "common/clock.h"
#include "common/realtime.h"
#include "server/server_impl.h"

namespace paam {

Status Server::Impl::InitFallback() {
  auto mode = ParseFallbackMode(options_.fallback);
  if (!mode.ok()) return mode.status();
  fallback_mode_ = mode.value();
  if (fallback_mode_ == FallbackMode::kOff) return Status::Ok();
  BackendOptions cpu;
  cpu.kind = "cpu";
  cpu.levels = 1;
  cpu.device_cpu = -2;  // not pinned: the thread keeps off the device core itself
  auto backend = CreateBackend(cpu, &registry_);
  if (!backend.ok()) return backend.status();
  fallback_backend_ = std::move(backend.value());
  queues_.push_back(std::make_unique<BucketQueue>(options_.queue_capacity, queue_order_));
  fallback_queue_ = queues_.back().get();
  bucket_time_ = std::make_unique<RunTimeAverage[]>(static_cast<size_t>(units_ * buckets_));
  return Status::Ok();
}

void Server::Impl::StartFallbackWorker(int reserved) {
  if (fallback_queue_ == nullptr) return;
  running_.push_back(std::make_unique<RunningRequest>());  // before the control thread starts
  RunningRequest* w = running_.back().get();
  std::atomic<bool> ready{false};
  fallback_thread_ = std::thread([this, w, reserved, &ready] {
    pthread_setname_np(pthread_self(), "paamd-fallback");
    std::string note = KeepThisThreadOff(reserved);
    std::string backend_note;
    Status s = fallback_backend_->PrepareWorker(0, 0, 0, &backend_note);
    if (!s.ok()) backend_note += (backend_note.empty() ? "" : "; ") + s.ToString();
    if (!backend_note.empty()) note += (note.empty() ? "" : "; ") + backend_note;
    if (!note.empty()) AddNote("fallback worker: " + note);
    ready.store(true);
    FallbackLoop(w);
  });
  while (!ready.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

// Hot path (dispatcher): no allocation; the bucket's lock is taken once to count what is ahead.
BucketQueue& Server::Impl::Route(QueueEntry* e, BucketQueue& queue, int unit, int bucket) {
  const KernelEntry& k = *e->region->kernel;
  FallbackInputs in;
  in.has_cpu_version = k.HasCpu();
  in.has_device_version = device_ran_on_ == shm::kRanOnCuda ? k.HasCuda() : k.HasCpu();
  in.device_data = e->device_data;
  in.device_lost = backend_->Lost(unit);
  in.now_ns = e->dequeue_ns;
  in.due_ns = e->due_ns;
  // Only what the decision needs: the queue is counted where a deadline could be missed.
  if (in.has_cpu_version && !in.device_data && !in.device_lost && in.due_ns != UINT64_MAX) {
    in.device_mean_ns = bucket_time_[static_cast<size_t>(unit * buckets_ + bucket)].Mean();
    in.own_device_ns = e->region->device_time.Mean();
    if (in.device_mean_ns != 0) in.device_ahead = queue.AheadOf(*e);
    in.cpu_mean_ns = fallback_time_.Mean();
    in.own_cpu_ns = e->region->cpu_time.Mean();
    in.cpu_ahead = fallback_queue_->Pending();
  }
  if (!DecideFallback(in).cpu) return queue;
  e->fallback = true;
  return *fallback_queue_;
}

bool Server::Impl::RerouteLost(const QueueEntry& e) {
  if (fallback_queue_ == nullptr || e.device_data || !e.region->kernel->HasCpu()) return false;
  QueueEntry moved = e;
  moved.fallback = true;
  return fallback_queue_->TryPush(moved);
}

void Server::Impl::RecordDeviceTime(const QueueEntry& e, int bucket, uint64_t ns) {
  if (!bucket_time_) return;
  bucket_time_[static_cast<size_t>(e.session->unit * buckets_ + bucket)].Add(ns);
  e.region->device_time.Add(ns);
}

void Server::Impl::FallbackLoop(RunningRequest* w) {
  BucketQueue& queue = *fallback_queue_;
  QueueEntry e;
  while (!stop_.load(std::memory_order_relaxed)) {
    if (queue.TryPop(&e) || queue.WaitPop(&e, stop_, std::chrono::milliseconds(100))) {
      RunFallback(e, w);
      queue.Done();
    }
  }
}

// As RunEntry (workers.cc) on the fallback backend: published in `w` for the watchdog and the
// monitor; one taken after its deadline, or after its client went away, is answered cancelled.
void Server::Impl::RunFallback(const QueueEntry& e, RunningRequest* w) {
  shm::Timestamps ts{e.submit_ns, e.dequeue_ns, NowNs(), 0, 0, 0};
  const uint64_t ticket = e.order + 1;
  w->deadline_ns.store(e.deadline_ns, std::memory_order_relaxed);
  w->session.store(e.session, std::memory_order_relaxed);
  // SYNC POINT: as in RunEntry (the monitor stores `gone`, then loads the tickets).
  w->ticket.store(ticket, std::memory_order_seq_cst);
  if (ts.picked >= e.deadline_ns || e.session->gone.load(std::memory_order_seq_cst)) {
    w->ticket.store(0, std::memory_order_release);
    ts.completed = NowNs();
    CompleteCancelled(e, ts.picked, /*ran=*/false, ts);
    return;
  }
  KernelCall call;
  call.kernel = e.region->kernel;
  call.region = &e.region->memory;
  call.input_bytes = e.input_bytes;
  call.output_bytes = e.output_bytes;
  std::memcpy(call.params, e.params, sizeof(call.params));
  call.cancel = w->cancel;
  call.ticket = ticket;
  DeviceTimes times;
  Status st = fallback_backend_->Run(call, 0, 0, &times);
  w->ticket.store(0, std::memory_order_release);
  ts.device_start = times.start_ns;
  ts.device_end = times.end_ns;
  ts.completed = NowNs();
  fallback_runs_.fetch_add(1, std::memory_order_relaxed);
  if (st.ok()) {
    fallback_time_.Add(times.end_ns - times.start_ns);
    e.region->cpu_time.Add(times.end_ns - times.start_ns);
  }
  constexpr uint32_t kRan = shm::kRanOnCpu | shm::kRanFallback;
  if (st.code() == Errc::kCancelled && stop_.load(std::memory_order_relaxed)) {
    e.session->in_flight.fetch_sub(1, std::memory_order_release);  // not answered: see RunEntry
    return;
  }
  if (st.code() == Errc::kCancelled) {
    CompleteCancelled(e, ts.completed, /*ran=*/true, ts, kRan);
    return;
  }
  Complete(e.region, e.session, e.sequence, st.code(), st.ok() ? nullptr : st.message().c_str(),
           st.ok() ? e.output_bytes : 0, ts, kRan);
}

}  // namespace paam
