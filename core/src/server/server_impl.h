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
  uint64_t serial = 0;       // which connection, in accept order (fds are reused)
  uint64_t locked_bytes = 0; // of its regions, under --lock-memory
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
  Throttled timed_out_, shed_, refused_;

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
  void WorkerLoop(int unit, int bucket, int lane);
  void RunEntry(const QueueEntry& e, int bucket, int lane);
  // --- hot path of both: publishes a result (workers.cc) ---
  void Complete(RegionSlot* r, Session* s, uint64_t sequence, Errc code, const char* error,
                uint64_t output_bytes, const shm::Timestamps& ts);

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
  // --- control thread: monitor (monitor.cc) ---
  void Reap(int epfd, int fd, bool died);
  void FreeFinishedSessions();
  void CheckPids(int epfd);
};

}  // namespace paam
