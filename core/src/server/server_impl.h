// server/server_impl.h — the state that paamd's parts share (private to core/src/server).
//
// Server::Impl holds everything one server owns; its member functions live with the part of
// the server they belong to (shared/DESIGN.md):
//   server.cc           start-up (Init) and shutdown (Stop), and the public Server face
//   client_registry.cc  the control thread: registration, admission, the bucket map
//   connection_guard.cc the control thread's door: accept, the registration timeout, shedding
//                       unregistered connections, the descriptor limit
//   monitor.cc          the runtime monitor: reaps dead or departed clients, frees their memory
//   dispatcher.cc       hot path: copies descriptors out of the rings into the bucket queues
//   workers.cc          hot path: one thread per (unit, bucket, lane) runs its bucket's requests
//   fallback_worker.cc  multi-version kernels: routing to the CPU fallback, and its worker
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/log.h"
#include "protocol/unix_socket.h"
#include "protocol/wire.h"
#include "server/bucket_queue.h"
#include "server/fallback.h"
#include "server/live_stats.h"
#include "server/server.h"
#include "shm/layout.h"
#include "shm/mapping.h"

namespace paam {

// Bytes of locked memory a region holds against the server's total (--lock-memory); given
// back when the region goes.
struct LockCharge {
  std::atomic<uint64_t>* total = nullptr;
  uint64_t bytes = 0;
  ~LockCharge() {
    if (total != nullptr) total->fetch_sub(bytes);
  }
};

// A (callback, kernel) region as the server keeps it. Private to the server: capacities and
// the kernel come from registration and are never re-read from shared memory.
struct RegionSlot {
  Mapping mapping;
  LockCharge locked;  // bytes == 0: not locked
  shm::RegionHeader* header = nullptr;
  RegionMemory memory;
  const KernelEntry* kernel = nullptr;
  // True from dispatch to completion; a second request for the region meanwhile is dropped.
  std::atomic<bool> in_flight{false};
  // Recent run times of its requests on the bucket's device and on the CPU fallback (kept with
  // the fallback policy on: fallback_worker.cc).
  RunTimeAverage device_time, cpu_time;
};

// One registration (one client callback), owned by the control thread.
struct Session {
  uint64_t id = 0;
  PeerCredentials peer;
  std::vector<gid_t> peer_groups;  // SO_PEERGROUPS, read at accept
  int rule = kNoRule;              // the access rule governing it, once registered
  uint64_t region_bytes = 0;       // its regions' mapping bytes, charged to its rule
  // The longest any of its requests may run (ns): the server's cap, lowered by its access
  // rule's max_request_ms; set at registration.
  uint64_t request_limit_ns = 0;
  // The relative deadline of its requests (ns; 0: none): ClientOptions::deadline_ms, else its
  // timing model's chain deadline. Set at registration; --queue edf and the fallback use it.
  uint64_t relative_deadline_ns = 0;
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
  // Set by the monitor when the client went away: a worker that took one of its requests
  // answers it cancelled instead of running it (cancel.cc).
  std::atomic<bool> gone{false};
  bool registered = false;
  // Live statistics of its requests (live_stats.h); for a tool, its control requests
  // (control_requests.cc): a connection that asked for statistics or a trace without
  // registering, when it last asked, and the statistics snapshot it reads in chunks.
  ClientLive live;
  bool tool = false;
  uint64_t tool_active_ns = 0;
  std::string stats_snapshot;
  uint64_t serial = 0;       // which connection, in accept order (fds are reused)
  uint64_t locked_bytes = 0; // of its regions, under --lock-memory
  // The client's wake eventfd (the server's end; the client got a duplicate). In the
  // dispatcher's wake_epfd_ while registered; a client that writes it can only wake the
  // dispatcher, never keep it asleep or touch another client's.
  UniqueFd wake_fd;
};

// What one worker is running, for the watchdog and the monitor (cancel.cc). The worker
// publishes the request's deadline and session, then its ticket (release); a reader that
// loads the ticket (acquire) sees that request's fields or a later one's, and raises `cancel`
// to the ticket it loaded, which stops that request only (tickets are never reused).
struct RunningRequest {
  std::atomic<uint64_t> ticket{0};  // QueueEntry::order + 1 of the request running; 0: idle
  std::atomic<uint64_t> deadline_ns{UINT64_MAX};
  std::atomic<const Session*> session{nullptr};
  std::atomic<uint64_t> own_word{0};
  std::atomic<uint64_t>* cancel = &own_word;  // or the backend's CancelWord for this worker
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
  std::vector<std::unique_ptr<RunningRequest>> running_;  // one per worker; made before they start

  std::mutex stopped_mu_;
  std::condition_variable stopped_cv_;
  bool stopped_ = false;

  std::atomic<uint64_t> completed_{0}, failed_{0}, protocol_errors_{0}, registrations_{0}, reaped_{0},
      active_{0}, dropped_{0};

  // --lock-memory: whether mlockall took (set before the control thread starts), the region
  // bytes locked now, and whether the log has said that the caps were reached.
  bool memory_locked_ = false;
  std::atomic<uint64_t> locked_region_bytes_{0};
  bool lock_cap_said_ = false;

  // The door (connection_guard.cc), owned by the control thread. Unregistered connections
  // in accept order, for the registration timeout and for shedding the oldest; an entry whose
  // session registered or went (or whose fd now holds another connection) is skipped.
  struct Pending {
    int fd;
    uint64_t serial;
    uint64_t accepted_ns;
  };
  std::deque<Pending> pending_;
  uint64_t next_serial_ = 1;
  UniqueFd reserve_fd_;            // /dev/null, given up to answer a connection at EMFILE
  uint64_t listen_paused_until_ = 0;  // 0: the listen fd is polled
  // Events the log reports at a bounded rate: the first at once, the rest summed at most
  // every few seconds.
  struct Throttled {
    std::string what;  // "closed connections that ...": the counts follow
    uint64_t total = 0, unsaid = 0, said_ns = 0;
  };
  Throttled timed_out_, shed_, refused_, refused_peers_;

  void AddNote(const std::string& note) {
    if (note.empty()) return;
    std::lock_guard<std::mutex> lock(notes_mu_);
    notes_.push_back(note);
    Log("%s", note.c_str());
  }

  // --- dispatcher (dispatcher.cc); DispatcherLoop onwards is the hot path ---
  // Starts the dispatcher thread on `dispatcher_cpu` (-1: unpinned, kept off `reserved`).
  void StartDispatcher(int dispatcher_cpu, int reserved);
  void DispatcherLoop();
  bool DrainAll();
  bool DrainSession(Session* s);
  // --- workers (workers.cc); WorkerLoop onwards is the hot path ---
  // Starts one thread per (unit, bucket, lane) and returns once every one is prepared (its
  // notes known); pinned workers' placement (", w0.0.0 5, w0.1.0 6") for the pinning note.
  std::string StartWorkers(bool pin_workers);
  void WorkerLoop(int unit, int bucket, int lane, RunningRequest* w);
  void RunEntry(const QueueEntry& e, int bucket, int lane, RunningRequest* w);
  // --- hot path of both: publishes a result (workers.cc) ---
  // `ran_on`: where the kernel ran (shm::kRanOn*, maybe | kRanFallback); kRanNowhere: it did not.
  void Complete(RegionSlot* r, Session* s, uint64_t sequence, Errc code, const char* error,
                uint64_t output_bytes, const shm::Timestamps& ts, uint32_t ran_on = shm::kRanNowhere);

  // --- multi-version kernels (fallback_worker.cc) ---
  QueueOrder queue_order_ = QueueOrder::kPriority;  // ServerOptions::queue
  FallbackMode fallback_mode_ = FallbackMode::kOff;
  uint32_t device_ran_on_ = shm::kRanOnCpu;          // what the backend's runs report
  // With the fallback on (else null): a CPU backend that runs the kernels' CPU versions off
  // the device, its queue (the last of queues_, so that the watchdog and the monitor see it),
  // its worker, the recent device time of each bucket and the worker's recent run time.
  std::unique_ptr<Backend> fallback_backend_;
  BucketQueue* fallback_queue_ = nullptr;
  std::thread fallback_thread_;
  std::unique_ptr<RunTimeAverage[]> bucket_time_;  // [unit * buckets_ + bucket]
  RunTimeAverage fallback_time_;
  std::atomic<uint64_t> fallback_runs_{0};
  // Init, after queues_: sets up the above when the fallback is on. Then, with the workers:
  Status InitFallback();
  void StartFallbackWorker(int reserved);
  // Dispatcher: where `e` goes, its bucket's `queue` or the fallback queue (marking e->fallback).
  BucketQueue& Route(QueueEntry* e, BucketQueue& queue, int unit, int bucket);
  // Worker: hands `e` to the fallback queue because the device is lost; false where it cannot
  // go there (then it runs, or fails, on the device as before).
  bool RerouteLost(const QueueEntry& e);
  // Worker: a request's run on the device took `ns` (recent means for the policy).
  void RecordDeviceTime(const QueueEntry& e, int bucket, uint64_t ns);
  void FallbackLoop(RunningRequest* w);
  void RunFallback(const QueueEntry& e, RunningRequest* w);

  // --- control thread: access policy (access_control.cc) ---
  // OK when the policy lets `s`'s peer in (permission_denied, saying why, otherwise).
  Status CheckPeer(const Session& s) const;
  // The caps of `s`'s rule against what it asks for; on success charges the rule (the
  // matching Uncharge is done by the monitor when the session goes).
  Status ChargeRule(Session* s, uint32_t priority, uint64_t region_bytes);
  void UnchargeRule(const Session& s);
  // Registered clients and region bytes per rule of options_.access (control thread).
  std::vector<uint32_t> rule_clients_;
  std::vector<uint64_t> rule_bytes_;
  // --- control thread: registry and admission (client_registry.cc) ---
  void ControlLoop();
  void HandleMessage(int epfd, Session* s);
  void Register(int epfd, Session* s, const std::vector<uint8_t>& bytes);
  Status BuildRegions(Session* s, const wire::RegisterRequest& req, wire::RegisterReply* reply,
                      std::vector<UniqueFd>* fds);
  // Locks a new region's mapping if the --lock-memory caps allow (else says so, once).
  void LockRegion(Session* s, RegionSlot* r, const std::string& kernel);
  // --- control thread: the door (connection_guard.cc) ---
  void Accept(int epfd);
  size_t Unregistered() const { return sessions_.size() - static_cast<size_t>(active_.load()); }
  // Closes the oldest unregistered connection other than `keep`, telling it `why`; false if
  // there is none.
  bool ShedOldestUnregistered(int epfd, const Session* keep, const std::string& why);
  // Makes sure `n` descriptors can be opened, shedding the oldest unregistered connections
  // (never `s`) if that is what it takes; false if even that would not do.
  bool EnsureDescriptors(int epfd, const Session* s, size_t n);
  // Closes unregistered connections past the registration timeout, resumes polling the
  // listen fd after a pause, and says what the throttled counts have not said yet.
  void GuardTick(int epfd);
  void Drop(int epfd, int fd, Errc code, const std::string& message);
  // Counts one event of `t` and logs the count unless that was done less than a few
  // seconds ago; Say(t) alone logs what is unsaid once that time has passed (or at once:
  // when the server stops).
  void Count(Throttled* t, const std::string& what);
  void Say(Throttled* t, bool now_or_never = false);
  std::string DescriptorLimit() const;
  void RemapBuckets();  // REQUIRES: table_mu_ held
  // --- cancellation (cancel.cc) ---
  // The watchdog, every tick of the control loop: stops running requests past their deadline
  // (at their kernel's next slice point) and answers queued ones past it without running them.
  void CancelTick();
  // The monitor, for a client that went away: marks it gone and stops its running requests.
  void CancelRunningOf(Session* s);
  // Stop(): stops every running request, so that the workers can be joined.
  void CancelAllRunning();
  // Raises w's cancel word for `ticket` (once); true if newly raised.
  bool RaiseCancel(RunningRequest* w, uint64_t ticket);
  // The message of a request stopped (or dropped unrun, `ran` false) at `now` (cancel.cc).
  void CancelMessage(const QueueEntry& e, uint64_t now, bool ran, char* out, size_t len) const;
  // Answers `e` cancelled (stopped at `now`, or dropped unrun when `ran` is false), saying why.
  void CompleteCancelled(const QueueEntry& e, uint64_t now, bool ran, const shm::Timestamps& ts,
                         uint32_t ran_on = shm::kRanNowhere);
  // --- live statistics, tracing and the bound monitor ---
  // Workers and dispatcher (live_record.cc): a lane starts a request (true when a lower
  // bucket's lane on its unit is running: its start may wait for a preemption), ends it, and
  // any answered request counts for its client. Off the control thread, nothing else.
  bool LiveBegin(int unit, int bucket, int lane);
  void LiveEnd(const QueueEntry& e, int bucket, int lane, Errc code, const shm::Timestamps& ts, bool contended);
  void LiveClient(Session* s, Errc code, const shm::Timestamps& ts);
  // Control thread (control_requests.cc): statistics and trace requests, from tools and
  // clients; a registration's bound and name; each loop: bounds after admission changes, the
  // first violation of each client in the log, a trace whose tool left, idle tools.
  void HandleControl(int epfd, Session* s, const std::vector<uint8_t>& bytes);
  void OnRegistered(Session* s);
  void LiveTick(int epfd);
  void RefreshBounds();
  // The statistics snapshot (stats_json.cc) and one chunk of the trace (control_requests.cc).
  std::string StatsJson() const;
  std::string TraceChunk(size_t* waiting, bool* more);
  LiveStats live_;
  uint64_t start_ns_ = 0;
  std::atomic<uint64_t> cancelled_requests_{0};
  struct TraceOwner {
    int fd = -1;
    uint64_t serial = 0;
    int pid = 0;
  } trace_owner_;
  std::vector<TraceRecord> trace_carry_;  // drained from the rings, not sent yet
  std::map<uint64_t, std::string> client_names_;  // registered, or departed during a trace
  // registrations_ and active_ when the bounds were last set: any registration or removal
  // changes the pair.
  uint64_t bounds_registrations_ = UINT64_MAX, bounds_active_ = UINT64_MAX;
  uint64_t violations_seen_ = 0;  // live_.violations_total when the log was last brought up to date
  uint64_t live_tick_ns_ = 0;
  // --- the models query (models_query.cc) ---
  // Init: the JSON of the models the registry's kernels publish (tensor signatures); an error
  // when one is malformed. Control thread: answers a kModels request with a chunk of it.
  Status BuildModels();
  void HandleModels(int epfd, Session* s, const std::vector<uint8_t>& bytes);
  std::string models_json_;
  // --- control thread: monitor (monitor.cc) ---
  void Reap(int epfd, int fd, bool died);
  void FreeFinishedSessions();
  void CheckPids(int epfd);
};

}  // namespace paam
