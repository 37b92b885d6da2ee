// server/monitor.cc — the runtime monitor (control thread, non-real-time): notices clients
// that died (socket hang-up; PID checks as a backstop) or deregistered, takes them out of the
// dispatcher's table, drops their queued work and frees their regions once no request of
// theirs is running.
#include <signal.h>
#include <sys/epoll.h>

#include <algorithm>
#include <cerrno>

#include "server/server_impl.h"

namespace paam {

void Server::Impl::Reap(int epfd, int fd, bool died) {
  auto it = sessions_.find(fd);
  if (it == sessions_.end()) return;
  std::unique_ptr<Session> s = std::move(it->second);
  sessions_.erase(it);
  epoll_ctl(epfd, EPOLL_CTL_DEL, fd, nullptr);
  s->socket.reset();
  if (!s->registered) return;
  {
    std::lock_guard<std::mutex> lock(table_mu_);
    table_.erase(std::remove(table_.begin(), table_.end(), s.get()), table_.end());
    RemapBuckets();
  }
  // Out of the dispatcher's set before closing: the client may still hold its duplicate, which
  // would keep the registration alive in the epoll set.
  epoll_ctl(wake_epfd_.get(), EPOLL_CTL_DEL, s->wake_fd.get(), nullptr);
  s->wake_fd.reset();
  // Drop its queued work, and stop what runs at its kernel's next slice point (cancel.cc); a
  // request still running finishes into the still-mapped region.
  Session* raw = s.get();
  for (auto& q : queues_) {
    q->RemoveIf([raw](const QueueEntry& e) { return e.session == raw; },
                [](const QueueEntry& e) {
                  e.region->in_flight.store(false);
                  e.session->in_flight.fetch_sub(1);
                });
  }
  CancelRunningOf(raw);
  admission_->Remove(s->id);
  UnchargeRule(*s);
  active_.fetch_sub(1);
  if (died) {
    reaped_.fetch_add(1);
    Log("client %llu (pid %d, '%s') went away; reclaimed its %zu region(s)", static_cast<unsigned long long>(s->id),
        static_cast<int>(s->peer.pid), s->name.c_str(), s->regions.size());
  }
  dying_.push_back(std::move(s));
  FreeFinishedSessions();
}

void Server::Impl::FreeFinishedSessions() {
  for (auto it = dying_.begin(); it != dying_.end();) {
    if ((*it)->in_flight.load(std::memory_order_acquire) == 0) {
      for (auto& r : (*it)->regions) backend_->DetachRegion(&r->memory);
      it = dying_.erase(it);  // unmaps channel and regions
    } else {
      ++it;
    }
  }
}

void Server::Impl::CheckPids(int epfd) {
  std::vector<int> dead;
  for (const auto& [fd, s] : sessions_) {
    if (s->peer.pid > 0 && kill(s->peer.pid, 0) != 0 && errno == ESRCH) dead.push_back(fd);
  }
  for (int fd : dead) Reap(epfd, fd, /*died=*/true);
}

}  // namespace paam
