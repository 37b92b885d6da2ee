// server/client_registry.cc — the registry (control thread, non-real-time): registers
// clients (checks their kernels and sizes, places them on a unit, asks the admission policy),
// creates and hands over their shared memory, and keeps the map from chain priorities to
// buckets. New connections come through the door (connection_guard.cc); hang-ups and
// departures go to the monitor (monitor.cc); both run on this thread too.
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "common/bucket_map.h"
#include "common/clock.h"
#include "common/printable.h"
#include "server/server_impl.h"

namespace paam {

// The control thread: new connections go to the door, client messages to the registry
// (below), hang-ups and the periodic PID check to the monitor.
void Server::Impl::ControlLoop() {
  reserve_fd_.reset(open("/dev/null", O_RDONLY | O_CLOEXEC));  // given up at the descriptor limit
  UniqueFd epfd(epoll_create1(EPOLL_CLOEXEC));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listen_fd_.get();
  epoll_ctl(epfd.get(), EPOLL_CTL_ADD, listen_fd_.get(), &ev);
  uint64_t last_pid_check = NowNs();
  epoll_event events[64];
  while (!stop_.load()) {
    int n = epoll_wait(epfd.get(), events, 64, 20);
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == listen_fd_.get()) {
        Accept(epfd.get());
        continue;
      }
      auto it = sessions_.find(fd);
      if (it == sessions_.end()) continue;
      if (events[i].events & EPOLLIN) HandleMessage(epfd.get(), it->second.get());
      if (sessions_.count(fd) != 0 && (events[i].events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR))) {
        Reap(epfd.get(), fd, /*died=*/true);
      }
    }
    if (NowNs() - last_pid_check > uint64_t{options_.pid_check_ms} * 1'000'000) {
      CheckPids(epfd.get());
      last_pid_check = NowNs();
    }
    GuardTick(epfd.get());
    LiveTick(epfd.get());
    CancelTick();  // requests past their deadline (cancel.cc)
    FreeFinishedSessions();
  }
  for (Throttled* t : {&timed_out_, &shed_, &refused_, &refused_peers_}) Say(t, /*now_or_never=*/true);
}

void Server::Impl::HandleMessage(int epfd, Session* s) {
  std::vector<uint8_t> bytes;
  std::vector<UniqueFd> fds;  // a client has no reason to send any; they are closed
  Status st = RecvMessage(s->socket.get(), &bytes, &fds, 0);
  if (st.code() == Errc::kTimeout) return;
  const int fd = s->socket.get();
  if (!st.ok()) {  // hang-up without a Deregister: the client died or forgot to close
    Reap(epfd, fd, /*died=*/true);
    return;
  }
  auto kind = wire::PeekKind(bytes.data(), bytes.size());
  if (kind && wire::IsControlRequest(*kind)) return HandleControl(epfd, s, bytes);  // control_requests.cc
  if (kind == wire::MessageKind::kModels) return HandleModels(epfd, s, bytes);       // models_query.cc
  if (kind == wire::MessageKind::kRegister && !s->registered) {
    if (Status allowed = CheckPeer(*s); !allowed.ok()) {
      Count(&refused_peers_, "refused peers the access policy does not allow (the latest: " +
                                 Printable(allowed.message(), 300) + ")");
      Drop(epfd, fd, allowed.code(), allowed.message());
      return;
    }
    Register(epfd, s, bytes);
    if (!s->registered) Reap(epfd, fd, /*died=*/false);  // refused: the reply was sent
    return;
  }
  if (kind == wire::MessageKind::kDeregister && s->registered) {
    int sock = dup(fd);  // reply after the session is gone, so the client can rely on it
    Reap(epfd, fd, /*died=*/false);
    (void)SendMessage(sock, wire::EncodeDeregisterReply());
    close(sock);
    return;
  }
  Log("client pid %d sent an unexpected message; closing it", static_cast<int>(s->peer.pid));
  Reap(epfd, fd, /*died=*/true);
}

Status Server::Impl::BuildRegions(Session* s, const wire::RegisterRequest& req, wire::RegisterReply* reply,
                                  std::vector<UniqueFd>* fds) {
  auto chfd = CreateMemfd("paam-channel", sizeof(shm::ChannelHeader));
  if (!chfd.ok()) return chfd.status();
  auto chmap = Mapping::Map(chfd->get(), sizeof(shm::ChannelHeader));
  if (!chmap.ok()) return chmap.status();
  s->channel_mapping = std::move(chmap.value());
  s->channel = new (s->channel_mapping.data()) shm::ChannelHeader();
  s->channel->magic = shm::kChannelMagic;
  s->channel->version = shm::kProtocolVersion;
  s->channel->capacity = shm::kRingCapacity;
  reply->channel_bytes = sizeof(shm::ChannelHeader);
  fds->push_back(std::move(chfd.value()));

  for (const KernelDecl& k : req.kernels) {
    auto r = std::make_unique<RegionSlot>();
    r->kernel = registry_.Find(k.name);
    const shm::RegionLayout layout = shm::ComputeRegionLayout(k.max_input_bytes, k.max_output_bytes);
    auto fd = CreateMemfd("paam-region-" + k.name, layout.mapping_bytes);
    if (!fd.ok()) return fd.status();
    // Under --lock-memory, mapped unlocked: LockRegion locks it within the caps.
    auto map = memory_locked_ ? Mapping::MapUnlocked(fd->get(), layout.mapping_bytes)
                              : Mapping::Map(fd->get(), layout.mapping_bytes);
    if (!map.ok()) return map.status();
    r->mapping = std::move(map.value());
    if (memory_locked_) LockRegion(s, r.get(), k.name);
    auto* base = static_cast<uint8_t*>(r->mapping.data());
    r->header = new (base) shm::RegionHeader();
    shm::RegionHeader* h = r->header;
    h->magic = shm::kRegionMagic;
    h->version = shm::kProtocolVersion;
    h->kernel_id = r->kernel->id;
    h->input_offset = layout.input_offset;
    h->input_capacity = k.max_input_bytes;
    h->output_offset = layout.output_offset;
    h->output_capacity = k.max_output_bytes;
    h->mapping_bytes = layout.mapping_bytes;
    std::strncpy(h->kernel_name, k.name.c_str(), sizeof(h->kernel_name) - 1);
    r->memory.base = base;
    r->memory.mapping_bytes = layout.mapping_bytes;
    r->memory.input = base + layout.input_offset;
    r->memory.input_capacity = k.max_input_bytes;
    r->memory.output = base + layout.output_offset;
    r->memory.output_capacity = k.max_output_bytes;
    r->memory.device_index = s->unit;
    r->memory.device = k.device;
    Status st = backend_->AttachRegion(&r->memory);
    if (!st.ok()) return st;
    reply->regions.push_back({k.name, r->kernel->id, k.max_input_bytes, k.max_output_bytes, layout.mapping_bytes});
    s->regions.push_back(std::move(r));
    fds->push_back(std::move(fd.value()));
  }
  return Status::Ok();
}

void Server::Impl::Register(int epfd, Session* s, const std::vector<uint8_t>& bytes) {
  wire::RegisterReply reply;
  reply.version = shm::kProtocolVersion;
  reply.server_pid = static_cast<int32_t>(getpid());
  reply.buckets = static_cast<uint32_t>(buckets_);
  auto refuse = [&](Errc code, std::string message) {
    reply.status = code;
    reply.message = std::move(message);
    (void)SendMessage(s->socket.get(), wire::Encode(reply));
  };

  auto decoded = wire::DecodeRegisterRequest(bytes.data(), bytes.size());
  if (!decoded.ok()) return refuse(decoded.status().code(), decoded.status().message());
  const wire::RegisterRequest& req = decoded.value();
  // max_clients counts registered clients only: connections that have not registered are
  // bounded at the door (connection_guard.cc) and cannot take a client's place.
  if (active_.load() >= options_.max_clients) {
    return refuse(Errc::kResourceExhausted,
                  "server has reached its limit of " + std::to_string(options_.max_clients) + " clients");
  }
  for (const KernelDecl& k : req.kernels) {
    if (registry_.Find(k.name) == nullptr) {
      std::string names;
      for (const auto& n : registry_.Names()) names += (names.empty() ? "" : ", ") + n;
      return refuse(Errc::kUnknownKernel, "unknown kernel '" + k.name + "' (this server has: " + names + ")");
    }
    if (k.max_input_bytes > options_.max_region_bytes || k.max_output_bytes > options_.max_region_bytes) {
      return refuse(Errc::kInputTooLarge, "kernel '" + k.name + "' declares more than the server's limit of " +
                                              std::to_string(options_.max_region_bytes) + " bytes per area");
    }
  }
  for (size_t i = 0; i < req.kernels.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (req.kernels[i].name == req.kernels[j].name) {
        return refuse(Errc::kInvalidArgument, "kernel '" + req.kernels[i].name + "' declared twice");
      }
    }
  }
  // The relative deadline of its requests (--queue edf, the fallback): its own, else its
  // timing model's chain deadline (the period where that is 0). At most a day, as the time
  // limits; a timing model's nonsense is the analysis' to refuse, and here means none.
  constexpr double kMaxDeadlineMs = 86'400'000;
  if (!(req.deadline_ms >= 0 && req.deadline_ms <= kMaxDeadlineMs)) {
    return refuse(Errc::kInvalidArgument, "deadline_ms must be 0 (none) to 86400000 (a day), got " +
                                              std::to_string(req.deadline_ms));
  }
  double relative_ms = req.deadline_ms;
  if (relative_ms == 0 && req.timing && !req.timing->best_effort) {
    relative_ms = req.timing->deadline_ms > 0 ? req.timing->deadline_ms : req.timing->period_ms;
    if (!(relative_ms > 0 && relative_ms <= kMaxDeadlineMs)) relative_ms = 0;
  }
  s->relative_deadline_ns = static_cast<uint64_t>(relative_ms * 1e6);
  // What the registration opens at once: the wake eventfd and its duplicate, the doorbell's
  // duplicate, the channel and one memfd per region (all but the eventfd closed once the
  // reply is sent), and one to spare.
  if (!EnsureDescriptors(epfd, s, 5 + req.kernels.size())) {
    Count(&refused_, "refused registrations, " + DescriptorLimit());
    return refuse(Errc::kResourceExhausted, "server is " + DescriptorLimit() + "; try again once clients have left");
  }
  uint64_t region_bytes = 0;
  for (const KernelDecl& k : req.kernels) {
    region_bytes += shm::ComputeRegionLayout(k.max_input_bytes, k.max_output_bytes).mapping_bytes;
  }
  if (Status charged = ChargeRule(s, req.chain_priority, region_bytes); !charged.ok()) {
    return refuse(charged.code(), charged.message());
  }
  // From here on a refusal gives the rule's charge back.
  auto refuse_charged = [&](Errc code, std::string message) {
    UnchargeRule(*s);
    s->rule = kNoRule;
    refuse(code, std::move(message));
  };
  s->id = next_client_id_++;
  s->priority = req.chain_priority;
  s->uuid = req.callback_uuid;
  s->name = Printable(req.client_name);  // it goes into the log
  s->timed = req.timing.has_value();
  if (req.timing && req.timing->period_ms > 0) {
    double sum = 0;
    for (double a : req.timing->segments_ms) sum += a;
    s->utilization = sum / req.timing->period_ms;
  }
  // Device buffers (CUDA IPC) pin the registration to their GPU: one GPU for all of them,
  // served by this paamd's CUDA backend.
  int device_unit = -1;
  for (const KernelDecl& k : req.kernels) {
    if (!k.device) continue;
    if (backend_->name() != "cuda") {
      return refuse_charged(Errc::kInvalidArgument, "kernel '" + k.name + "' brings device buffers (CUDA IPC handles), but "
                                            "this paamd runs the '" + std::string(backend_->name()) +
                                            "' backend; start it with --backend cuda or send host data");
    }
    const int u = backend_->UnitOfDevice(k.device->gpu);
    if (u < 0) {
      return refuse_charged(Errc::kInvalidArgument, "kernel '" + k.name + "' has device buffers on GPU " +
                                                std::to_string(k.device->gpu) + ", which this paamd does not serve");
    }
    if (device_unit >= 0 && u != device_unit) {
      return refuse_charged(Errc::kInvalidArgument, "device buffers of one registration must live on one GPU");
    }
    if (req.unit >= 0 && req.unit != u) {
      return refuse_charged(Errc::kInvalidArgument, "unit " + std::to_string(req.unit) + " was asked for, but kernel '" +
                                                k.name + "' has its device buffers on GPU " +
                                                std::to_string(k.device->gpu) + " (unit " + std::to_string(u) +
                                                "); name that unit or none");
    }
    device_unit = u;
  }
  // Unit placement: the device buffers' GPU, else the client's choice, else worst fit (Sec.
  // IV-E3, online: registrations arrive one at a time): the unit with the least accelerator
  // utilization, ties to the one with fewer registrations; if admission control refuses it
  // there, the next unit in that order is tried.
  std::vector<int> candidates;
  if (device_unit >= 0) {
    candidates = {device_unit};
  } else if (req.unit >= 0) {
    if (req.unit >= units_) {
      return refuse_charged(Errc::kInvalidArgument, "unit " + std::to_string(req.unit) + " does not exist (this server has " +
                                                std::to_string(units_) + ")");
    }
    candidates = {req.unit};
  } else {
    std::vector<double> load(static_cast<size_t>(units_), 0.0);
    std::vector<int> count(static_cast<size_t>(units_), 0);
    for (const auto& [fd, other] : sessions_) {
      if (!other->registered) continue;
      load[static_cast<size_t>(other->unit)] += other->utilization;
      count[static_cast<size_t>(other->unit)] += 1;
    }
    for (int u = 0; u < units_; ++u) candidates.push_back(u);
    std::stable_sort(candidates.begin(), candidates.end(), [&](int a, int b) {
      const auto ua = static_cast<size_t>(a), ub = static_cast<size_t>(b);
      return load[ua] != load[ub] ? load[ua] < load[ub] : count[ua] < count[ub];
    });
  }

  AdmissionRequest areq;
  areq.client_id = s->id;
  areq.chain_priority = req.chain_priority;
  areq.pid = s->peer.pid;
  areq.timing = req.timing ? &*req.timing : nullptr;
  AdmissionDecision decision;
  std::string first_refusal;
  for (int u : candidates) {
    s->unit = u;
    areq.unit = u;
    decision = admission_->Admit(areq);
    if (decision.admitted) break;
    if (first_refusal.empty()) first_refusal = decision.reason;
  }
  if (!decision.admitted) {
    return refuse_charged(Errc::kNotAdmitted, candidates.size() > 1 ? first_refusal + " (and on every other unit)"
                                                             : first_refusal);
  }
  reply.admission = decision.reason;

  std::vector<UniqueFd> fds;
  fds.push_back(UniqueFd(dup(doorbell_fd_.get())));
  reply.doorbell_bytes = sizeof(shm::DoorbellHeader);
  // The client's own wake eventfd (its duplicate is the second descriptor of the reply).
  s->wake_fd.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  Status st = s->wake_fd.valid() ? Status::Ok()
                                 : Status(Errc::kSystemError, std::string("eventfd: ") + std::strerror(errno));
  if (st.ok()) {
    fds.push_back(UniqueFd(dup(s->wake_fd.get())));
    st = BuildRegions(s, req, &reply, &fds);
  }
  if (st.ok()) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLET;
    ev.data.u64 = s->id;
    if (epoll_ctl(wake_epfd_.get(), EPOLL_CTL_ADD, s->wake_fd.get(), &ev) != 0) {
      st = Status(Errc::kSystemError, std::string("epoll_ctl: ") + std::strerror(errno));
    }
  }
  if (!st.ok()) {
    admission_->Remove(s->id);
    for (auto& r : s->regions) backend_->DetachRegion(&r->memory);
    s->regions.clear();
    return refuse_charged(st.code(), "cannot set up the regions: " + st.message());
  }
  reply.client_id = s->id;
  reply.unit = static_cast<uint32_t>(s->unit);
  {
    std::lock_guard<std::mutex> lock(table_mu_);
    table_.push_back(s);
    s->registered = true;
    RemapBuckets();
    reply.bucket = static_cast<uint32_t>(s->bucket.load());
  }
  registrations_.fetch_add(1);
  active_.fetch_add(1);
  OnRegistered(s);  // its name for traces, every client's bound (control_requests.cc)
  std::vector<int> raw;
  for (auto& f : fds) raw.push_back(f.get());
  // If the client is already gone, the loop notices the hang-up and reaps the session.
  (void)SendMessage(s->socket.get(), wire::Encode(reply), raw);
  // The server keeps only the mappings; the descriptors close here (fds goes out of scope),
  // so a reaped client leaves nothing behind in /proc/<paamd>/fd.
  PAAM_VLOG("registered client %llu pid %d '%s' priority %u bucket %d unit %d (%s)",
            static_cast<unsigned long long>(s->id), static_cast<int>(s->peer.pid), s->name.c_str(), s->priority,
            s->bucket.load(), s->unit, Printable(decision.reason, 512).c_str());
}

void Server::Impl::LockRegion(Session* s, RegionSlot* r, const std::string& kernel) {
  const uint64_t bytes = r->mapping.size();
  if (s->locked_bytes + bytes <= options_.lock_client_bytes &&
      locked_region_bytes_.load() + bytes <= options_.lock_total_bytes && r->mapping.Lock().ok()) {
    s->locked_bytes += bytes;
    locked_region_bytes_.fetch_add(bytes);
    r->locked.total = &locked_region_bytes_;
    r->locked.bytes = bytes;
    return;
  }
  if (lock_cap_said_) return;
  lock_cap_said_ = true;
  Log("locked memory: region '%s' of client pid %d ('%s') is not locked, nor any region beyond the caps of "
      "%llu MiB in total and %llu MiB per client (or where mlock fails); they stay resident as the OS allows "
      "(said once)",
      Printable(kernel).c_str(), static_cast<int>(s->peer.pid), s->name.c_str(),
      static_cast<unsigned long long>(options_.lock_total_bytes >> 20),
      static_cast<unsigned long long>(options_.lock_client_bytes >> 20));
}

// Rule R2 per unit, on the bucket map the admission policy's guarantees assume: with a policy
// that reserves the lowest bucket (analysis), registrations without a timing model go there and
// take no rank, and the others are down-sampled onto the buckets above it.
void Server::Impl::RemapBuckets() {
  const bool reserve = admission_->ReservesLowestBucket() && buckets_ > 1;
  const int ranked_buckets = reserve ? buckets_ - 1 : buckets_;
  auto ranked = [reserve](const Session* s) { return !reserve || s->timed; };
  for (int u = 0; u < units_; ++u) {
    std::vector<uint32_t> prios;
    for (Session* s : table_) {
      if (s->unit == u && ranked(s)) prios.push_back(s->priority);
    }
    const std::vector<uint32_t> distinct = DistinctDescending(std::move(prios));
    for (Session* s : table_) {
      if (s->unit != u) continue;
      const int b = ranked(s) ? BucketOf(s->priority, distinct, ranked_buckets) : buckets_ - 1;
      s->bucket.store(b, std::memory_order_relaxed);
    }
  }
}

}  // namespace paam
