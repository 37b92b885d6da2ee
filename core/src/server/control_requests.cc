// server/control_requests.cc — statistics and tracing over the control socket (control
// thread): requests from tools (connections that never register, such as `paam top`) and from
// registered clients, each let in by the access policy first; the trace's owner and its
// chunks; the bound monitor's upkeep (bounds after every admission change, the first violation
// of each client in the log).
//
// A tool's connection is not closed by the registration timeout once it has asked for
// something; it is closed when idle for kToolIdleNs instead. At most kMaxTools tool
// connections at once. Replies are sent without blocking: a tool that does not read them is
// closed rather than let it stall this thread.
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/printable.h"
#include "server/server_impl.h"

namespace paam {

namespace {

constexpr size_t kMaxTools = 64;
constexpr uint64_t kToolIdleNs = 60'000'000'000;
constexpr uint32_t kDefaultTraceCapacity = 1u << 16;
constexpr size_t kCarryMax = 4096;  // trace records drained ahead of the chunk being written
constexpr size_t kMaxNames = 1u << 16;  // names of departed clients kept for a trace

bool SendNow(int fd, const std::vector<uint8_t>& bytes) {
  ssize_t n = 0;
  do {
    n = send(fd, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(bytes.size());
}

std::string Ms(uint64_t ns) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3f ms", static_cast<double>(ns) / 1e6);
  return buf;
}

}  // namespace

void Server::Impl::HandleControl(int epfd, Session* s, const std::vector<uint8_t>& bytes) {
  const int fd = s->socket.get();
  const auto kind = wire::PeekKind(bytes.data(), bytes.size());
  wire::ControlReply reply;
  reply.kind = kind == wire::MessageKind::kStats ? wire::MessageKind::kStatsReply : wire::MessageKind::kTraceReply;
  auto refuse_and_close = [&](Errc code, const std::string& message) {
    reply.status = code;
    reply.message = message;
    (void)SendNow(fd, wire::Encode(reply));
    Reap(epfd, fd, /*died=*/false);
  };
  auto refuse = [&](Errc code, const std::string& message) {
    reply.status = code;
    reply.message = message;
    if (!SendNow(fd, wire::Encode(reply))) Reap(epfd, fd, /*died=*/false);
  };
  if (Status allowed = CheckPeer(*s); !allowed.ok()) {
    Count(&refused_peers_, "refused peers the access policy does not allow (the latest: " +
                               Printable(allowed.message(), 300) + ")");
    return refuse_and_close(allowed.code(), allowed.message());
  }
  auto req = wire::DecodeControlRequest(bytes.data(), bytes.size());
  if (!req.ok()) return refuse_and_close(req.status().code(), req.status().message());
  if (!s->registered && !s->tool) {
    size_t tools = 0;
    for (const auto& [other_fd, other] : sessions_) tools += other->tool ? 1 : 0;
    if (tools >= kMaxTools) {
      return refuse_and_close(Errc::kResourceExhausted, "paamd serves at most " + std::to_string(kMaxTools) +
                                                            " tool connections at once; close one (paam top, "
                                                            "paam trace, paam metrics) and try again");
    }
    s->tool = true;
  }
  s->tool_active_ns = NowNs();
  const bool owner = trace_owner_.fd == fd && trace_owner_.serial == s->serial;
  switch (req->kind) {
    case wire::MessageKind::kStats: {
      if (req->offset == 0) s->stats_snapshot = StatsJson();
      if (req->offset > s->stats_snapshot.size()) {
        return refuse(Errc::kInvalidArgument, "statistics offset " + std::to_string(req->offset) +
                                                  " is past the snapshot's " +
                                                  std::to_string(s->stats_snapshot.size()) + " bytes (ask offset 0 first)");
      }
      reply.total = s->stats_snapshot.size();
      reply.offset = req->offset;
      reply.payload = s->stats_snapshot.substr(static_cast<size_t>(req->offset), wire::kMaxControlPayload);
      if (reply.offset + reply.payload.size() == reply.total) std::string().swap(s->stats_snapshot);
      break;
    }
    case wire::MessageKind::kTraceStart: {
      if (live_.tracing.load() && !owner) {
        return refuse(Errc::kBusy, "a trace is being recorded already (by pid " + std::to_string(trace_owner_.pid) +
                                       "); paamd records one at a time");
      }
      live_.StartTrace(req->capacity != 0 ? req->capacity : kDefaultTraceCapacity, NowNs());
      trace_owner_ = {fd, s->serial, static_cast<int>(s->peer.pid)};
      trace_carry_.clear();
      const size_t lanes = static_cast<size_t>(live_.lanes_total());
      reply.payload = nlohmann::json{{"capacity", live_.trace_capacity() * lanes}}.dump();
      PAAM_VLOG("trace started by pid %d (%zu records per lane)", trace_owner_.pid, live_.trace_capacity());
      break;
    }
    case wire::MessageKind::kTraceRead: {
      if (!owner) return refuse(Errc::kInvalidArgument, "no trace was started on this connection");
      size_t waiting = 0;
      reply.payload = TraceChunk(&waiting, &reply.more);
      reply.total = waiting;
      break;
    }
    case wire::MessageKind::kTraceStop: {
      if (!owner && live_.tracing.load()) {
        return refuse(Errc::kInvalidArgument, "the trace being recorded was started by pid " +
                                                  std::to_string(trace_owner_.pid) + ", not on this connection");
      }
      // The owner may still read what was recorded; a new trace (by anyone) ends that.
      if (owner) live_.StopTrace();
      reply.payload = nlohmann::json{{"dropped", owner ? live_.TraceDropped() : 0}}.dump();
      break;
    }
    default:
      break;
  }
  if (!SendNow(fd, wire::Encode(reply))) Reap(epfd, fd, /*died=*/false);  // not reading its replies
}

// {"dropped": N, "clients": {"<id>": "name"}, "records": [[client, pid, priority, "kernel",
// unit, bucket, lane, sequence, "status", submitted, dequeued, picked, device_start,
// device_end, completed], ...]}, at most kMaxControlPayload bytes; paam/observe.py expands it.
std::string Server::Impl::TraceChunk(size_t* waiting, bool* more) {
  *waiting = trace_carry_.size() + live_.TraceWaiting();
  if (trace_carry_.size() < kCarryMax) live_.Drain(&trace_carry_, kCarryMax);
  const std::string head = "{\"dropped\":" + std::to_string(live_.TraceDropped()) + ",\"clients\":{";
  std::string records, clients;
  std::set<uint64_t> named;
  constexpr size_t kSlack = 64;  // the closing brackets and commas
  size_t used = 0;
  for (; used < trace_carry_.size(); ++used) {
    const TraceRecord& r = trace_carry_[used];
    char buf[512];
    const int n = std::snprintf(
        buf, sizeof buf, "[%" PRIu64 ",%d,%u,\"%s\",%u,%u,%u,%" PRIu64 ",\"%s\",%" PRIu64 ",%" PRIu64 ",%" PRIu64
                         ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]",
        r.client, r.pid, r.priority, r.kernel != nullptr ? r.kernel->name.c_str() : "",
        static_cast<unsigned>(r.unit), static_cast<unsigned>(r.bucket), static_cast<unsigned>(r.lane), r.sequence,
        std::string(ErrcName(r.status)).c_str(), r.t[0], r.t[1], r.t[2], r.t[3], r.t[4], r.t[5]);
    std::string one(buf, static_cast<size_t>(std::clamp(n, 0, static_cast<int>(sizeof buf) - 1)));
    std::string name;
    if (!named.count(r.client)) {
      auto it = client_names_.find(r.client);
      name = "\"" + std::to_string(r.client) + "\":" +
             nlohmann::json(it != client_names_.end() ? it->second : std::string()).dump();
    }
    if (head.size() + clients.size() + name.size() + records.size() + one.size() + kSlack > wire::kMaxControlPayload) {
      break;
    }
    if (!name.empty()) {
      clients += (clients.empty() ? "" : ",") + name;
      named.insert(r.client);
    }
    records += (records.empty() ? "" : ",") + one;
  }
  trace_carry_.erase(trace_carry_.begin(), trace_carry_.begin() + static_cast<std::ptrdiff_t>(used));
  *more = !trace_carry_.empty() || live_.TraceWaiting() > 0;
  return head + clients + "},\"records\":[" + records + "]}";
}

void Server::Impl::OnRegistered(Session* s) {
  s->live.Enable();
  client_names_[s->id] = s->name;
  RefreshBounds();
}

void Server::Impl::RefreshBounds() {
  for (const auto& [fd, s] : sessions_) {
    if (!s->registered) continue;
    const std::optional<double> ms = admission_->RequestBoundMs(s->id);
    const bool finite = ms && std::isfinite(*ms) && *ms > 0;
    s->live.bound_ns.store(finite ? static_cast<uint64_t>(std::llround(*ms * 1e6)) : 0, std::memory_order_relaxed);
  }
  bounds_registrations_ = registrations_.load();
  bounds_active_ = active_.load();
}

void Server::Impl::LiveTick(int epfd) {
  // Any registration or removal may change every client's bound (its bucket, its blocking,
  // its interference): the admission policy has already rerun the analysis.
  if (registrations_.load() != bounds_registrations_ || active_.load() != bounds_active_) RefreshBounds();

  const uint64_t violations = live_.violations_total.load(std::memory_order_acquire);
  if (violations != violations_seen_) {
    violations_seen_ = violations;
    for (const auto& [fd, s] : sessions_) {
      if (!s->registered || s->live.violation_logged) continue;
      uint64_t observed = 0, bound = 0;
      s->live.FirstViolation(&observed, &bound);
      if (observed == 0) continue;
      s->live.violation_logged = true;
      Log("bound monitor: client %llu (pid %d, '%s', priority %u) had a request answered in %s, over the %s "
          "that the analysis bounds its accelerator segments with (epsilon %.3f ms, kappa %.3f ms used); "
          "said once per client, all are counted (paam top, paam metrics)",
          static_cast<unsigned long long>(s->id), static_cast<int>(s->peer.pid), s->name.c_str(), s->priority,
          Ms(observed).c_str(), Ms(bound).c_str(), options_.accel.overhead_ms, options_.accel.preemption_ms);
    }
  }

  const uint64_t now = NowNs();
  if (now - live_tick_ns_ < 1'000'000'000) return;
  live_tick_ns_ = now;
  // A trace whose tool went away stops; so do tools that have been idle too long.
  if (trace_owner_.fd >= 0) {
    auto it = sessions_.find(trace_owner_.fd);
    if (it == sessions_.end() || it->second->serial != trace_owner_.serial) {
      if (live_.tracing.load()) PAAM_VLOG("trace stopped: pid %d that recorded it went away", trace_owner_.pid);
      live_.StopTrace();
      trace_owner_ = TraceOwner{};
      trace_carry_.clear();
    }
  }
  std::vector<int> idle;
  for (const auto& [fd, s] : sessions_) {
    if (s->tool && !s->registered && now - s->tool_active_ns > kToolIdleNs) idle.push_back(fd);
  }
  for (int fd : idle) {
    Reap(epfd, fd, /*died=*/false);
    dropped_.fetch_add(1);
  }
  // Names of departed clients are kept only while a trace may still hold their records.
  const bool trace_pending = live_.tracing.load() || !trace_carry_.empty() || live_.TraceWaiting() > 0;
  if (!trace_pending || client_names_.size() > kMaxNames) {
    std::set<uint64_t> present;
    for (const auto& [fd, s] : sessions_) {
      if (s->registered) present.insert(s->id);
    }
    std::erase_if(client_names_, [&](const auto& kv) { return !present.count(kv.first); });
  }
}

}  // namespace paam
