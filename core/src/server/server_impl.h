// server/server_impl.h — the state that paamd's parts share (private to core/src/server).
//
// Server::Impl holds everything one server owns; its member functions live with the part of
// the server they belong to (shared/DESIGN.md):
//   server.cc           start-up (Init) and shutdown (Stop), and the public Server face
//   client_registry.cc  the control thread: accept, registration, admission, the bucket map
//   monitor.cc          the runtime monitor: reaps dead or departed clients, frees their memory
//   dispatcher.cc       hot path: copies descriptors out of the rings into the bucket queues
//   workers.cc          hot path: one thread per (unit, bucket, lane) runs its bucket's requests
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
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
  void Accept(int epfd);
  void HandleMessage(int epfd, Session* s);
  void Register(Session* s, const std::vector<uint8_t>& bytes);
  Status BuildRegions(Session* s, const wire::RegisterRequest& req, wire::RegisterReply* reply,
                      std::vector<UniqueFd>* fds);
  void RemapBuckets();  // REQUIRES: table_mu_ held
  // --- control thread: monitor (monitor.cc) ---
  void Reap(int epfd, int fd, bool died);
  void FreeFinishedSessions();
  void CheckPids(int epfd);
};

}  // namespace paam
