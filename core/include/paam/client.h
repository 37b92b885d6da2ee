// paam/client.h — the client library: register a callback with paamd and send it requests.
//
// A Client is one registration: one callback of one chain, with a fixed chain priority and a
// fixed set of kernels. The server gives it one shared-memory region per kernel; the caller
// writes the kernel's input straight into Input(k) (zero copy), then calls Call() (synchronous)
// or Submit() + Wait() (asynchronous). Each region holds one request at a time.
//
// Thread safety:
//   - Connect(), Deregister() and Close() must not race with other calls on the same Client.
//   - Calls on *different* kernel indices may run concurrently from different threads.
//   - Calls on the *same* kernel index must be serialized by the caller (a second Submit while
//     one is outstanding returns kBusy).
// Blocking: Call() and Wait() block according to the wait mode (spin, suspend or hybrid) and
// always return within a bounded time if the server dies (kServerDied), never hang.
// Allocation: after Connect(), Submit/Wait/Call allocate nothing on success and make no
// system call except futex wait/wake (and a liveness check every liveness_check_ns while
// waiting).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "paam/status.h"
#include "paam/tensor.h"
#include "paam/types.h"

namespace paam {

struct ClientOptions {
  // --- Behavior ---
  std::string socket_path;          // default: DefaultSocketPath() (see paamd --help)
  std::string name;                 // shown in the server's log
  uint32_t priority = 0;            // chain priority, larger = more critical
  std::vector<KernelDecl> kernels;  // kernels this callback will use, with max sizes and,
                                    // optionally, device buffers (CUDA IPC; server mode only)
  // Models served by paamd (docs/models.md) this callback will run with Infer: each becomes a
  // kernel whose region is sized from the signature paamd publishes (QueryModels). A model
  // with a dimension that has no bound goes into `kernels` with its sizes instead (a name in
  // both keeps the sizes of `kernels`). Server mode only.
  std::vector<std::string> models;
  WaitMode wait = WaitMode::kSuspend;
  std::optional<TimingModel> timing;  // for admission control; none = best-effort
  Uuid callback_uuid{};             // all zero: a random one is drawn
  int unit = -1;                    // accelerator unit (GPU) to use; -1: the server picks (direct
                                    // mode on cuda: the CUDA device ordinal, -1 = GPU 0)
  int connect_timeout_ms = 5000;    // registration reply timeout
  // The time limit of every request, in ns after its submission (0: none from this client;
  // Submit(k, ..., time_limit_ns) sets one per request). A request not finished by then,
  // queued or running, is cancelled by the server: a long built-in kernel stops at its next
  // slice, a kernel that cannot be sliced finishes its current launch, and Wait returns
  // kCancelled. The server's own cap (paamd --max-request-ms) applies whatever this says.
  // Server mode only: direct mode runs each kernel to its end.
  uint64_t request_time_limit_ns = 0;
  // The relative deadline of this callback's requests in ms (0: the timing model's chain
  // deadline, else none). paamd --queue edf runs a bucket's requests by absolute deadline: the
  // request's release (SetRelease, else its submission) plus this; paamd --fallback compares it
  // with the bucket's queue. Fixed at registration; server mode only.
  double deadline_ms = 0;
  // Server uids to trust besides this process's effective uid and root (more may come from
  // $PAAM_TRUSTED_SERVER_UIDS, "uid,uid"). Before sending anything, Connect checks the server's
  // uid (SO_PEERCRED) and refuses any other with kPermissionDenied.
  std::vector<uint32_t> trusted_server_uids;

  // --- Direct mode: run kernels in-process, no server (the "direct invocation" baseline) ---
  bool direct = false;
  std::string direct_backend = "cpu";
  int direct_device_cpu = -1;       // cpu backend's device core (-1: last core, -2: none)
  std::vector<std::string> plugins; // user kernels for direct mode

  // --- Performance ---
  uint64_t hybrid_spin_ns = 20'000;        // hybrid: spin this long, then suspend
  uint64_t liveness_check_ns = 20'000'000; // while waiting, check the server this often
};

// Where a request's kernel ran: nowhere (refused, or cancelled before it ran), or on the
// device of that kind.
enum class RanOn : uint8_t { kNowhere = 0, kCpu = 1, kCuda = 2 };

// Stage timestamps of the last completed request of a kernel, CLOCK_MONOTONIC ns, and where it
// ran: `fallback` is true when paamd's fallback policy (paamd --fallback) ran the kernel's CPU
// version instead of its bucket's device.
struct RequestTimestamps {
  uint64_t submitted = 0, dequeued = 0, picked = 0, device_start = 0, device_end = 0, completed = 0,
           woken = 0;
  RanOn ran_on = RanOn::kNowhere;
  bool fallback = false;
};

class Client {
 public:
  // Registers with the server (or prepares direct mode). Errors: kServerNotRunning,
  // kPermissionDenied (the server runs as a uid not trusted, see trusted_server_uids),
  // kNotAdmitted (message says which chain would miss and by how much), kUnknownKernel,
  // kInputTooLarge, kVersionMismatch, kInvalidArgument.
  static Result<std::unique_ptr<Client>> Connect(const ClientOptions& options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Deregisters and unmaps. Idempotent. Outstanding requests are abandoned.
  void Close();
  // The server-facing half of Close(): deregisters (outstanding requests are abandoned) and
  // drops the connection, but keeps the regions mapped until Close() or the destructor, so
  // that memory the caller still holds from Input(k)/Output(k) stays readable and writable;
  // no request uses it any more (a request the server was running may still write its
  // output there). Later per-kernel calls behave as after Close() (kClosed, empty spans,
  // false); the kernel names stay. Close() after it unmaps. Idempotent. For bindings whose
  // views of the regions may outlive the registration (Python's numpy arrays).
  void Deregister();

  // Index of a declared kernel, or -1.
  int KernelIndex(std::string_view name) const;
  int KernelCount() const;
  const std::string& KernelName(int k) const;
  // The region's input area (capacity = declared max input). Write input here, then Submit.
  std::span<uint8_t> Input(int k);
  // The region's output area (capacity = declared max output); valid after completion.
  std::span<const uint8_t> Output(int k) const;

  // Submit + Wait. timeout_ns 0 waits as long as the request takes (bounded if the server dies).
  // timeout_ns is this caller's wait only; the request's time limit, which the server
  // enforces, is ClientOptions::request_time_limit_ns (CallWithin sets both).
  Status Call(int k, uint64_t input_bytes, const uint64_t params[4], uint64_t* output_bytes,
              uint64_t timeout_ns = 0);
  // Submit with time limit `time_limit_ns`, then Wait up to the same time: the server cancels
  // the request at its limit (kCancelled) and this caller stops waiting then too (kTimeout,
  // as Call's timeout: the request stays outstanding until Wait collects it, which the
  // server's cancellation lets happen soon after, at the kernel's next slice). Whichever side
  // notices first answers. time_limit_ns 0: as Call without a timeout.
  Status CallWithin(int k, uint64_t input_bytes, const uint64_t params[4], uint64_t* output_bytes,
                    uint64_t time_limit_ns);
  // Queues a request for kernel k whose input is already in Input(k). kBusy if one is
  // outstanding for k. In direct mode the kernel runs before Submit returns.
  Status Submit(int k, uint64_t input_bytes, const uint64_t params[4]);
  // Submit with its own time limit in ns (0: none from this client), in place of
  // ClientOptions::request_time_limit_ns.
  Status Submit(int k, uint64_t input_bytes, const uint64_t params[4], uint64_t time_limit_ns);
  // Device data (CUDA IPC): like Submit/Call, but the kernel runs on the device buffers
  // declared for k at registration (KernelDecl::device) instead of Input(k)/Output(k): no
  // host copies. The client must have finished writing the input buffer on the GPU (e.g.
  // synchronized its stream) before submitting; the output is in the device output buffer
  // when Wait returns OK. kInvalidArgument if k has no device buffers; kInputTooLarge if
  // input_bytes exceeds the device input buffer. Server mode only.
  Status SubmitDevice(int k, uint64_t input_bytes, const uint64_t params[4]);
  Status SubmitDevice(int k, uint64_t input_bytes, const uint64_t params[4], uint64_t time_limit_ns);
  Status CallDevice(int k, uint64_t input_bytes, const uint64_t params[4], uint64_t* output_bytes,
                    uint64_t timeout_ns = 0);
  // True when k was registered with device buffers.
  bool HasDeviceBuffers(int k) const;
  // Waits for the outstanding request of kernel k. On a timeout the request stays outstanding
  // and Wait may be called again. kCancelled: the server stopped it (its time limit or the
  // server's cap passed); it is over, and k takes new requests.
  Status Wait(int k, uint64_t* output_bytes, uint64_t timeout_ns = 0);
  // True when the outstanding request of k has completed (Wait would not block).
  bool Ready(int k) const;
  // True when a request of k was submitted and not yet collected by Wait.
  bool Outstanding(int k) const;
  RequestTimestamps Timestamps(int k) const;
  // The release time of the job that this client's next requests belong to (CLOCK_MONOTONIC
  // ns, e.g. the timer expiry that started the chain instance; 0, the default: each request's
  // own submission). With a relative deadline (deadline_ms) it gives their absolute deadline
  // under paamd --queue edf. Safe from any thread; applies to requests submitted after it.
  void SetRelease(uint64_t release_ns);

  // Models (paam/tensor.h, docs/models.md). Infer writes `inputs` into the model's region
  // behind a tensor table, runs the model and fills `outputs` from the table the model wrote:
  // names, dtypes and shapes, with the bytes left in the region's output area (zero copy,
  // valid until the next request of the model). Errors: kUnknownKernel (a model not declared
  // at registration), kInputTooLarge (the inputs need more than the region holds), and the
  // model's own, which name what it expected: kInvalidArgument for a missing or unknown
  // input, a wrong dtype or shape, kKernelFailed for an output beyond its signature or a
  // failure inside the model. The request after a failed one works as usual. Allocates (the
  // outputs' names and shapes); SubmitInfer itself does not.
  Status Infer(std::string_view model, std::span<const TensorView> inputs, std::vector<Tensor>* outputs,
               uint64_t timeout_ns = 0);
  // Infer in two halves, as Submit and Wait: one request of the model at a time.
  Status SubmitInfer(std::string_view model, std::span<const TensorView> inputs);
  Status WaitInfer(std::string_view model, std::vector<Tensor>* outputs, uint64_t timeout_ns = 0);

  uint32_t priority() const;
  int bucket() const;              // bucket at registration time (0 = highest)
  int buckets() const;             // buckets of the server
  int unit() const;
  uint64_t client_id() const;
  int server_pid() const;
  const std::string& admission() const;  // how admission control decided
  bool direct() const;
  WaitMode wait_mode() const;

  class Impl;

 private:
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Default socket path: $PAAM_SOCKET, $XDG_RUNTIME_DIR/paam/paamd.sock, /tmp/paam-<uid>/paamd.sock.
std::string DefaultSocketPath();

// Built-in and loaded kernels: (name, signature) pairs of a fresh registry with the built-ins.
std::vector<std::pair<std::string, std::string>> BuiltinKernelSignatures();

}  // namespace paam
