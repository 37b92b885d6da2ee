// protocol/wire.h — registration messages over the server's Unix socket (SOCK_SEQPACKET).
//
// Off the hot path: a client sends one Register message when it connects, and optionally a
// Deregister before closing. The reply carries descriptors (SCM_RIGHTS) in a fixed order:
// doorbell (read-only memfd), wake eventfd, channel, then one region per declared kernel.
// Little-endian, length-prefixed strings; the reader bounds-checks everything and rejects
// trailing garbage.
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

enum class MessageKind : uint32_t { kRegister = 1, kRegisterReply = 2, kDeregister = 3, kDeregisterReply = 4 };

struct RegisterRequest {
  uint32_t version = 0;
  uint32_t chain_priority = 0;
  Uuid callback_uuid{};
  WaitMode wait = WaitMode::kSuspend;
  int32_t unit = -1;  // preferred accelerator unit, -1: server chooses
  std::string client_name;
  std::vector<KernelDecl> kernels;
  std::optional<TimingModel> timing;
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

// Kind of a message (checks the magic); std::nullopt if it is not a paam message.
std::optional<MessageKind> PeekKind(const uint8_t* data, size_t size);
Result<RegisterRequest> DecodeRegisterRequest(const uint8_t* data, size_t size);
Result<RegisterReply> DecodeRegisterReply(const uint8_t* data, size_t size);

}  // namespace paam::wire
