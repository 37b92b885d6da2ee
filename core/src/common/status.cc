#include "paam/status.h"

#include <random>

#include "paam/types.h"

namespace paam {

std::string_view ErrcName(Errc code) noexcept {
  switch (code) {
    case Errc::kOk: return "ok";
    case Errc::kServerNotRunning: return "server_not_running";
    case Errc::kNotAdmitted: return "not_admitted";
    case Errc::kUnknownKernel: return "unknown_kernel";
    case Errc::kInputTooLarge: return "input_too_large";
    case Errc::kServerDied: return "server_died";
    case Errc::kTimeout: return "timeout";
    case Errc::kInvalidArgument: return "invalid_argument";
    case Errc::kVersionMismatch: return "version_mismatch";
    case Errc::kProtocolError: return "protocol_error";
    case Errc::kBusy: return "busy";
    case Errc::kKernelFailed: return "kernel_failed";
    case Errc::kResourceExhausted: return "resource_exhausted";
    case Errc::kClosed: return "closed";
    case Errc::kSystemError: return "system_error";
    case Errc::kOutputTooLarge: return "output_too_large";
    case Errc::kPermissionDenied: return "permission_denied";
    case Errc::kCancelled: return "cancelled";
  }
  return "unknown_error";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string out(ErrcName(code_));
  if (!message_.empty()) {
    out += ": ";
    out += message_;
  }
  return out;
}

std::string_view WaitModeName(WaitMode mode) noexcept {
  switch (mode) {
    case WaitMode::kSpin: return "spin";
    case WaitMode::kSuspend: return "suspend";
    case WaitMode::kHybrid: return "hybrid";
  }
  return "?";
}

std::optional<WaitMode> ParseWaitMode(std::string_view text) noexcept {
  if (text == "spin") return WaitMode::kSpin;
  if (text == "suspend") return WaitMode::kSuspend;
  if (text == "hybrid") return WaitMode::kHybrid;
  return std::nullopt;
}

Uuid RandomUuid() {
  std::random_device rd;
  Uuid id;
  for (auto& b : id) b = static_cast<uint8_t>(rd());
  id[6] = (id[6] & 0x0f) | 0x40;  // version 4
  id[8] = (id[8] & 0x3f) | 0x80;  // variant 1
  return id;
}

std::string UuidToString(const Uuid& uuid) {
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < uuid.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += hex[uuid[i] >> 4];
    s += hex[uuid[i] & 15];
  }
  return s;
}

}  // namespace paam
