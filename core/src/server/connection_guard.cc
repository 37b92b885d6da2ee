// server/connection_guard.cc — the control thread's door: accepts connections and keeps the
// ones that have not registered from holding the server's resources. A connection has
// registration_timeout_ms to register; at most max_clients wait at once (the oldest goes when
// more come); at the descriptor limit the oldest unregistered connection makes room for a new
// one, and when only registered clients hold descriptors a newcomer is answered through a
// reserved descriptor and the listen socket rests a moment, so that the thread never spins on
// a connection it cannot accept. What is closed is counted and logged at a bounded rate.
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "common/clock.h"
#include "server/server_impl.h"

namespace paam {

namespace {

constexpr int kAcceptBatch = 64;  // then the accepted connections' messages are read
constexpr uint64_t kListenPauseNs = 100'000'000;
constexpr uint64_t kSayEveryNs = 10'000'000'000;
constexpr int kAnswerAtLimit = 16;  // connections answered through the reserve per pause

// Reads what the connection has sent (its registration, typically) and answers it. A Unix
// socket closed with unread messages resets its peer, whose next read then fails with
// ECONNRESET before it can see the answer; closed after this, the peer reads the answer.
void Answer(int fd, Errc code, const std::string& message) {
  for (int i = 0; i < 4; ++i) {
    std::vector<uint8_t> bytes;
    std::vector<UniqueFd> fds;  // none expected; closed here
    if (!RecvMessage(fd, &bytes, &fds, 0).ok()) break;
  }
  wire::RegisterReply reply;
  reply.version = shm::kProtocolVersion;
  reply.status = code;
  reply.message = message;
  (void)SendMessage(fd, wire::Encode(reply));
}

}  // namespace

std::string Server::Impl::DescriptorLimit() const {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return "out of file descriptors";
  return "out of file descriptors (its limit is " + std::to_string(r.rlim_cur) + ")";
}

void Server::Impl::Count(Throttled* t, const std::string& what) {
  t->what = what;
  ++t->total;
  ++t->unsaid;
  Say(t);
}

void Server::Impl::Say(Throttled* t, bool now_or_never) {
  const uint64_t now = NowNs();
  if (t->unsaid == 0 || (!now_or_never && t->said_ns != 0 && now - t->said_ns < kSayEveryNs)) return;
  Log("%s: %llu (%llu since start; said at most every %llu s)", t->what.c_str(),
      static_cast<unsigned long long>(t->unsaid), static_cast<unsigned long long>(t->total),
      static_cast<unsigned long long>(kSayEveryNs / 1'000'000'000));
  t->unsaid = 0;
  t->said_ns = now;
}

// Tells an unregistered connection why it is closed (it may be a client that was slow to
// send; a registration reply is what it waits for), then closes it.
void Server::Impl::Drop(int epfd, int fd, Errc code, const std::string& message) {
  Answer(fd, code, message);
  Reap(epfd, fd, /*died=*/false);
  dropped_.fetch_add(1);
}

void Server::Impl::Accept(int epfd) {
  for (int i = 0; i < kAcceptBatch; ++i) {
    const int fd = accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      if (err == EINTR || err == ECONNABORTED) continue;
      if (err == EAGAIN || err == EWOULDBLOCK) return;  // no more pending connections
      const bool at_limit = err == EMFILE || err == ENFILE;
      if (at_limit &&
          ShedOldestUnregistered(epfd, nullptr, "server is " + DescriptorLimit() + "; the oldest connection "
                                                "that had not registered was closed")) {
        continue;
      }
      if (at_limit) {
        // Only registered clients hold descriptors: answer the waiting connections through
        // the reserve, one at a time.
        const std::string why = "server is " + DescriptorLimit() + "; try again once clients have left";
        if (reserve_fd_.valid()) {
          reserve_fd_.reset();
          for (int k = 0; k < kAnswerAtLimit; ++k) {
            UniqueFd conn(accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
            if (!conn.valid()) break;
            Answer(conn.get(), Errc::kResourceExhausted, why);
            dropped_.fetch_add(1);
            Count(&refused_, "refused connections, " + DescriptorLimit());
          }
          reserve_fd_.reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
        }
      }
      // Out of descriptors or another failure that the next accept would meet at once: rest
      // the listen socket (level-triggered, it would wake this thread again and again).
      epoll_ctl(epfd, EPOLL_CTL_DEL, listen_fd_.get(), nullptr);
      listen_paused_until_ = NowNs() + kListenPauseNs;
      return;
    }
    if (Unregistered() >= options_.max_clients) {
      ShedOldestUnregistered(epfd, nullptr, "server has " + std::to_string(options_.max_clients) +
                                                " connections waiting to register; the oldest was closed");
    }
    auto s = std::make_unique<Session>();
    s->socket.reset(fd);
    s->serial = next_serial_++;
    auto cred = GetPeerCredentials(fd);
    if (cred.ok()) s->peer = *cred;
    s->peer_groups = PeerGroups(fd);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = fd;
    epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
    pending_.push_back({fd, s->serial, NowNs()});
    sessions_[fd] = std::move(s);
  }
}

bool Server::Impl::ShedOldestUnregistered(int epfd, const Session* keep, const std::string& why) {
  for (auto p = pending_.begin(); p != pending_.end();) {
    auto it = sessions_.find(p->fd);
    if (it == sessions_.end() || it->second->serial != p->serial || it->second->registered || it->second->tool) {
      p = pending_.erase(p);  // registered, a tool (control_requests.cc) or gone
      continue;
    }
    if (it->second.get() == keep) {
      ++p;
      continue;
    }
    const int fd = p->fd;
    pending_.erase(p);
    Drop(epfd, fd, Errc::kResourceExhausted, why);
    Count(&shed_, "closed the oldest unregistered connections to make room for new ones");
    return true;
  }
  return false;
}

bool Server::Impl::EnsureDescriptors(int epfd, const Session* s, size_t n) {
  std::vector<UniqueFd> probe;  // held until the end: n free at once
  int err = 0;
  while (probe.size() < n) {
    const int fd = fcntl(listen_fd_.get(), F_DUPFD_CLOEXEC, 0);
    if (fd < 0) {
      err = errno;
      break;
    }
    probe.emplace_back(fd);
  }
  const size_t missing = n - probe.size();
  if (missing == 0) return true;
  if (err != EMFILE && err != ENFILE) return true;  // not the limit: the real calls will tell
  const size_t others = Unregistered() - (s->registered ? 0 : 1);
  if (others < missing) return false;
  for (size_t i = 0; i < missing; ++i) {
    ShedOldestUnregistered(epfd, s, "server is " + DescriptorLimit() + "; the oldest connection that had "
                                     "not registered was closed");
  }
  return true;
}

void Server::Impl::GuardTick(int epfd) {
  const uint64_t now = NowNs();
  const uint64_t limit = uint64_t{options_.registration_timeout_ms} * 1'000'000;
  while (!pending_.empty()) {
    const Pending p = pending_.front();
    auto it = sessions_.find(p.fd);
    // A tool (it asked for statistics or a trace) has its own idle limit (control_requests.cc).
    const bool waiting = it != sessions_.end() && it->second->serial == p.serial && !it->second->registered &&
                         !it->second->tool;
    if (waiting && now - p.accepted_ns < limit) break;
    pending_.pop_front();
    if (!waiting) continue;
    Drop(epfd, p.fd, Errc::kTimeout,
         "no registration within " + std::to_string(options_.registration_timeout_ms) + " ms of connecting");
    Count(&timed_out_, "closed connections that did not register within " +
                           std::to_string(options_.registration_timeout_ms) + " ms");
  }
  if (listen_paused_until_ != 0 && now >= listen_paused_until_) {
    listen_paused_until_ = 0;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = listen_fd_.get();
    epoll_ctl(epfd, EPOLL_CTL_ADD, listen_fd_.get(), &ev);
  }
  Say(&timed_out_);
  Say(&shed_);
  Say(&refused_);
}

}  // namespace paam
