// server/dispatcher.cc — the dispatcher (hot path): copies request descriptors out of every
// registered client's ring, checks them against the server's private record of the
// registration, and queues them in their bucket (by chain priority, or by deadline under
// --queue edf), or on the CPU fallback where its policy says so. A request it refuses is
// completed at once with the reason. It sleeps on its epoll set (every client's wake eventfd)
// only after the busy-poll window, and never while spin buckets are configured.
#include <pthread.h>
#include <sys/epoll.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "common/clock.h"
#include "common/realtime.h"
#include "server/descriptor_check.h"
#include "server/server_impl.h"

namespace paam {

// Pinned to `dispatcher_cpu`, or else kept off the CPU backend's device core `reserved` (Init
// says why); then raised to SCHED_FIFO when options_.dispatcher_rt_priority asks for it.
void Server::Impl::StartDispatcher(int dispatcher_cpu, int reserved) {
  dispatcher_thread_ = std::thread([this, reserved, dispatcher_cpu] {
    pthread_setname_np(pthread_self(), "paamd-dispatch");
    if (dispatcher_cpu >= 0) {
      const std::string note = PinThisThread(dispatcher_cpu);
      if (!note.empty()) AddNote("dispatcher: " + note);
    } else {
      AddNote(KeepThisThreadOff(reserved));
    }
    if (options_.dispatcher_rt_priority > 0) {
      std::string fifo_note = SetThisThreadFifo(options_.dispatcher_rt_priority);
      if (fifo_note.empty()) {
        AddNote(RtThrottlingNote());  // paamd runs SCHED_FIFO threads: say if the kernel caps them
      } else {
        std::string nice_note = SetThisThreadNice(-20);
        AddNote("dispatcher: " + fifo_note + (nice_note.empty() ? "; nice -20 instead" : "; " + nice_note));
      }
    }
    DispatcherLoop();
  });
}

// Returns true if any session had a descriptor (or a broken ring).
bool Server::Impl::DrainAll() {
  bool found = false;
  std::lock_guard<std::mutex> lock(table_mu_);
  for (Session* s : table_) found |= DrainSession(s);
  return found;
}

void Server::Impl::DispatcherLoop() {
  uint64_t last_work = NowNs();
  epoll_event events[64];
  while (!stop_.load(std::memory_order_relaxed)) {
    if (DrainAll()) {
      last_work = NowNs();
      continue;
    }
    if (options_.spin_buckets > 0 || NowNs() - last_work < options_.poll_ns) {
      CpuRelax();
      continue;
    }
    // SYNC POINT: announce sleep, then look at every ring once more. A client stores its head,
    // fences, then reads `sleeping`: either this scan sees its descriptor, or it sees 1 and
    // writes its wake eventfd, which the epoll_wait below then returns for. The state that
    // wakes us is per client (its own eventfd), so no client can swallow another's wake-up.
    doorbell_->sleeping.store(1, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!DrainAll()) {
      // Edge-triggered client eventfds: each write is one event and nothing needs reading. A
      // client writing its eventfd in a loop only causes spurious wake-ups.
      (void)epoll_wait(wake_epfd_.get(), events, 64, 100);  // 100 ms: a safety net only
    }
    doorbell_->sleeping.store(0, std::memory_order_relaxed);
    last_work = NowNs();
  }
}

// REQUIRES: table_mu_ held. Returns true if it consumed any descriptor.
bool Server::Impl::DrainSession(Session* s) {
  shm::ChannelHeader* ch = s->channel;
  const uint64_t head = ch->head.load(std::memory_order_acquire);  // SYNC POINT: consumer
  if (head == s->tail) return false;
  if (!RingWindowOk(head, s->tail)) {
    // The client broke its ring (or scribbled on head): skip what we cannot trust.
    protocol_errors_.fetch_add(1, std::memory_order_relaxed);
    s->tail = head;
    ch->tail.store(head, std::memory_order_release);
    return true;
  }
  const int bucket = s->bucket.load(std::memory_order_relaxed);
  BucketQueue& queue = *queues_[static_cast<size_t>(s->unit * buckets_ + bucket)];
  for (; s->tail != head; ++s->tail) {
    shm::RequestDescriptor d;
    std::memcpy(&d, &ch->slots[s->tail % shm::kRingCapacity], sizeof(d));  // copy out, then trust nothing
    const uint64_t now = NowNs();
    if (d.region >= s->regions.size()) {
      protocol_errors_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    RegionSlot* r = s->regions[d.region].get();
    if (r->in_flight.load(std::memory_order_acquire)) {  // cannot answer without clobbering it
      protocol_errors_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    shm::Timestamps ts{d.submit_ns, now, 0, 0, 0, 0};
    char err[shm::kErrorTextBytes];
    uint64_t out_bytes = 0;
    Errc code = CheckDescriptor(d, *r->kernel, r->memory, &out_bytes, err, sizeof(err));
    if (code == Errc::kOk) {
      QueueEntry e;
      e.priority = s->priority;
      e.order = order_.fetch_add(1, std::memory_order_relaxed);
      e.session = s;
      e.region = r;
      e.sequence = d.sequence;
      e.input_bytes = d.input_bytes;
      e.output_bytes = out_bytes;
      std::memcpy(e.params, d.params, sizeof(e.params));
      e.submit_ns = d.submit_ns;
      e.dequeue_ns = now;
      e.device_data = (d.flags & shm::kFlagDeviceData) != 0;  // CheckDescriptor allowed it
      e.time_limit_ns = d.time_limit_ns;
      e.deadline_ns = RequestDeadline(d, now, s->request_limit_ns);
      e.due_ns = RequestDue(d, now, s->relative_deadline_ns);
      r->in_flight.store(true, std::memory_order_relaxed);
      s->in_flight.fetch_add(1, std::memory_order_relaxed);
      // The fallback policy may send it to the CPU instead (fallback_worker.cc).
      BucketQueue& target = fallback_queue_ != nullptr ? Route(&e, queue, s->unit, bucket) : queue;
      if (target.TryPush(e)) continue;
      r->in_flight.store(false, std::memory_order_relaxed);
      s->in_flight.fetch_sub(1, std::memory_order_relaxed);
      code = Errc::kResourceExhausted;
      std::snprintf(err, sizeof(err), "bucket queue full (%zu requests)", options_.queue_capacity);
    }
    s->in_flight.fetch_add(1, std::memory_order_relaxed);
    ts.completed = NowNs();
    Complete(r, s, d.sequence, code, err, 0, ts);
  }
  ch->tail.store(s->tail, std::memory_order_release);
  return true;
}

}  // namespace paam
