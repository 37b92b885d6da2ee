// server/server.cc — the Server's public face, and the start-up and shutdown of its parts:
// the registry and the monitor (control thread), the dispatcher and the workers. The parts
// themselves live in client_registry.cc, monitor.cc, dispatcher.cc and workers.cc; the state
// they share in server_impl.h.
#include "server/server.h"

#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "common/clock.h"
#include "common/realtime.h"
#include "server/server_impl.h"

namespace paam {

// ---------------------------------------------------------------------------------------------
// Start-up and shutdown

Status Server::Impl::Init() {
  for (int cpu : options_.thread_cpus) {
    if (cpu < 0 || cpu >= CPU_SETSIZE) {
      return Status(Errc::kInvalidArgument, "thread_cpus: CPU " + std::to_string(cpu) + " is not a CPU number (0.." +
                                                std::to_string(CPU_SETSIZE - 1) + ")");
    }
  }
  if (options_.max_request_ms == 0 || options_.max_request_ms > 7ull * 86'400'000) {
    return Status(Errc::kInvalidArgument, "max_request_ms must be 1..604800000 (a week), got " +
                                              std::to_string(options_.max_request_ms));
  }
  rule_clients_.assign(options_.access.rules.size(), 0);
  rule_bytes_.assign(options_.access.rules.size(), 0);
  registry_ = KernelRegistry::WithBuiltins();
  for (const auto& p : options_.plugins) {
    Status s = registry_.LoadPlugin(p);
    if (!s.ok()) return s;
  }
  auto backend = CreateBackend(options_.backend, &registry_);
  if (!backend.ok()) return backend.status();
  backend_ = std::move(backend.value());
  // Configured plugins after the backend: the model plugin loads its models onto the GPUs the
  // backend has set up, in the same (primary) context, which libtorch shares.
  for (const auto& p : options_.configured_plugins) {
    Status s = registry_.LoadPlugin(p.path, p.config);
    if (!s.ok()) return s;
  }
  if (Status s = BuildModels(); !s.ok()) return s;  // models_query.cc
  buckets_ = std::clamp(options_.backend.levels, 1, backend_->Levels());
  if (buckets_ != options_.backend.levels) {
    AddNote("asked for " + std::to_string(options_.backend.levels) + " buckets; the " +
            std::string(backend_->name()) + " device offers " + std::to_string(backend_->Levels()) +
            " priority levels, using " + std::to_string(buckets_));
  }
  units_ = std::max(1, backend_->Units());

  if (options_.admission == "analysis") {
    AcceleratorParams p = options_.accel;
    p.buckets = buckets_;
    admission_ = MakeAnalysisAdmissionPolicy(p);
    if (!admission_) return Status(Errc::kInvalidArgument, "this paamd was built without the analysis");
  } else if (options_.admission == "none") {
    admission_ = MakeAdmitAllPolicy();
  } else {
    return Status(Errc::kInvalidArgument, "admission must be 'none' or 'analysis', got '" + options_.admission + "'");
  }
  if (options_.queue == "edf") {
    queue_order_ = QueueOrder::kEdf;
  } else if (options_.queue != "fifo") {
    return Status(Errc::kInvalidArgument, "queue must be 'fifo' or 'edf', got '" + options_.queue + "'");
  }
  // The analysis bounds a bucket's requests served by chain priority; it says nothing of EDF
  // inside a bucket (docs/analysis.md), so no registration may be admitted on its word.
  if (queue_order_ == QueueOrder::kEdf && options_.admission == "analysis") {
    return Status(Errc::kInvalidArgument,
                  "queue 'edf' cannot be combined with admission 'analysis': the response-time analysis covers "
                  "requests served by chain priority inside a bucket (queue 'fifo'), not EDF, and gives no bound "
                  "there; use admission 'none' with queue 'edf', or queue 'fifo'");
  }
  device_ran_on_ = backend_->name() == "cuda" ? shm::kRanOnCuda : shm::kRanOnCpu;

  // The doorbell is shared by every client, so none may write it: map it here, then seal it
  // against all future writes (clients get it read-only; mmap/mprotect PROT_WRITE fail).
  auto fd = CreateMemfd("paam-doorbell", sizeof(shm::DoorbellHeader), /*final_seal=*/false);
  if (!fd.ok()) return fd.status();
  doorbell_fd_ = std::move(fd.value());
  auto map = Mapping::Map(doorbell_fd_.get(), sizeof(shm::DoorbellHeader));
  if (!map.ok()) return map.status();
  doorbell_mapping_ = std::move(map.value());
  doorbell_ = new (doorbell_mapping_.data()) shm::DoorbellHeader();
  doorbell_->magic = shm::kDoorbellMagic;
  doorbell_->version = shm::kProtocolVersion;
  Status sealed = SealFutureWrites(doorbell_fd_.get());
  if (!sealed.ok()) return sealed;
  wake_epfd_.reset(epoll_create1(EPOLL_CLOEXEC));
  stop_fd_.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_epfd_.valid() || !stop_fd_.valid()) {
    return Status(Errc::kSystemError, std::string("dispatcher epoll/eventfd: ") + std::strerror(errno));
  }
  epoll_event stop_ev{};
  stop_ev.events = EPOLLIN;  // level-triggered: once stopping, every wait returns at once
  if (epoll_ctl(wake_epfd_.get(), EPOLL_CTL_ADD, stop_fd_.get(), &stop_ev) != 0) {
    return Status(Errc::kSystemError, std::string("epoll_ctl: ") + std::strerror(errno));
  }

  for (int i = 0; i < units_ * buckets_; ++i) {
    queues_.push_back(std::make_unique<BucketQueue>(options_.queue_capacity, queue_order_));
  }
  if (Status s = InitFallback(); !s.ok()) return s;  // fallback_worker.cc
  backend_->SetQueueDepth([this](int unit, int level) -> uint32_t {
    if (unit < 0 || unit >= units_ || level < 0 || level >= buckets_) return 0;
    return queues_[static_cast<size_t>(unit) * static_cast<size_t>(buckets_) + static_cast<size_t>(level)]->Pending();
  });

  auto listen = ListenUnix(options_.socket_path, options_.socket_mode);
  if (!listen.ok()) return listen.status();
  listen_fd_ = std::move(listen.value());

  // thread_cpus: the dispatcher takes [0], the workers [1], [2], ... round the list. Workers
  // that the backend pins to its device core (ReservedCpu) stay there.
  const int reserved = backend_->ReservedCpu();
  const std::vector<int>& cpus = options_.thread_cpus;
  const bool pin_workers = !cpus.empty() && reserved < 0;
  // Workers first, so their notes are known before we report "serving".
  std::vector<int> lanes;  // per bucket, for the live statistics the workers keep
  for (int b = 0; b < buckets_; ++b) lanes.push_back(backend_->Lanes(b));
  live_.Init(units_, lanes);
  start_ns_ = NowNs();
  const std::string placement = StartWorkers(pin_workers);  // ", w0.0.0 5, w0.1.0 6"
  StartFallbackWorker(reserved);
  if (options_.spin_buckets > 0 && options_.poll_ns != ServerOptions::kPollAlways) {
    AddNote("the dispatcher and the workers of bucket(s) 0.." + std::to_string(options_.spin_buckets - 1) +
            " never sleep (spin buckets " + std::to_string(options_.spin_buckets) + ")");
  }
  const int dispatcher_cpu = options_.dispatcher_cpu >= 0 ? options_.dispatcher_cpu : cpus.empty() ? -1 : cpus[0];
  if (!cpus.empty()) {
    AddNote("threads pinned to CPUs: dispatcher " + std::to_string(dispatcher_cpu) +
            (pin_workers ? placement
                         : "; the " + std::string(backend_->name()) + " backend's workers stay on its device core " +
                               std::to_string(reserved)));
  }
  // Unless pinned, the dispatcher and the control thread stay off the device core of the CPU
  // backend: its workers may hold it with SCHED_FIFO, and a thread stranded behind them would
  // stall.
  StartDispatcher(dispatcher_cpu, reserved);
  // Locked once everything but the control thread is set up (the backend's context, the
  // shared memory, the threads' stacks), and before that thread maps any region, so that
  // regions are locked only within the caps (client_registry.cc, LockRegion).
  if (options_.lock_memory) {
    const std::string note = LockMemory(&memory_locked_);
    AddNote(note + (memory_locked_ ? "; regions locked up to " + std::to_string(options_.lock_total_bytes >> 20) +
                                         " MiB in total and " + std::to_string(options_.lock_client_bytes >> 20) +
                                         " MiB per client"
                                   : std::string()));
  }
  control_thread_ = std::thread([this, reserved] {
    pthread_setname_np(pthread_self(), "paamd-control");
    AddNote(KeepThisThreadOff(reserved));
    ControlLoop();
  });
  return Status::Ok();
}

void Server::Impl::Stop() {
  if (stop_.exchange(true)) return;
  // Hang up on every client first, so that waiting clients learn at once that no answer is
  // coming (a running kernel stops at its next slice point, or runs to its end; no client
  // waits for it).
  if (control_thread_.joinable()) control_thread_.join();
  for (auto& [fd, s] : sessions_) shutdown(fd, SHUT_RDWR);
  if (stop_fd_.valid()) {
    const uint64_t one = 1;
    (void)!write(stop_fd_.get(), &one, sizeof(one));
  }
  for (auto& q : queues_) q->WakeAll();
  CancelAllRunning();  // long kernels stop at their next slice point
  if (dispatcher_thread_.joinable()) dispatcher_thread_.join();
  for (auto& w : workers_) {
    if (w.joinable()) w.join();
  }
  if (fallback_thread_.joinable()) fallback_thread_.join();
  // Nothing runs any more: give every region back to the backend (pinned memory, device
  // buffers, IPC handles), then unmap. Clients see their sockets hang up.
  for (auto& [fd, s] : sessions_) {
    for (auto& r : s->regions) backend_->DetachRegion(&r->memory);
  }
  for (auto& s : dying_) {
    for (auto& r : s->regions) backend_->DetachRegion(&r->memory);
  }
  sessions_.clear();
  dying_.clear();
  if (listen_fd_.valid()) unlink(options_.socket_path.c_str());
  listen_fd_.reset();
  {
    std::lock_guard<std::mutex> lock(stopped_mu_);
    stopped_ = true;
  }
  stopped_cv_.notify_all();
}

// ---------------------------------------------------------------------------------------------
// Public face

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() { Stop(); }

Result<std::unique_ptr<Server>> Server::Start(const ServerOptions& options) {
  ServerOptions o = options;
  if (o.socket_path.empty()) o.socket_path = DefaultSocketPath();
  if (o.poll_ns == ServerOptions::kAutoPoll) o.poll_ns = OnlineCpus() >= 4 ? 50'000 : 0;
  if (o.spin_buckets < 0 || o.spin_buckets > o.backend.levels) {
    return Status(Errc::kInvalidArgument, "spin buckets: " + std::to_string(o.spin_buckets) +
                                              " is not between 0 and the " + std::to_string(o.backend.levels) +
                                              " bucket(s) asked for");
  }
  o.backend.spin_levels = o.spin_buckets;
  auto impl = std::make_unique<Impl>(o);
  Status st = impl->Init();
  if (!st.ok()) return st;
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

void Server::Stop() {
  if (impl_) impl_->Stop();
}
void Server::Wait() { impl_->Wait(); }
const std::string& Server::socket_path() const { return impl_->options_.socket_path; }
int Server::buckets() const { return impl_->buckets_; }
std::string Server::backend_name() const { return std::string(impl_->backend_->name()); }
uint64_t Server::poll_ns() const { return impl_->options_.poll_ns; }
std::vector<std::string> Server::notes() const {
  std::lock_guard<std::mutex> lock(impl_->notes_mu_);
  return impl_->notes_;
}

ServerStats Server::Stats() const {
  ServerStats s;
  s.requests_completed = impl_->completed_.load();
  s.requests_failed = impl_->failed_.load();
  s.protocol_errors = impl_->protocol_errors_.load();
  s.registrations = impl_->registrations_.load();
  s.clients_reaped = impl_->reaped_.load();
  s.active_clients = impl_->active_.load();
  s.connections_dropped = impl_->dropped_.load();
  s.requests_fallback = impl_->fallback_runs_.load();
  return s;
}

}  // namespace paam
