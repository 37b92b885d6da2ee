// protocol/wire.h — registration messages over the server's Unix socket (SOCK_SEQPACKET).
//
// Off the hot path: a client sends one Register message when it connects, and optionally a
// Deregister before closing. The reply carries descriptors (SCM_RIGHTS) in a fixed order:
// doorbell (read-only memfd), wake eventfd, channel, then one region per declared kernel.
// Little-endian, length-prefixed strings; the reader bounds-checks everything and rejects
// trailing garbage.
//
// Control messages (statistics and tracing, server/control_requests.cc) come from tools (a
// connection that never registers) as well as from registered clients. Each request gets one
// ControlReply; a reply carries at most kMaxControlPayload bytes of JSON text, so a larger
// answer comes in chunks: statistics by offset into one snapshot, a trace by reading again
// while `more` is set.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "paam/status.h"
#include "paam/types.h"

namespace paam::wire {

inline constexpr uint32_t kMagic = 0x5041414d;  // "PAAM"
inline constexpr size_t kMaxMessageBytes = 64 * 1024;
inline constexpr size_t kMaxNameBytes = 47;

enum class MessageKind : uint32_t {
  kRegister = 1,
  kRegisterReply = 2,
  kDeregister = 3,
  kDeregisterReply = 4,
  kStats = 5,        // ControlRequest: offset into the snapshot (0: take a new one)
  kStatsReply = 6,   // ControlReply
  kTraceStart = 7,   // ControlRequest: capacity (records over all lanes)
  kTraceRead = 8,    // ControlRequest
  kTraceStop = 9,    // ControlRequest
  kTraceReply = 10,  // ControlReply (to start, read and stop)
  kModels = 11,      // ControlRequest: offset into the models' JSON (server/models_query.cc)
  kModelsReply = 12, // ControlReply
};

// The most JSON text one ControlReply carries (the rest of a 64 KiB message is its header).
inline constexpr size_t kMaxControlPayload = 60 * 1024;

// kStats, kTraceStart, kTraceRead or kTraceStop.
struct ControlRequest {
  MessageKind kind = MessageKind::kStats;
  uint64_t offset = 0;    // kStats
  uint32_t capacity = 0;  // kTraceStart
};

struct ControlReply {
  MessageKind kind = MessageKind::kStatsReply;  // or kTraceReply
  Errc status = Errc::kOk;
  std::string message;    // error text, when status != kOk
  uint64_t total = 0;     // stats: bytes of the snapshot; trace read: records waiting before it
  uint64_t offset = 0;    // stats: where `payload` starts in the snapshot
  bool more = false;      // trace read: records are still waiting
  std::string payload;    // JSON text (a chunk of it), at most kMaxControlPayload bytes
};

struct RegisterRequest {
  uint32_t version = 0;
  uint32_t chain_priority = 0;
  Uuid callback_uuid{};
  WaitMode wait = WaitMode::kSuspend;
  int32_t unit = -1;  // preferred accelerator unit, -1: server chooses
  std::string client_name;
  std::vector<KernelDecl> kernels;
  std::optional<TimingModel> timing;
  // The relative deadline of the callback's requests in ms (ClientOptions::deadline_ms; 0:
  // the timing model's chain deadline, if any). The server checks the value (RelativeDeadlineNs).
  double deadline_ms = 0;
};

struct RegionInfo {
  std::string kernel;
  uint32_t kernel_id = 0;
  uint64_t input_capacity = 0;
  uint64_t output_capacity = 0;
  uint64_t mapping_bytes = 0;
};

struct RegisterReply {
  uint32_t version = 0;
  Errc status = Errc::kOk;
  std::string message;        // error text, when status != kOk
  uint64_t client_id = 0;
  uint32_t bucket = 0;        // 0 = highest
  uint32_t buckets = 1;
  uint32_t unit = 0;
  int32_t server_pid = 0;
  std::string admission;      // how admission decided (also when admitted)
  uint64_t doorbell_bytes = 0;
  uint64_t channel_bytes = 0;
  std::vector<RegionInfo> regions;  // in the order of the request's kernels
};

std::vector<uint8_t> Encode(const RegisterRequest& m);
std::vector<uint8_t> Encode(const RegisterReply& m);
std::vector<uint8_t> EncodeDeregister();
std::vector<uint8_t> EncodeDeregisterReply();
std::vector<uint8_t> Encode(const ControlRequest& m);
std::vector<uint8_t> Encode(const ControlReply& m);

// Kind of a message (checks the magic); std::nullopt if it is not a paam message.
std::optional<MessageKind> PeekKind(const uint8_t* data, size_t size);
Result<RegisterRequest> DecodeRegisterRequest(const uint8_t* data, size_t size);
Result<RegisterReply> DecodeRegisterReply(const uint8_t* data, size_t size);
// True for the kinds a ControlRequest carries.
bool IsControlRequest(MessageKind kind);
Result<ControlRequest> DecodeControlRequest(const uint8_t* data, size_t size);
Result<ControlReply> DecodeControlReply(const uint8_t* data, size_t size);
// The offset of a kModels request (encoded as a ControlRequest; not a "control request" of
// IsControlRequest: the registry answers it, server/models_query.cc).
Result<uint64_t> DecodeModelsRequest(const uint8_t* data, size_t size);

}  // namespace paam::wire
