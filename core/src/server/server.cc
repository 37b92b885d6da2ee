#include "server/server.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "common/clock.h"
#include "common/futex.h"
#include "common/log.h"
#include "common/realtime.h"
#include "protocol/unix_socket.h"
#include "protocol/wire.h"
#include "common/bucket_map.h"
#include "server/bucket_queue.h"
#include "shm/layout.h"
#include "shm/mapping.h"

namespace paam {

// A (callback, kernel) region as the server keeps it. Private to the server: capacities and
// the kernel come from registration and are never re-read from shared memory.
struct RegionSlot {
  Mapping mapping;
  shm::RegionHeader* header = nullptr;
  RegionMemory memory;
  const KernelEntry* kernel = nullptr;
  // True from dispatch to completion; a second request for the region meanwhile is dropped.
  std::atomic<bool> in_flight{false};
};

// One registration (one client callback), owned by the control thread.
struct Session {
  uint64_t id = 0;
  PeerCredentials peer;
  UniqueFd socket;
  std::string name;
  Uuid uuid{};
  uint32_t priority = 0;
  int unit = 0;
  std::atomic<int> bucket{0};  // re-mapped when the set of priorities changes
  double utilization = 0;      // sum of accelerator segment WCETs / period (for unit placement)
  bool timed = false;          // registered with a timing model
  Mapping channel_mapping;
  shm::ChannelHeader* channel = nullptr;
  uint64_t tail = 0;  // dispatcher-private consumer index; never read from shared memory
  std::vector<std::unique_ptr<RegionSlot>> regions;
  std::atomic<int> in_flight{0};  // queued or running requests; freed when 0 after removal
  bool registered = false;
  // The client's wake eventfd (the server's end; the client got a duplicate). In the
  // dispatcher's wake_epfd_ while registered; a client that writes it can only wake the
  // dispatcher, never keep it asleep or touch another client's.
  UniqueFd wake_fd;
};

class Server::Impl {
 public:
  explicit Impl(const ServerOptions& o) : options_(o) {}
  ~Impl() { Stop(); }

  Status Init();
  void Stop();
  void Wait() {
    std::unique_lock<std::mutex> lock(stopped_mu_);
    stopped_cv_.wait(lock, [&] { return stopped_; });
  }

  const ServerOptions options_;
  KernelRegistry registry_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<AdmissionPolicy> admission_;
  int buckets_ = 1;
  int units_ = 1;
  std::vector<std::string> notes_;
  mutable std::mutex notes_mu_;

  // Constant after Init().
  UniqueFd listen_fd_;
  UniqueFd doorbell_fd_;       // sealed F_SEAL_FUTURE_WRITE: clients can only map it read-only
  Mapping doorbell_mapping_;   // the server's own (writable) mapping, made before the seal
  shm::DoorbellHeader* doorbell_ = nullptr;
  UniqueFd wake_epfd_;         // the dispatcher sleeps here: every client's wake_fd, and stop_fd_
  UniqueFd stop_fd_;           // eventfd written by Stop()
  std::vector<std::unique_ptr<BucketQueue>> queues_;  // [unit * buckets_ + bucket]

  // The table the dispatcher scans. Mutated by the control thread.
  std::mutex table_mu_;
  std::vector<Session*> table_;  // GUARDED_BY(table_mu_)

  // Owned by the control thread.
  std::map<int, std::unique_ptr<Session>> sessions_;  // by socket fd
  std::vector<std::unique_ptr<Session>> dying_;       // removed, waiting for in_flight == 0
  uint64_t next_client_id_ = 1;

  std::atomic<uint64_t> order_{0};
  std::atomic<bool> stop_{false};
  std::thread control_thread_, dispatcher_thread_;
  std::vector<std::thread> workers_;

  std::mutex stopped_mu_;
  std::condition_variable stopped_cv_;
  bool stopped_ = false;

  std::atomic<uint64_t> completed_{0}, failed_{0}, protocol_errors_{0}, registrations_{0}, reaped_{0},
      active_{0};

  void AddNote(const std::string& note) {
    if (note.empty()) return;
    std::lock_guard<std::mutex> lock(notes_mu_);
    notes_.push_back(note);
    Log("%s", note.c_str());
  }

  // --- hot path ---
  void DispatcherLoop();
  bool DrainAll();
  bool DrainSession(Session* s);
  void WorkerLoop(int unit, int bucket, int lane);
  void RunEntry(const QueueEntry& e, int bucket, int lane);
  void Complete(RegionSlot* r, Session* s, uint64_t sequence, Errc code, const char* error,
                uint64_t output_bytes, const shm::Timestamps& ts);

  // --- control thread ---
  void ControlLoop();
  void Accept(int epfd);
  void HandleMessage(int epfd, Session* s);
  void Register(Session* s, const std::vector<uint8_t>& bytes);
  void Reap(int epfd, int fd, bool died);
  void FreeFinishedSessions();
  void RemapBuckets();  // REQUIRES: table_mu_ held
  void CheckPids(int epfd);
  Status BuildRegions(Session* s, const wire::RegisterRequest& req, wire::RegisterReply* reply,
                      std::vector<UniqueFd>* fds);
};

// ---------------------------------------------------------------------------------------------
// Init / Stop

Status Server::Impl::Init() {
  for (int cpu : options_.thread_cpus) {
    if (cpu < 0 || cpu >= CPU_SETSIZE) {
      return Status(Errc::kInvalidArgument, "thread_cpus: CPU " + std::to_string(cpu) + " is not a CPU number (0.." +
                                                std::to_string(CPU_SETSIZE - 1) + ")");
    }
  }
  registry_ = KernelRegistry::WithBuiltins();
  for (const auto& p : options_.plugins) {
    Status s = registry_.LoadPlugin(p);
    if (!s.ok()) return s;
  }
  auto backend = CreateBackend(options_.backend, &registry_);
  if (!backend.ok()) return backend.status();
  backend_ = std::move(backend.value());
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
    queues_.push_back(std::make_unique<BucketQueue>(options_.queue_capacity));
  }
  backend_->SetQueueDepth([this](int unit, int level) -> uint32_t {
    if (unit < 0 || unit >= units_ || level < 0 || level >= buckets_) return 0;
    return queues_[static_cast<size_t>(unit) * static_cast<size_t>(buckets_) + static_cast<size_t>(level)]->Pending();
  });

  auto listen = ListenUnix(options_.socket_path);
  if (!listen.ok()) return listen.status();
  listen_fd_ = std::move(listen.value());

  // thread_cpus: the dispatcher takes [0], the workers [1], [2], ... round the list. Workers
  // that the backend pins to its device core (ReservedCpu) stay there.
  const int reserved = backend_->ReservedCpu();
  const std::vector<int>& cpus = options_.thread_cpus;
  const bool pin_workers = !cpus.empty() && reserved < 0;
  std::string placement;  // ", w0.0.0 5, w0.1.0 6": worker and CPU, for the note below
  // Workers first, so their notes are known before we report "serving".
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
        workers_.emplace_back([this, u, b, lane, cpu, name, &ready] {
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
          WorkerLoop(u, b, lane);
        });
      }
    }
  }
  while (ready.load() < total) std::this_thread::sleep_for(std::chrono::milliseconds(1));
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
  // coming (a kernel that is running cannot be interrupted; its completion is not awaited).
  if (control_thread_.joinable()) control_thread_.join();
  for (auto& [fd, s] : sessions_) shutdown(fd, SHUT_RDWR);
  if (stop_fd_.valid()) {
    const uint64_t one = 1;
    (void)!write(stop_fd_.get(), &one, sizeof(one));
  }
  for (auto& q : queues_) q->WakeAll();
  if (dispatcher_thread_.joinable()) dispatcher_thread_.join();
  for (auto& w : workers_) {
    if (w.joinable()) w.join();
  }
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
// Hot path: dispatcher

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
  if (head - s->tail > shm::kRingCapacity) {
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
    Errc code = Errc::kOk;
    uint64_t out_bytes = 0;
    // The flag is checked against the server's private record of the region, and the sizes
    // against the buffers declared at registration: host areas, or the device buffers.
    const bool device_data = (d.flags & shm::kFlagDeviceData) != 0;
    const bool has_device = r->memory.device.has_value() && r->memory.device_input != nullptr;
    const uint64_t in_cap = device_data && has_device ? r->memory.device->input_bytes : r->memory.input_capacity;
    const uint64_t out_cap = device_data && has_device ? r->memory.device->output_bytes : r->memory.output_capacity;
    const char* where = device_data ? "device buffer" : "size";
    if ((d.flags & ~shm::kKnownFlags) != 0 || d.reserved != 0) {
      code = Errc::kProtocolError;
      std::snprintf(err, sizeof(err), "descriptor has unknown flags (0x%x) or nonzero reserved fields", d.flags);
    } else if (device_data && !has_device) {
      code = Errc::kInvalidArgument;
      std::snprintf(err, sizeof(err), "device-data request for '%s', whose registration has no device buffers",
                    r->kernel->name.c_str());
    } else if (d.input_bytes > in_cap) {
      code = Errc::kInputTooLarge;
      std::snprintf(err, sizeof(err), "input of %llu bytes exceeds the %s of %llu declared for '%s' at registration",
                    static_cast<unsigned long long>(d.input_bytes), where,
                    static_cast<unsigned long long>(in_cap), r->kernel->name.c_str());
    } else if (r->kernel->plan(d.params, d.input_bytes, &out_bytes, err, sizeof(err)) != PAAM_KERNEL_OK) {
      code = Errc::kInvalidArgument;
      err[sizeof(err) - 1] = '\0';
    } else if (out_bytes > out_cap) {
      code = Errc::kOutputTooLarge;
      std::snprintf(err, sizeof(err), "output of %llu bytes exceeds the %s of %llu declared for '%s' at registration",
                    static_cast<unsigned long long>(out_bytes), where,
                    static_cast<unsigned long long>(out_cap), r->kernel->name.c_str());
    }
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
      e.device_data = device_data;
      r->in_flight.store(true, std::memory_order_relaxed);
      s->in_flight.fetch_add(1, std::memory_order_relaxed);
      if (queue.TryPush(e)) continue;
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

// Publishes a completion into the client's region. Also used for refused requests.
// REQUIRES: the caller counted the request in s->in_flight; this releases it.
void Server::Impl::Complete(RegionSlot* r, Session* s, uint64_t sequence, Errc code, const char* error,
                            uint64_t output_bytes, const shm::Timestamps& ts) {
  shm::RegionHeader* h = r->header;
  h->sequence = sequence;
  h->status = static_cast<int32_t>(code);
  h->output_bytes = output_bytes;
  h->ts = ts;
  if (code != Errc::kOk && error != nullptr) {
    std::strncpy(h->error, error, sizeof(h->error) - 1);
    h->error[sizeof(h->error) - 1] = '\0';
  } else {
    h->error[0] = '\0';
  }
  (code == Errc::kOk ? completed_ : failed_).fetch_add(1, std::memory_order_relaxed);
  r->in_flight.store(false, std::memory_order_release);
  // SYNC POINT: publish everything above, then wake a suspended client if there is one.
  h->state.store(code == Errc::kOk ? shm::kDone : shm::kFailed, std::memory_order_seq_cst);
  if (h->waiters.load(std::memory_order_seq_cst) != 0) FutexWake(&h->state);
  s->in_flight.fetch_sub(1, std::memory_order_release);  // last touch of s and r
}

// ---------------------------------------------------------------------------------------------
// Hot path: workers

void Server::Impl::WorkerLoop(int unit, int bucket, int lane) {
  BucketQueue& queue = *queues_[static_cast<size_t>(unit * buckets_ + bucket)];
  uint64_t last_work = NowNs();
  const bool spins = bucket < options_.spin_buckets;
  QueueEntry e;
  while (!stop_.load(std::memory_order_relaxed)) {
    if (queue.TryPop(&e)) {
      RunEntry(e, bucket, lane);
      queue.Done();
      last_work = NowNs();
      continue;
    }
    if (spins || NowNs() - last_work < options_.poll_ns) {
      CpuRelax();
      continue;
    }
    if (queue.WaitPop(&e, stop_, std::chrono::milliseconds(100))) {
      RunEntry(e, bucket, lane);
      queue.Done();
    }
    last_work = NowNs();
  }
}

void Server::Impl::RunEntry(const QueueEntry& e, int bucket, int lane) {
  shm::Timestamps ts{e.submit_ns, e.dequeue_ns, NowNs(), 0, 0, 0};
  KernelCall call;
  call.kernel = e.region->kernel;
  call.region = &e.region->memory;
  call.input_bytes = e.input_bytes;
  call.output_bytes = e.output_bytes;
  std::memcpy(call.params, e.params, sizeof(call.params));
  call.device_data = e.device_data;
  DeviceTimes times;
  Status st = backend_->Run(call, bucket, lane, &times);
  ts.device_start = times.start_ns;
  ts.device_end = times.end_ns;
  ts.completed = NowNs();
  Complete(e.region, e.session, e.sequence, st.code(), st.ok() ? nullptr : st.message().c_str(),
           st.ok() ? e.output_bytes : 0, ts);
}

// ---------------------------------------------------------------------------------------------
// Control thread: registration and runtime monitor (non-real-time)

void Server::Impl::ControlLoop() {
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
    FreeFinishedSessions();
  }
}

void Server::Impl::Accept(int epfd) {
  while (true) {
    int fd = accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN: no more pending connections
    auto s = std::make_unique<Session>();
    s->socket.reset(fd);
    if (sessions_.size() >= options_.max_clients) {
      wire::RegisterReply reply;
      reply.version = shm::kProtocolVersion;
      reply.status = Errc::kResourceExhausted;
      reply.message = "server has reached its limit of " + std::to_string(options_.max_clients) + " clients";
      (void)SendMessage(fd, wire::Encode(reply));
      continue;  // s closes the socket
    }
    auto cred = GetPeerCredentials(fd);
    if (cred.ok()) s->peer = *cred;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = fd;
    epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
    sessions_[fd] = std::move(s);
  }
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
  if (kind == wire::MessageKind::kRegister && !s->registered) {
    Register(s, bytes);
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
    auto map = Mapping::Map(fd->get(), layout.mapping_bytes);
    if (!map.ok()) return map.status();
    r->mapping = std::move(map.value());
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

void Server::Impl::Register(Session* s, const std::vector<uint8_t>& bytes) {
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
  s->id = next_client_id_++;
  s->priority = req.chain_priority;
  s->uuid = req.callback_uuid;
  s->name = req.client_name;
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
      return refuse(Errc::kInvalidArgument, "kernel '" + k.name + "' brings device buffers (CUDA IPC handles), but "
                                            "this paamd runs the '" + std::string(backend_->name()) +
                                            "' backend; start it with --backend cuda or send host data");
    }
    const int u = backend_->UnitOfDevice(k.device->gpu);
    if (u < 0) {
      return refuse(Errc::kInvalidArgument, "kernel '" + k.name + "' has device buffers on GPU " +
                                                std::to_string(k.device->gpu) + ", which this paamd does not serve");
    }
    if (device_unit >= 0 && u != device_unit) {
      return refuse(Errc::kInvalidArgument, "device buffers of one registration must live on one GPU");
    }
    if (req.unit >= 0 && req.unit != u) {
      return refuse(Errc::kInvalidArgument, "unit " + std::to_string(req.unit) + " was asked for, but kernel '" +
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
      return refuse(Errc::kInvalidArgument, "unit " + std::to_string(req.unit) + " does not exist (this server has " +
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
    return refuse(Errc::kNotAdmitted, candidates.size() > 1 ? first_refusal + " (and on every other unit)"
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
    return refuse(st.code(), "cannot set up the regions: " + st.message());
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
  std::vector<int> raw;
  for (auto& f : fds) raw.push_back(f.get());
  // If the client is already gone, the loop notices the hang-up and reaps the session.
  (void)SendMessage(s->socket.get(), wire::Encode(reply), raw);
  // The server keeps only the mappings; the descriptors close here (fds goes out of scope),
  // so a reaped client leaves nothing behind in /proc/<paamd>/fd.
  PAAM_VLOG("registered client %llu pid %d '%s' priority %u bucket %d unit %d (%s)",
            static_cast<unsigned long long>(s->id), static_cast<int>(s->peer.pid), s->name.c_str(), s->priority,
            s->bucket.load(), s->unit, decision.reason.c_str());
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
  // Drop its queued work; a request already running finishes into the still-mapped region.
  Session* raw = s.get();
  for (auto& q : queues_) {
    q->RemoveIf([raw](const QueueEntry& e) { return e.session == raw; },
                [](const QueueEntry& e) {
                  e.region->in_flight.store(false);
                  e.session->in_flight.fetch_sub(1);
                });
  }
  admission_->Remove(s->id);
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
  return s;
}

}  // namespace paam
