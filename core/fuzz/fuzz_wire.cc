// fuzz/fuzz_wire.cc — the registration and control messages paamd reads from any process that
// connects to its socket (and the reply a client reads back): wire::PeekKind and the decoders.
// The control messages of the tools (statistics, trace) and their replies are decoded too.
// Input: one message, as SOCK_SEQPACKET delivers it (at most wire::kMaxMessageBytes).
// Properties: no crash, leak or undefined behaviour; a decoded message respects the limits the
// server relies on, and encoding it gives a message that decodes to the same encoding.
#include <cstddef>
#include <cstdint>

#include "fuzz_check.h"
#include "protocol/wire.h"
#include "shm/layout.h"

using namespace paam;

namespace {

bool ValidKernelName(const std::string& s) {
  if (s.empty() || s.size() > wire::kMaxNameBytes) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

void CheckRequest(const uint8_t* data, size_t size) {
  auto req = wire::DecodeRegisterRequest(data, size);
  if (!req.ok()) return;
  PAAM_FUZZ_CHECK(wire::PeekKind(data, size) == wire::MessageKind::kRegister);
  PAAM_FUZZ_CHECK(req->version == shm::kProtocolVersion);
  PAAM_FUZZ_CHECK(!req->kernels.empty() && req->kernels.size() <= shm::kMaxKernelsPerClient);
  for (const KernelDecl& k : req->kernels) PAAM_FUZZ_CHECK(ValidKernelName(k.name));
  PAAM_FUZZ_CHECK(static_cast<uint8_t>(req->wait) <= 2);
  const std::vector<uint8_t> once = wire::Encode(*req);
  auto again = wire::DecodeRegisterRequest(once.data(), once.size());
  PAAM_FUZZ_CHECK(again.ok());
  PAAM_FUZZ_CHECK(wire::Encode(*again) == once);
}

void CheckReply(const uint8_t* data, size_t size) {
  auto reply = wire::DecodeRegisterReply(data, size);
  if (!reply.ok()) return;
  PAAM_FUZZ_CHECK(wire::PeekKind(data, size) == wire::MessageKind::kRegisterReply);
  PAAM_FUZZ_CHECK(reply->regions.size() <= shm::kMaxKernelsPerClient);
  const std::vector<uint8_t> once = wire::Encode(*reply);
  auto again = wire::DecodeRegisterReply(once.data(), once.size());
  PAAM_FUZZ_CHECK(again.ok());
  PAAM_FUZZ_CHECK(wire::Encode(*again) == once);
}

void CheckControlRequest(const uint8_t* data, size_t size) {
  auto req = wire::DecodeControlRequest(data, size);
  if (!req.ok()) return;
  PAAM_FUZZ_CHECK(wire::PeekKind(data, size) == req->kind);
  PAAM_FUZZ_CHECK(wire::IsControlRequest(req->kind));
  const std::vector<uint8_t> once = wire::Encode(*req);
  PAAM_FUZZ_CHECK(once == std::vector<uint8_t>(data, data + size));  // no field is left unread
  auto again = wire::DecodeControlRequest(once.data(), once.size());
  PAAM_FUZZ_CHECK(again.ok());
  PAAM_FUZZ_CHECK(wire::Encode(*again) == once);
}

void CheckControlReply(const uint8_t* data, size_t size) {
  auto reply = wire::DecodeControlReply(data, size);
  if (!reply.ok()) return;
  PAAM_FUZZ_CHECK(wire::PeekKind(data, size) == reply->kind);
  PAAM_FUZZ_CHECK(reply->payload.size() <= wire::kMaxControlPayload);
  const std::vector<uint8_t> once = wire::Encode(*reply);
  auto again = wire::DecodeControlReply(once.data(), once.size());
  PAAM_FUZZ_CHECK(again.ok());
  PAAM_FUZZ_CHECK(wire::Encode(*again) == once);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > wire::kMaxMessageBytes) return -1;  // the socket never delivers more: not a corpus entry
  (void)wire::PeekKind(data, size);
  CheckRequest(data, size);
  CheckReply(data, size);
  CheckControlRequest(data, size);
  CheckControlReply(data, size);
  return 0;
}
