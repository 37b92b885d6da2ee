#include "protocol/wire.h"

#include <cstring>
#include <type_traits>

#include "shm/layout.h"

namespace paam::wire {
namespace {

class Writer {
 public:
  template <typename T>
  void Put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out_.insert(out_.end(), p, p + sizeof(T));
  }
  void PutString(const std::string& s) {
    Put<uint32_t>(static_cast<uint32_t>(s.size()));
    out_.insert(out_.end(), s.begin(), s.end());
  }
  std::vector<uint8_t> Take() { return std::move(out_); }

 private:
  std::vector<uint8_t> out_;
};

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  template <typename T>
  bool Get(T* v) {
    if (static_cast<size_t>(end_ - p_) < sizeof(T)) return fail();
    std::memcpy(v, p_, sizeof(T));
    p_ += sizeof(T);
    return true;
  }
  bool GetString(std::string* s, size_t max_len) {
    uint32_t n = 0;
    if (!Get(&n) || n > max_len || static_cast<size_t>(end_ - p_) < n) return fail();
    s->assign(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return true;
  }
  bool ok() const { return ok_; }
  bool at_end() const { return p_ == end_; }

 private:
  bool fail() {
    ok_ = false;
    return false;
  }
  const uint8_t* p_;
  const uint8_t* end_;
  bool ok_ = true;
};

void PutHeader(Writer& w, MessageKind kind) {
  w.Put<uint32_t>(kMagic);
  w.Put<uint32_t>(static_cast<uint32_t>(kind));
  w.Put<uint32_t>(shm::kProtocolVersion);
}

Status Malformed(const char* what) { return Status(Errc::kProtocolError, std::string("malformed ") + what); }

bool ValidName(const std::string& s) {
  if (s.empty() || s.size() > kMaxNameBytes) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || (c >= 'A' && c <= 'Z'))) return false;
  }
  return true;
}

}  // namespace

std::vector<uint8_t> Encode(const RegisterRequest& m) {
  Writer w;
  PutHeader(w, MessageKind::kRegister);
  w.Put<uint32_t>(m.chain_priority);
  for (uint8_t b : m.callback_uuid) w.Put<uint8_t>(b);
  w.Put<uint8_t>(static_cast<uint8_t>(m.wait));
  w.Put<int32_t>(m.unit);
  w.PutString(m.client_name);
  w.Put<uint32_t>(static_cast<uint32_t>(m.kernels.size()));
  for (const auto& k : m.kernels) {
    w.PutString(k.name);
    w.Put<uint64_t>(k.max_input_bytes);
    w.Put<uint64_t>(k.max_output_bytes);
    w.Put<uint8_t>(k.device.has_value() ? 1 : 0);
    if (k.device) {
      const DeviceBuffers& d = *k.device;
      for (uint8_t b : d.input_handle) w.Put<uint8_t>(b);
      w.Put<uint64_t>(d.input_offset);
      w.Put<uint64_t>(d.input_bytes);
      for (uint8_t b : d.output_handle) w.Put<uint8_t>(b);
      w.Put<uint64_t>(d.output_offset);
      w.Put<uint64_t>(d.output_bytes);
      w.Put<int32_t>(d.gpu);
    }
  }
  w.Put<uint8_t>(m.timing.has_value() ? 1 : 0);
  if (m.timing) {
    const TimingModel& t = *m.timing;
    w.PutString(t.chain);
    w.Put<uint32_t>(t.callback_index);
    w.Put<uint32_t>(t.chain_length);
    w.Put<double>(t.period_ms);
    w.Put<double>(t.deadline_ms);
    w.Put<double>(t.cpu_wcet_ms);
    w.Put<uint32_t>(static_cast<uint32_t>(t.segments_ms.size()));
    for (double s : t.segments_ms) w.Put<double>(s);
    w.PutString(t.executor);
    w.Put<int32_t>(t.executor_cpu);
    w.Put<int32_t>(t.executor_priority);
    w.Put<uint8_t>(static_cast<uint8_t>(t.executor_wait));
    w.Put<uint8_t>(t.best_effort ? 1 : 0);
  }
  w.Put<double>(m.deadline_ms);
  return w.Take();
}

std::vector<uint8_t> Encode(const RegisterReply& m) {
  Writer w;
  PutHeader(w, MessageKind::kRegisterReply);
  w.Put<uint32_t>(static_cast<uint32_t>(m.status));
  w.PutString(m.message);
  w.Put<uint64_t>(m.client_id);
  w.Put<uint32_t>(m.bucket);
  w.Put<uint32_t>(m.buckets);
  w.Put<uint32_t>(m.unit);
  w.Put<int32_t>(m.server_pid);
  w.PutString(m.admission);
  w.Put<uint64_t>(m.doorbell_bytes);
  w.Put<uint64_t>(m.channel_bytes);
  w.Put<uint32_t>(static_cast<uint32_t>(m.regions.size()));
  for (const auto& r : m.regions) {
    w.PutString(r.kernel);
    w.Put<uint32_t>(r.kernel_id);
    w.Put<uint64_t>(r.input_capacity);
    w.Put<uint64_t>(r.output_capacity);
    w.Put<uint64_t>(r.mapping_bytes);
  }
  return w.Take();
}

std::vector<uint8_t> EncodeDeregister() {
  Writer w;
  PutHeader(w, MessageKind::kDeregister);
  return w.Take();
}

std::vector<uint8_t> EncodeDeregisterReply() {
  Writer w;
  PutHeader(w, MessageKind::kDeregisterReply);
  return w.Take();
}

std::optional<MessageKind> PeekKind(const uint8_t* data, size_t size) {
  Reader r(data, size);
  uint32_t magic = 0, kind = 0;
  if (!r.Get(&magic) || !r.Get(&kind) || magic != kMagic) return std::nullopt;
  if (kind < 1 || kind > static_cast<uint32_t>(MessageKind::kModelsReply)) return std::nullopt;
  return static_cast<MessageKind>(kind);
}

Result<RegisterRequest> DecodeRegisterRequest(const uint8_t* data, size_t size) {
  Reader r(data, size);
  uint32_t magic = 0, kind = 0;
  RegisterRequest m;
  r.Get(&magic);
  r.Get(&kind);
  r.Get(&m.version);
  if (!r.ok() || magic != kMagic || kind != static_cast<uint32_t>(MessageKind::kRegister)) {
    return Malformed("registration header");
  }
  if (m.version != shm::kProtocolVersion) {
    return Status(Errc::kVersionMismatch, "client speaks protocol " + std::to_string(m.version) +
                                              ", server speaks " + std::to_string(shm::kProtocolVersion));
  }
  r.Get(&m.chain_priority);
  for (auto& b : m.callback_uuid) r.Get(&b);
  uint8_t wait = 0;
  r.Get(&wait);
  if (wait > 2) return Malformed("wait mode");
  m.wait = static_cast<WaitMode>(wait);
  r.Get(&m.unit);
  r.GetString(&m.client_name, 256);
  uint32_t n = 0;
  if (!r.Get(&n) || n == 0 || n > shm::kMaxKernelsPerClient) {
    return Status(Errc::kInvalidArgument, "a registration declares 1 to " +
                                              std::to_string(shm::kMaxKernelsPerClient) + " kernels");
  }
  m.kernels.resize(n);
  for (auto& k : m.kernels) {
    r.GetString(&k.name, 256);
    r.Get(&k.max_input_bytes);
    r.Get(&k.max_output_bytes);
    if (r.ok() && !ValidName(k.name)) return Status(Errc::kUnknownKernel, "invalid kernel name '" + k.name + "'");
    uint8_t has_device = 0;
    r.Get(&has_device);
    if (has_device > 1) return Malformed("device buffers flag");
    if (has_device) {
      DeviceBuffers d;
      for (auto& b : d.input_handle) r.Get(&b);
      r.Get(&d.input_offset);
      r.Get(&d.input_bytes);
      for (auto& b : d.output_handle) r.Get(&b);
      r.Get(&d.output_offset);
      r.Get(&d.output_bytes);
      r.Get(&d.gpu);
      k.device = d;
    }
  }
  uint8_t has_timing = 0;
  r.Get(&has_timing);
  if (has_timing) {
    TimingModel t;
    r.GetString(&t.chain, 256);
    r.Get(&t.callback_index);
    r.Get(&t.chain_length);
    r.Get(&t.period_ms);
    r.Get(&t.deadline_ms);
    r.Get(&t.cpu_wcet_ms);
    uint32_t segs = 0;
    if (!r.Get(&segs) || segs > 1024) return Malformed("timing model");
    t.segments_ms.resize(segs);
    for (double& s : t.segments_ms) r.Get(&s);
    r.GetString(&t.executor, 256);
    r.Get(&t.executor_cpu);
    r.Get(&t.executor_priority);
    uint8_t ew = 0, be = 0;
    r.Get(&ew);
    r.Get(&be);
    if (ew > 2) return Malformed("executor wait mode");
    t.executor_wait = static_cast<WaitMode>(ew);
    t.best_effort = be != 0;
    m.timing = std::move(t);
  }
  r.Get(&m.deadline_ms);
  if (!r.ok() || !r.at_end()) return Malformed("registration");
  return m;
}

Result<RegisterReply> DecodeRegisterReply(const uint8_t* data, size_t size) {
  Reader r(data, size);
  uint32_t magic = 0, kind = 0, status = 0;
  RegisterReply m;
  r.Get(&magic);
  r.Get(&kind);
  r.Get(&m.version);
  if (!r.ok() || magic != kMagic || kind != static_cast<uint32_t>(MessageKind::kRegisterReply)) {
    return Malformed("registration reply");
  }
  if (m.version != shm::kProtocolVersion) {
    return Status(Errc::kVersionMismatch, "server speaks protocol " + std::to_string(m.version) +
                                              ", client speaks " + std::to_string(shm::kProtocolVersion));
  }
  r.Get(&status);
  m.status = static_cast<Errc>(status);
  r.GetString(&m.message, 4096);
  r.Get(&m.client_id);
  r.Get(&m.bucket);
  r.Get(&m.buckets);
  r.Get(&m.unit);
  r.Get(&m.server_pid);
  r.GetString(&m.admission, 4096);
  r.Get(&m.doorbell_bytes);
  r.Get(&m.channel_bytes);
  uint32_t n = 0;
  if (!r.Get(&n) || n > shm::kMaxKernelsPerClient) return Malformed("registration reply regions");
  m.regions.resize(n);
  for (auto& g : m.regions) {
    r.GetString(&g.kernel, 256);
    r.Get(&g.kernel_id);
    r.Get(&g.input_capacity);
    r.Get(&g.output_capacity);
    r.Get(&g.mapping_bytes);
  }
  if (!r.ok() || !r.at_end()) return Malformed("registration reply");
  return m;
}

// --- control messages ---

bool IsControlRequest(MessageKind kind) {
  return kind == MessageKind::kStats || kind == MessageKind::kTraceStart || kind == MessageKind::kTraceRead ||
         kind == MessageKind::kTraceStop;
}

std::vector<uint8_t> Encode(const ControlRequest& m) {
  Writer w;
  PutHeader(w, m.kind);
  if (m.kind == MessageKind::kStats || m.kind == MessageKind::kModels) w.Put<uint64_t>(m.offset);
  if (m.kind == MessageKind::kTraceStart) w.Put<uint32_t>(m.capacity);
  return w.Take();
}

std::vector<uint8_t> Encode(const ControlReply& m) {
  Writer w;
  PutHeader(w, m.kind);
  w.Put<uint32_t>(static_cast<uint32_t>(m.status));
  w.PutString(m.message);
  w.Put<uint64_t>(m.total);
  w.Put<uint64_t>(m.offset);
  w.Put<uint8_t>(m.more ? 1 : 0);
  w.PutString(m.payload);
  return w.Take();
}

Result<ControlRequest> DecodeControlRequest(const uint8_t* data, size_t size) {
  Reader r(data, size);
  uint32_t magic = 0, kind = 0, version = 0;
  r.Get(&magic);
  r.Get(&kind);
  r.Get(&version);
  ControlRequest m;
  m.kind = static_cast<MessageKind>(kind);
  if (!r.ok() || magic != kMagic || !IsControlRequest(m.kind)) return Malformed("control request header");
  if (version != shm::kProtocolVersion) {
    return Status(Errc::kVersionMismatch, "tool speaks protocol " + std::to_string(version) + ", server speaks " +
                                              std::to_string(shm::kProtocolVersion));
  }
  if (m.kind == MessageKind::kStats) r.Get(&m.offset);
  if (m.kind == MessageKind::kTraceStart) r.Get(&m.capacity);
  if (!r.ok() || !r.at_end()) return Malformed("control request");
  return m;
}

Result<ControlReply> DecodeControlReply(const uint8_t* data, size_t size) {
  Reader r(data, size);
  uint32_t magic = 0, kind = 0, version = 0, status = 0;
  r.Get(&magic);
  r.Get(&kind);
  r.Get(&version);
  ControlReply m;
  m.kind = static_cast<MessageKind>(kind);
  if (!r.ok() || magic != kMagic ||
      (m.kind != MessageKind::kStatsReply && m.kind != MessageKind::kTraceReply && m.kind != MessageKind::kModelsReply)) {
    return Malformed("control reply header");
  }
  if (version != shm::kProtocolVersion) {
    return Status(Errc::kVersionMismatch, "server speaks protocol " + std::to_string(version) + ", tool speaks " +
                                              std::to_string(shm::kProtocolVersion));
  }
  r.Get(&status);
  m.status = static_cast<Errc>(status);
  r.GetString(&m.message, 4096);
  r.Get(&m.total);
  r.Get(&m.offset);
  uint8_t more = 0;
  r.Get(&more);
  if (more > 1) return Malformed("control reply flag");
  m.more = more != 0;
  r.GetString(&m.payload, kMaxControlPayload);
  if (!r.ok() || !r.at_end()) return Malformed("control reply");
  return m;
}

Result<uint64_t> DecodeModelsRequest(const uint8_t* data, size_t size) {
  Reader r(data, size);
  uint32_t magic = 0, kind = 0, version = 0;
  uint64_t offset = 0;
  r.Get(&magic);
  r.Get(&kind);
  r.Get(&version);
  if (!r.ok() || magic != kMagic || static_cast<MessageKind>(kind) != MessageKind::kModels) {
    return Malformed("models request header");
  }
  if (version != shm::kProtocolVersion) {
    return Status(Errc::kVersionMismatch, "tool speaks protocol " + std::to_string(version) + ", server speaks " +
                                              std::to_string(shm::kProtocolVersion));
  }
  r.Get(&offset);
  if (!r.ok() || !r.at_end()) return Malformed("models request");
  return offset;
}

}  // namespace paam::wire
