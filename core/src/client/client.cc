#include "paam/client.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "backend/backend.h"
#include "client/model_kernels.h"
#include "common/clock.h"
#include "common/futex.h"
#include "kernels/registry.h"
#include "protocol/socket_identity.h"
#include "protocol/unix_socket.h"
#include "protocol/wire.h"
#include "shm/layout.h"
#include "shm/mapping.h"

namespace paam {

namespace {

// One kernel's region as the client sees it.
struct RegionView {
  std::string kernel;
  Mapping mapping;                       // server mode
  std::vector<uint8_t> local;            // direct mode: input + output, no server
  shm::RegionHeader* header = nullptr;   // server mode
  uint8_t* input = nullptr;
  uint64_t input_capacity = 0;
  uint8_t* output = nullptr;
  uint64_t output_capacity = 0;
  uint64_t sequence = 0;
  bool outstanding = false;
  std::optional<DeviceBuffers> device;  // declared device buffers (CUDA IPC), server mode
  bool last_device = false;             // the outstanding request runs on the device buffers
  // direct mode: the region as the in-process backend sees it (attached once at connect)
  RegionMemory direct_memory;
  const KernelEntry* direct_kernel = nullptr;
  Status direct_status;
  uint64_t direct_output_bytes = 0;
  RequestTimestamps ts;
};

}  // namespace

class Client::Impl {
 public:
  ClientOptions options;
  UniqueFd socket;
  Mapping doorbell_mapping, channel_mapping;
  const shm::DoorbellHeader* doorbell = nullptr;  // the server's page, mapped read-only
  UniqueFd wake;  // this registration's wake eventfd: written only while the dispatcher sleeps
  shm::ChannelHeader* channel = nullptr;
  std::mutex ring_mu;  // serializes producers on the ring (uncontended: no system call)
  std::vector<RegionView> regions;
  wire::RegisterReply reply;
  bool closed = false;
  std::atomic<uint64_t> release_ns{0};  // SetRelease; 0: each request's submission
  // direct mode
  KernelRegistry registry;
  std::unique_ptr<Backend> backend;

  Status ConnectServer();
  Status ConnectDirect();
  Status CheckIndex(int k) const {
    if (closed) return Status(Errc::kClosed, "client is closed");
    if (k < 0 || k >= static_cast<int>(regions.size())) {
      return Status(Errc::kUnknownKernel, "kernel index " + std::to_string(k) + " was not declared at registration");
    }
    return Status::Ok();
  }
  bool ServerGone() const {
    if (PeerHungUp(socket.get())) return true;
    return reply.server_pid > 0 && kill(reply.server_pid, 0) != 0 && errno == ESRCH;
  }
  Status Finish(RegionView& r, uint64_t* output_bytes);
  Status SubmitImpl(int k, uint64_t input_bytes, const uint64_t params[4], bool device, uint64_t time_limit_ns);
};

Status Client::Impl::ConnectServer() {
  std::string path = options.socket_path.empty() ? DefaultSocketPath() : options.socket_path;
  auto fd = ConnectUnix(path);
  if (!fd.ok()) return fd.status();
  socket = std::move(fd.value());
  // Another local user's server must not receive this client's registration or its inputs.
  Status trusted = CheckServerIdentity(socket.get(), path, options.trusted_server_uids);
  if (!trusted.ok()) return trusted;

  wire::RegisterRequest req;
  req.version = shm::kProtocolVersion;
  req.chain_priority = options.priority;
  req.callback_uuid = options.callback_uuid;
  req.wait = options.wait;
  req.unit = options.unit;
  req.client_name = options.name;
  req.kernels = options.kernels;
  req.timing = options.timing;
  req.deadline_ms = options.deadline_ms;
  // The server may answer and close before it reads this registration (a connection shed at
  // its descriptor limit or after its registration timeout, a peer its policy refuses): then
  // the send fails, or the first read reports the reset, while its answer is still queued in
  // the socket. That answer says more than the closed connection.
  auto closed = [this] {
    for (int i = 0; i < 2; ++i) {
      std::vector<uint8_t> early;
      std::vector<UniqueFd> ignored;
      if (!RecvMessage(socket.get(), &early, &ignored, 0).ok()) continue;
      auto why = wire::DecodeRegisterReply(early.data(), early.size());
      if (why.ok() && why->status != Errc::kOk) return Status(why->status, why->message);
    }
    return Status(Errc::kServerDied, "server closed the connection during registration");
  };
  Status st = SendMessage(socket.get(), wire::Encode(req));
  if (!st.ok()) return closed();

  std::vector<uint8_t> bytes;
  std::vector<UniqueFd> fds;
  st = RecvMessage(socket.get(), &bytes, &fds, options.connect_timeout_ms);
  if (st.code() == Errc::kClosed) return closed();
  if (!st.ok()) return st;
  auto decoded = wire::DecodeRegisterReply(bytes.data(), bytes.size());
  if (!decoded.ok()) return decoded.status();
  reply = std::move(decoded.value());
  if (reply.status != Errc::kOk) return Status(reply.status, reply.message);
  // Descriptors: doorbell (read-only), wake eventfd, channel, then one region per kernel.
  if (fds.size() != 3 + reply.regions.size() || reply.regions.size() != options.kernels.size()) {
    return Status(Errc::kProtocolError, "registration reply carries " + std::to_string(fds.size()) +
                                            " descriptors for " + std::to_string(reply.regions.size()) + " regions");
  }
  // The version comes from the reply (the server's own message), never from a page another
  // client could reach; the doorbell is sealed read-only for every client anyway.
  if (reply.version != shm::kProtocolVersion || reply.doorbell_bytes < sizeof(shm::DoorbellHeader) ||
      reply.channel_bytes < sizeof(shm::ChannelHeader)) {
    return Status(Errc::kVersionMismatch, "server's shared-memory layout differs from this client's");
  }
  auto db = Mapping::Map(fds[0].get(), reply.doorbell_bytes, /*writable=*/false);
  if (!db.ok()) return db.status();
  doorbell_mapping = std::move(db.value());
  doorbell = doorbell_mapping.as<const shm::DoorbellHeader>();
  wake = std::move(fds[1]);
  auto ch = Mapping::Map(fds[2].get(), reply.channel_bytes);
  if (!ch.ok()) return ch.status();
  channel_mapping = std::move(ch.value());
  channel = channel_mapping.as<shm::ChannelHeader>();
  if (doorbell->magic != shm::kDoorbellMagic || channel->magic != shm::kChannelMagic ||
      channel->version != shm::kProtocolVersion) {
    return Status(Errc::kVersionMismatch, "server's shared-memory layout differs from this client's");
  }
  regions.resize(reply.regions.size());
  for (size_t i = 0; i < reply.regions.size(); ++i) {
    const wire::RegionInfo& info = reply.regions[i];
    auto size = FdSize(fds[3 + i].get());
    if (!size.ok() || *size < info.mapping_bytes || info.mapping_bytes < sizeof(shm::RegionHeader)) {
      return Status(Errc::kProtocolError, "region of '" + info.kernel + "' is smaller than announced");
    }
    auto m = Mapping::Map(fds[3 + i].get(), info.mapping_bytes);
    if (!m.ok()) return m.status();
    RegionView& r = regions[i];
    r.kernel = info.kernel;
    r.mapping = std::move(m.value());
    r.header = r.mapping.as<shm::RegionHeader>();
    if (r.header->magic != shm::kRegionMagic ||
        r.header->input_offset + r.header->input_capacity > info.mapping_bytes ||
        r.header->output_offset + r.header->output_capacity > info.mapping_bytes) {
      return Status(Errc::kVersionMismatch, "region header of '" + info.kernel + "' is not understood");
    }
    auto* base = static_cast<uint8_t*>(r.mapping.data());
    r.input = base + r.header->input_offset;
    r.input_capacity = r.header->input_capacity;
    r.output = base + r.header->output_offset;
    r.output_capacity = r.header->output_capacity;
    r.device = options.kernels[i].device;
  }
  return Status::Ok();  // fds close here; the mappings stay
}

Status Client::Impl::ConnectDirect() {
  registry = KernelRegistry::WithBuiltins();
  for (const auto& p : options.plugins) {
    Status st = registry.LoadPlugin(p);
    if (!st.ok()) return st;
  }
  BackendOptions bo;
  bo.kind = options.direct_backend;
  bo.device_cpu = options.direct_device_cpu;
  bo.direct = true;
  // One GPU for a direct client: the unit it names (its CUDA device ordinal), else GPU 0, so it
  // creates one context, not one on every visible GPU.
  if (bo.kind == "cuda") bo.cuda_devices = std::to_string(options.unit >= 0 ? options.unit : 0);
  auto b = CreateBackend(bo, &registry);
  if (!b.ok()) return b.status();
  backend = std::move(b.value());
  // Direct mode runs on the caller's thread: no worker preparation beyond the backend's own.
  regions.resize(options.kernels.size());
  for (size_t i = 0; i < options.kernels.size(); ++i) {
    const KernelDecl& k = options.kernels[i];
    if (k.device) {
      return Status(Errc::kInvalidArgument, "kernel '" + k.name + "' declares device buffers (CUDA IPC handles): "
                                            "those are for a paamd in another process; direct mode runs in this one");
    }
  }
  for (size_t i = 0; i < options.kernels.size(); ++i) {
    const KernelDecl& k = options.kernels[i];
    RegionView& r = regions[i];
    r.kernel = k.name;
    r.direct_kernel = registry.Find(k.name);
    if (r.direct_kernel == nullptr) {
      std::string names;
      for (const auto& n : registry.Names()) names += (names.empty() ? "" : ", ") + n;
      return Status(Errc::kUnknownKernel, "unknown kernel '" + k.name + "' (available: " + names + ")");
    }
    r.local.resize(k.max_input_bytes + k.max_output_bytes + 64);
    r.input = r.local.data();
    r.input_capacity = k.max_input_bytes;
    r.output = r.local.data() + k.max_input_bytes;
    r.output_capacity = k.max_output_bytes;
    r.direct_memory.base = r.local.data();
    r.direct_memory.mapping_bytes = r.local.size();
    r.direct_memory.input = r.input;
    r.direct_memory.input_capacity = r.input_capacity;
    r.direct_memory.output = r.output;
    r.direct_memory.output_capacity = r.output_capacity;
    // Registration-time preparation, as the server does it (pinning, device buffers on CUDA).
    Status st = backend->AttachRegion(&r.direct_memory);
    if (!st.ok()) return st;
  }
  reply.buckets = 1;
  reply.admission = "direct mode: kernels run in this process, no server, no admission control";
  return Status::Ok();
}

Status Client::Impl::Finish(RegionView& r, uint64_t* output_bytes) {
  r.outstanding = false;
  if (backend) {  // direct mode
    if (output_bytes != nullptr) *output_bytes = r.direct_output_bytes;
    return r.direct_status;
  }
  const uint64_t woken = NowNs();
  shm::RegionHeader* h = r.header;
  const uint64_t out = h->output_bytes;
  const auto code = static_cast<Errc>(h->status);
  const uint32_t ran_on = h->ran_on;
  r.ts = RequestTimestamps{h->ts.submitted, h->ts.dequeued, h->ts.picked, h->ts.device_start,
                           h->ts.device_end, h->ts.completed, woken};
  const uint32_t device = ran_on & shm::kRanDeviceMask;
  r.ts.ran_on = device == shm::kRanOnCpu ? RanOn::kCpu : device == shm::kRanOnCuda ? RanOn::kCuda : RanOn::kNowhere;
  r.ts.fallback = r.ts.ran_on != RanOn::kNowhere && (ran_on & shm::kRanFallback) != 0;
  if (h->sequence != r.sequence) {
    return Status(Errc::kProtocolError, "completion for request " + std::to_string(h->sequence) +
                                            " while waiting for " + std::to_string(r.sequence));
  }
  if (code != Errc::kOk) {
    char text[shm::kErrorTextBytes];
    std::memcpy(text, h->error, sizeof(text));
    text[sizeof(text) - 1] = '\0';
    return Status(code, text);
  }
  const uint64_t out_capacity = r.last_device && r.device ? r.device->output_bytes : r.output_capacity;
  if (out > out_capacity) return Status(Errc::kProtocolError, "server reported more output than the region holds");
  if (output_bytes != nullptr) *output_bytes = out;
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() { Close(); }

Result<std::unique_ptr<Client>> Client::Connect(const ClientOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (!options.models.empty()) {  // models become kernels sized from their signatures (infer.cc)
    Status st = AddModelKernels(&impl->options);
    if (!st.ok()) return st;
  }
  if (impl->options.kernels.empty()) return Status(Errc::kInvalidArgument, "declare at least one kernel");
  if (impl->options.kernels.size() > shm::kMaxKernelsPerClient) {
    return Status(Errc::kInvalidArgument, "at most " + std::to_string(shm::kMaxKernelsPerClient) + " kernels per client");
  }
  bool zero = true;
  for (uint8_t b : options.callback_uuid) zero &= (b == 0);
  if (zero) impl->options.callback_uuid = RandomUuid();
  Status st = options.direct ? impl->ConnectDirect() : impl->ConnectServer();
  if (!st.ok()) return st;
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

void Client::Deregister() {
  if (!impl_ || impl_->closed) return;
  impl_->closed = true;
  if (impl_->socket.valid()) {
    if (SendMessage(impl_->socket.get(), wire::EncodeDeregister()).ok()) {
      std::vector<uint8_t> bytes;
      (void)RecvMessage(impl_->socket.get(), &bytes, nullptr, 1000);
    }
    impl_->socket.reset();
  }
  // Nothing outside this class points into the channel or the doorbell: they go now. The
  // regions stay mapped (see client.h), so views of Input(k)/Output(k) stay valid memory.
  impl_->channel = nullptr;
  impl_->channel_mapping.Reset();
  impl_->doorbell = nullptr;
  impl_->doorbell_mapping.Reset();
  impl_->wake.reset();
}

void Client::Close() {
  if (!impl_) return;
  Deregister();
  if (impl_->backend) {
    for (auto& r : impl_->regions) impl_->backend->DetachRegion(&r.direct_memory);
  }
  impl_->regions.clear();
}

int Client::KernelIndex(std::string_view name) const {
  for (size_t i = 0; i < impl_->regions.size(); ++i) {
    if (impl_->regions[i].kernel == name) return static_cast<int>(i);
  }
  return -1;
}
int Client::KernelCount() const { return static_cast<int>(impl_->regions.size()); }
const std::string& Client::KernelName(int k) const { return impl_->regions.at(static_cast<size_t>(k)).kernel; }

std::span<uint8_t> Client::Input(int k) {
  if (!impl_->CheckIndex(k).ok()) return {};
  RegionView& r = impl_->regions[static_cast<size_t>(k)];
  return {r.input, r.input_capacity};
}

std::span<const uint8_t> Client::Output(int k) const {
  if (!impl_->CheckIndex(k).ok()) return {};
  const RegionView& r = impl_->regions[static_cast<size_t>(k)];
  return {r.output, r.output_capacity};
}

Status Client::Call(int k, uint64_t input_bytes, const uint64_t params[4], uint64_t* output_bytes,
                    uint64_t timeout_ns) {
  Status st = Submit(k, input_bytes, params);
  if (!st.ok()) return st;
  return Wait(k, output_bytes, timeout_ns);
}

Status Client::CallWithin(int k, uint64_t input_bytes, const uint64_t params[4], uint64_t* output_bytes,
                          uint64_t time_limit_ns) {
  Status st = Submit(k, input_bytes, params, time_limit_ns);
  if (!st.ok()) return st;
  return Wait(k, output_bytes, time_limit_ns);
}

Status Client::Submit(int k, uint64_t input_bytes, const uint64_t params[4]) {
  return impl_->SubmitImpl(k, input_bytes, params, /*device=*/false, impl_->options.request_time_limit_ns);
}

Status Client::Submit(int k, uint64_t input_bytes, const uint64_t params[4], uint64_t time_limit_ns) {
  return impl_->SubmitImpl(k, input_bytes, params, /*device=*/false, time_limit_ns);
}

Status Client::SubmitDevice(int k, uint64_t input_bytes, const uint64_t params[4]) {
  return impl_->SubmitImpl(k, input_bytes, params, /*device=*/true, impl_->options.request_time_limit_ns);
}

Status Client::SubmitDevice(int k, uint64_t input_bytes, const uint64_t params[4], uint64_t time_limit_ns) {
  return impl_->SubmitImpl(k, input_bytes, params, /*device=*/true, time_limit_ns);
}

Status Client::CallDevice(int k, uint64_t input_bytes, const uint64_t params[4], uint64_t* output_bytes,
                          uint64_t timeout_ns) {
  Status st = SubmitDevice(k, input_bytes, params);
  if (!st.ok()) return st;
  return Wait(k, output_bytes, timeout_ns);
}

bool Client::HasDeviceBuffers(int k) const {
  return impl_->CheckIndex(k).ok() && impl_->regions[static_cast<size_t>(k)].device.has_value();
}

Status Client::Impl::SubmitImpl(int k, uint64_t input_bytes, const uint64_t params[4], bool device,
                                uint64_t time_limit_ns) {
  Status st = CheckIndex(k);
  if (!st.ok()) return st;
  RegionView& r = regions[static_cast<size_t>(k)];
  if (r.outstanding) {
    return Status(Errc::kBusy, "a request for '" + r.kernel + "' is outstanding; wait for it before submitting another");
  }
  if (device && !r.device) {
    return Status(Errc::kInvalidArgument, "'" + r.kernel + "' was registered without device buffers");
  }
  const uint64_t capacity = device ? r.device->input_bytes : r.input_capacity;
  if (input_bytes > capacity) {
    return Status(Errc::kInputTooLarge, "input of " + std::to_string(input_bytes) + " bytes exceeds the " +
                                            std::to_string(capacity) + (device ? " of the device buffer" : "") +
                                            " declared for '" + r.kernel + "'");
  }
  const uint64_t now = NowNs();
  ++r.sequence;
  r.outstanding = true;
  r.last_device = device;

  if (backend) {  // direct mode: run here and now
    KernelCall call;
    call.kernel = r.direct_kernel;
    call.input_bytes = input_bytes;
    std::memcpy(call.params, params, sizeof(call.params));
    call.region = &r.direct_memory;
    r.direct_output_bytes = 0;
    r.direct_status = r.direct_kernel->Plan(call.params, input_bytes, &call.output_bytes, r.input, r.output_capacity);
    if (r.direct_status.ok() && call.output_bytes > r.output_capacity) {
      r.direct_status = Status(Errc::kOutputTooLarge, "output of " + std::to_string(call.output_bytes) +
                                                          " bytes exceeds the declared " + std::to_string(r.output_capacity));
    }
    DeviceTimes t;
    if (r.direct_status.ok()) {
      r.direct_status = backend->Run(call, 0, 0, &t);
      if (r.direct_status.ok()) r.direct_output_bytes = call.output_bytes;
    }
    const uint64_t end = NowNs();
    r.ts = RequestTimestamps{now, now, now, t.start_ns, t.end_ns, end, end};
    if (r.direct_status.ok() || t.start_ns != 0) r.ts.ran_on = backend->name() == "cuda" ? RanOn::kCuda : RanOn::kCpu;
    return Status::Ok();
  }

  shm::RequestDescriptor d{};
  d.region = static_cast<uint32_t>(k);
  d.flags = device ? shm::kFlagDeviceData : 0;
  d.sequence = r.sequence;
  d.input_bytes = input_bytes;
  std::memcpy(d.params, params, sizeof(d.params));
  d.submit_ns = now;
  d.time_limit_ns = time_limit_ns;
  d.release_ns = release_ns.load(std::memory_order_relaxed);
  r.header->state.store(shm::kPending, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(ring_mu);
    shm::ChannelHeader* ch = channel;
    const uint64_t head = ch->head.load(std::memory_order_relaxed);
    std::memcpy(&ch->slots[head % shm::kRingCapacity], &d, sizeof(d));
    ch->head.store(head + 1, std::memory_order_release);  // SYNC POINT: producer
  }
  // SYNC POINT: head is published; fence, then wake the dispatcher only if it sleeps (it stores
  // `sleeping`, fences, then re-reads every head: one of the two sees the other). No system
  // call while the dispatcher is awake.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (doorbell->sleeping.load(std::memory_order_relaxed) != 0) {
    const uint64_t one = 1;
    (void)!write(wake.get(), &one, sizeof(one));
  }
  return Status::Ok();
}

Status Client::Wait(int k, uint64_t* output_bytes, uint64_t timeout_ns) {
  Status st = impl_->CheckIndex(k);
  if (!st.ok()) return st;
  RegionView& r = impl_->regions[static_cast<size_t>(k)];
  if (!r.outstanding) return Status(Errc::kInvalidArgument, "no request for '" + r.kernel + "' is outstanding");
  if (impl_->backend) return impl_->Finish(r, output_bytes);

  shm::RegionHeader* h = r.header;
  const uint64_t start = NowNs();
  const uint64_t deadline = timeout_ns == 0 ? UINT64_MAX : start + timeout_ns;
  const uint64_t check_every = impl_->options.liveness_check_ns;
  uint64_t next_check = start + check_every;
  const WaitMode mode = impl_->options.wait;
  const uint64_t spin_until = mode == WaitMode::kSpin     ? UINT64_MAX
                              : mode == WaitMode::kHybrid ? start + impl_->options.hybrid_spin_ns
                                                          : 0;
  uint32_t spins = 0;
  while (true) {
    if (h->state.load(std::memory_order_acquire) != shm::kPending) return impl_->Finish(r, output_bytes);
    uint64_t now = 0;
    if (spin_until != 0) {
      if ((++spins & 255) != 0) {
        CpuRelax();
        continue;
      }
      now = NowNs();
      if (now < spin_until && now < next_check && now < deadline) continue;
    }
    if (now == 0) now = NowNs();
    if (now >= next_check) {
      if (impl_->ServerGone()) {
        r.outstanding = false;
        return Status(Errc::kServerDied, "paamd (pid " + std::to_string(impl_->reply.server_pid) +
                                             ") went away while a '" + r.kernel + "' request was outstanding");
      }
      next_check = now + check_every;
    }
    if (now >= deadline) {
      return Status(Errc::kTimeout, "'" + r.kernel + "' did not complete within " + std::to_string(timeout_ns / 1000) + " us");
    }
    if (now < spin_until) continue;
    // Suspend on the state word until woken, the next liveness check or the deadline.
    const uint64_t sleep_ns = std::min(next_check, deadline) - now;
    h->waiters.store(1, std::memory_order_seq_cst);
    if (h->state.load(std::memory_order_seq_cst) == shm::kPending) FutexWait(&h->state, shm::kPending, sleep_ns);
    h->waiters.store(0, std::memory_order_relaxed);
  }
}

bool Client::Ready(int k) const {
  if (!impl_->CheckIndex(k).ok()) return false;
  const RegionView& r = impl_->regions[static_cast<size_t>(k)];
  if (!r.outstanding) return false;
  if (impl_->backend) return true;
  return r.header->state.load(std::memory_order_acquire) != shm::kPending;
}

bool Client::Outstanding(int k) const {
  return impl_->CheckIndex(k).ok() && impl_->regions[static_cast<size_t>(k)].outstanding;
}

RequestTimestamps Client::Timestamps(int k) const {
  if (!impl_->CheckIndex(k).ok()) return {};
  return impl_->regions[static_cast<size_t>(k)].ts;
}

void Client::SetRelease(uint64_t release_ns) { impl_->release_ns.store(release_ns, std::memory_order_relaxed); }

uint32_t Client::priority() const { return impl_->options.priority; }
int Client::bucket() const { return static_cast<int>(impl_->reply.bucket); }
int Client::buckets() const { return static_cast<int>(impl_->reply.buckets); }
int Client::unit() const { return static_cast<int>(impl_->reply.unit); }
uint64_t Client::client_id() const { return impl_->reply.client_id; }
int Client::server_pid() const { return impl_->reply.server_pid; }
const std::string& Client::admission() const { return impl_->reply.admission; }
bool Client::direct() const { return impl_->options.direct; }
WaitMode Client::wait_mode() const { return impl_->options.wait; }

std::vector<std::pair<std::string, std::string>> BuiltinKernelSignatures() {
  std::vector<std::pair<std::string, std::string>> out;
  uint32_t n = 0;
  const paam_kernel* k = BuiltinKernels(&n);
  for (uint32_t i = 0; i < n; ++i) out.emplace_back(k[i].name, k[i].signature);
  return out;
}

}  // namespace paam
