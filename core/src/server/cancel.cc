// server/cancel.cc — stopping requests (docs/security.md, "Cancellation"). Every request has
// a deadline, set by the dispatcher: min(the client's time limit, the client's cap) after its
// submission (RequestDeadline). Each worker publishes the request it runs (RunningRequest);
//   - the watchdog (CancelTick, on the control thread, at most 20 ms apart) raises the cancel
//     word of a worker whose request is past its deadline, and answers the queued requests
//     past theirs with kCancelled without running them;
//   - the monitor (Reap) marks a client that went away as gone and raises the words of its
//     running requests (its queued ones it drops itself);
//   - Stop raises every word, so that the workers can be joined (those requests are not
//     answered: their clients see the server go).
// A kernel sees its word at its next slice point (backend.h, KernelCall::cancel) and stops;
// the backend reports kCancelled and the worker answers with the reason. A kernel without
// slice points runs to the end of its current launch.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "common/clock.h"
#include "server/server_impl.h"

namespace paam {

bool Server::Impl::RaiseCancel(RunningRequest* w, uint64_t ticket) {
  if (w->cancel->load(std::memory_order_relaxed) == ticket) return false;
  w->cancel->store(ticket, std::memory_order_seq_cst);
  return true;
}

void Server::Impl::CancelTick() {
  const uint64_t now = NowNs();
  bool raised = false;
  for (auto& w : running_) {
    const uint64_t ticket = w->ticket.load(std::memory_order_acquire);
    if (ticket == 0 || w->deadline_ns.load(std::memory_order_relaxed) > now) continue;
    raised |= RaiseCancel(w.get(), ticket);
  }
  if (raised) backend_->CancelRaised();
  // Queued past the deadline: answered now (outside the queue's lock), never run.
  std::vector<QueueEntry> expired;
  for (auto& q : queues_) {
    q->RemoveIf([now](const QueueEntry& e) { return e.deadline_ns <= now; },
                [&expired](const QueueEntry& e) { expired.push_back(e); });
  }
  for (const QueueEntry& e : expired) {
    CompleteCancelled(e, now, /*ran=*/false, {e.submit_ns, e.dequeue_ns, 0, 0, 0, NowNs()});
  }
}

void Server::Impl::CompleteCancelled(const QueueEntry& e, uint64_t now, bool ran, const shm::Timestamps& ts,
                                     uint32_t ran_on) {
  char err[shm::kErrorTextBytes];
  CancelMessage(e, now, ran, err, sizeof(err));
  Complete(e.region, e.session, e.sequence, Errc::kCancelled, err, 0, ts, ran_on);
}

void Server::Impl::CancelRunningOf(Session* s) {
  // SYNC POINT: store `gone`, then load the tickets (both seq_cst); a worker stores its ticket,
  // then loads `gone`: either this sees its request or it sees `gone` (workers.cc, RunEntry).
  s->gone.store(true, std::memory_order_seq_cst);
  bool raised = false;
  for (auto& w : running_) {
    const uint64_t ticket = w->ticket.load(std::memory_order_seq_cst);
    if (ticket != 0 && w->session.load(std::memory_order_relaxed) == s) raised |= RaiseCancel(w.get(), ticket);
  }
  if (raised) backend_->CancelRaised();
}

void Server::Impl::CancelAllRunning() {
  bool raised = false;
  for (auto& w : running_) {
    const uint64_t ticket = w->ticket.load(std::memory_order_acquire);
    if (ticket != 0) raised |= RaiseCancel(w.get(), ticket);
  }
  if (raised) backend_->CancelRaised();
}

void Server::Impl::CancelMessage(const QueueEntry& e, uint64_t now, bool ran, char* out, size_t len) const {
  const char* kernel = e.region->kernel->name.c_str();
  const double waited_ms = static_cast<double>(now - std::min(e.submit_ns, now)) / 1e6;
  if (e.session->gone.load(std::memory_order_relaxed)) {
    std::snprintf(out, len, "'%s' was stopped: its client went away", kernel);
    return;
  }
  const uint64_t cap = e.session->request_limit_ns;
  const bool own = e.time_limit_ns != 0 && (cap == 0 || e.time_limit_ns <= cap);
  const uint64_t limit = own ? e.time_limit_ns : cap;
  std::snprintf(out, len, "'%s' %s %.1f ms after its submission, past %s of %.1f ms", kernel,
                ran ? "was stopped" : "did not run: still queued", waited_ms,
                own ? "its time limit" : "the server's cap on a request's length", static_cast<double>(limit) / 1e6);
}

}  // namespace paam
