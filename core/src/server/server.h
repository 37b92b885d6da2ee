// server/server.h — paamd, the accelerator server.
//
// One Server owns one backend (one accelerator set: the CPU device, or one CUDA context over
// one or more GPUs). Threads:
//   control    (non-RT) — accepts registrations on the Unix socket, runs admission control,
//                         creates and hands over the shared memory, and is the runtime monitor:
//                         it notices dead clients (socket hang-up; PID checks as a backstop),
//                         drops their queued work and frees their regions.
//   dispatcher          — copies request descriptors out of every client's ring, validates
//                         them and queues them in their bucket (by chain priority).
//   workers             — one per (unit, bucket, lane); each pops the most urgent request of
//                         its bucket and runs it on its hardware priority level.
//
// Thread safety: Start/Stop/Wait may be called from any one thread. Stats() is safe anytime.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "paam/status.h"
#include "server/access_policy.h"
#include "server/admission.h"

namespace paam {

struct ServerOptions {
  // --- Parameters that affect behavior ---
  // Unix socket path. Default: DefaultSocketPath() ($PAAM_SOCKET, $XDG_RUNTIME_DIR/paam/...).
  std::string socket_path;
  // The socket file's mode: 0600 lets only the server's uid (and root) connect; 0660 also its
  // group (docs/security.md). The directory must be private to the server (PrepareSocketDir).
  uint32_t socket_mode = 0600;
  // Device backend and its buckets (backend.levels = requested buckets, clamped to the
  // device's hardware priority levels; default 1).
  BackendOptions backend;
  // Shared libraries with user kernels (kernel_abi.h).
  std::vector<std::string> plugins;
  // Version 2 plugins with their configuration (kernel_abi.h), loaded after `plugins`: the
  // model plugin with the models of --model/--models (server/model_options.h).
  struct PluginConfig {
    std::string path;
    std::string config;
  };
  std::vector<PluginConfig> configured_plugins;
  // Who may connect and with what caps (access_policy.h). Default: paamd's own uid only.
  AccessPolicy access;
  // The longest a request may run, in ms (a client's own time limit may be shorter; an
  // access rule's max_request_ms lowers it for the clients it governs). Default 60 s.
  uint64_t max_request_ms = 60'000;
  // "none": admit everything (and say so); "analysis": PAAM response-time analysis.
  std::string admission = "none";
  // Accelerator parameters for the analysis (epsilon, kappa in ms).
  AcceleratorParams accel;
  // The order of the requests inside a bucket (bucket_queue.h): "fifo" (the default) by chain
  // priority, FIFO among equal priorities, which is what the analysis covers; "edf" by absolute
  // deadline (the request's release plus its registration's relative deadline: the timing
  // model's chain deadline or ClientOptions::deadline_ms), FIFO among equal deadlines. The
  // analysis does not cover "edf": Start refuses it with admission "analysis".
  std::string queue = "fifo";
  // Multi-version kernels (fallback.h): "off" (the default) or "cpu-on-overload": a request of a
  // kernel that has a CPU version runs that version, on a fallback worker off the device, when
  // its bucket's queue would make it miss its deadline and the CPU version's recent time meets
  // it, when the device is lost, or when the device has no version of the kernel; the
  // completion says where it ran (shm ran_on).
  std::string fallback = "off";
  // Largest input or output area one region may declare. Default 256 MiB.
  uint64_t max_region_bytes = 256ull << 20;
  // Most concurrent registrations (a registration beyond it is refused, resource_exhausted),
  // and apart from them the most connections waiting to register (the oldest is closed when
  // one more comes). Default 4096.
  size_t max_clients = 4096;
  // How often the monitor checks that registered PIDs still exist (backstop to socket
  // hang-up). Default 200 ms.
  uint32_t pid_check_ms = 200;
  // A connection that has not registered this long after it was accepted is closed, so that
  // idle connections cannot hold the server's descriptors. Default 5000 ms.
  uint32_t registration_timeout_ms = 5000;
  // Keep paamd's memory resident once started (LockMemory: mlockall where the process may
  // lock without limit, malloc keeps what it frees). Regions are locked only up to the two
  // caps below (bytes of their mappings); beyond them they are mapped unlocked, and the log
  // says so once. Defaults: 1 GiB in total, 256 MiB per registration.
  bool lock_memory = false;
  uint64_t lock_total_bytes = 1ull << 30;
  uint64_t lock_client_bytes = 256ull << 20;

  // --- Parameters that affect performance ---
  // Busy-poll window of the dispatcher and workers after their last work before they sleep
  // on a futex. Larger: lower latency for bursts, more CPU. kAutoPoll (the default) means 50 us
  // on machines with 4 or more CPUs and 0 below that: on 2 cores two polling server threads
  // would keep the clients they serve off the CPU (measured: 107 us instead of 14 us p50).
  // kPollAlways: never sleep (threads on cores reserved to paamd; a sleeping thread's wake-up
  // is the largest server overhead on a VM whose idle vCPUs halt).
  static constexpr uint64_t kAutoPoll = UINT64_MAX;
  static constexpr uint64_t kPollAlways = UINT64_MAX - 1;
  uint64_t poll_ns = kAutoPoll;
  // The most urgent N buckets (0: none) get paamd's fastest path whatever poll_ns says: their
  // workers and the dispatcher never sleep, and on the CUDA backend those workers spin on
  // their GPU work where the wait is nap (BackendOptions::spin_levels). The wake-ups a
  // sleeping thread costs are then off the critical chains' requests only, at one busy core
  // per such worker and one for the dispatcher, not one per thread as with kPollAlways.
  // At most the number of buckets (Start fails otherwise).
  int spin_buckets = 0;
  // Requests per bucket queue (fixed, so the hot path never allocates). Default 4096.
  size_t queue_capacity = 4096;
  // Pin the dispatcher thread to this CPU (-1: do not pin).
  int dispatcher_cpu = -1;
  // One CPU per polling thread (empty: pin none): the dispatcher to thread_cpus[0], the
  // workers in creation order (unit, bucket, lane) to thread_cpus[1], [2], ..., wrapping round
  // the whole list when there are more workers than entries. With kPollAlways a thread that
  // never sleeps then never shares its core with another; unpinned, the OS may stack two on
  // one core and leave the other waiting for a time slice. dispatcher_cpu, when set, still
  // places the dispatcher. Workers that the backend pins to its device core (CPU backend)
  // stay there. The control thread is never pinned: it is not on the hot path.
  std::vector<int> thread_cpus;
  // SCHED_FIFO priority of the dispatcher (0: normal scheduling). Every request passes through
  // the dispatcher, so under real-time executors it must run above them, or a critical chain's
  // request waits until every executor on the dispatcher's core is idle (a priority inversion
  // the analysis does not model). When SCHED_FIFO is denied it falls back to nice -20, and
  // says so in the notes. paamd sets it above the top bucket with --rt.
  int dispatcher_rt_priority = 0;
};

struct ServerStats {
  uint64_t requests_completed = 0;
  uint64_t requests_failed = 0;       // completed with an error status
  uint64_t protocol_errors = 0;       // descriptors that could not even be answered
  uint64_t registrations = 0;
  uint64_t clients_reaped = 0;        // died or hung up without deregistering
  uint64_t active_clients = 0;
  // Connections closed before they registered: registration timeout, shed for newer ones
  // (too many unregistered, or out of file descriptors), or refused at the descriptor limit.
  uint64_t connections_dropped = 0;
  uint64_t requests_fallback = 0;     // run on the CPU fallback (ServerOptions::fallback)
};

class Server {
 public:
  // Binds the socket, creates the backend and starts all threads. Errors: socket in use,
  // bad options, backend unavailable, plugin failed to load.
  static Result<std::unique_ptr<Server>> Start(const ServerOptions& options);
  ~Server();

  // Stops serving: clients see their socket hang up; outstanding requests are not answered.
  void Stop();
  // Blocks until Stop() (e.g. from a signal handler thread).
  void Wait();

  const std::string& socket_path() const;
  int buckets() const;
  std::string backend_name() const;
  uint64_t poll_ns() const;  // the busy-poll window in effect
  // Real-time settings the OS denied, etc. (collected from the workers at start).
  std::vector<std::string> notes() const;
  ServerStats Stats() const;

  class Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace paam
