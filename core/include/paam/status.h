// paam/status.h — error values shared by every part of paam.
//
// Thread safety: Status and Result are plain values; const methods are safe from any
// thread. An OK Status holds no message and allocates nothing, so the hot path can
// return it freely (the LevelDB convention).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace paam {

// Error codes. The numeric values travel over the wire (registration replies, the
// per-region status word and the C ABI): do not change or reuse them.
enum class Errc : uint8_t {
  kOk = 0,
  kServerNotRunning = 1,   // no paamd listens on the socket path
  kNotAdmitted = 2,        // admission control refused the registration (message says why)
  kUnknownKernel = 3,      // the server (or direct mode) has no kernel of that name
  kInputTooLarge = 4,      // input bigger than the size declared at registration
  kServerDied = 5,         // the server went away while a request was outstanding
  kTimeout = 6,            // the caller's own timeout expired
  kInvalidArgument = 7,    // malformed parameters (shape mismatch, bad option, ...)
  kVersionMismatch = 8,    // client and server speak different protocol versions
  kProtocolError = 9,      // a peer sent something that does not parse
  kBusy = 10,              // the region already has a request in flight
  kKernelFailed = 11,      // the kernel itself reported an error
  kResourceExhausted = 12, // out of regions, memory, descriptors, ...
  kClosed = 13,            // the client was closed or deregistered
  kSystemError = 14,       // an OS call failed (message carries errno text)
  kOutputTooLarge = 15,    // output would not fit the declared output capacity
  kPermissionDenied = 16,  // not allowed: a socket directory or server this uid must not trust
  kCancelled = 17,         // the server stopped the request: its time limit or the server's cap
                           // passed, or its client went away
};

// Short stable name of an error code, e.g. "not_admitted".
std::string_view ErrcName(Errc code) noexcept;

class Status {
 public:
  Status() noexcept = default;
  Status(Errc code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() noexcept { return Status(); }

  bool ok() const noexcept { return code_ == Errc::kOk; }
  Errc code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }
  // "not_admitted: chain 'c2' would miss its deadline by 3.2 ms"
  std::string ToString() const;

 private:
  Errc code_ = Errc::kOk;
  std::string message_;
};

// Result<T>: a value or a non-OK Status.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}              // NOLINT(google-explicit-constructor)
  Result(Status status) : status_(std::move(status)) {}      // NOLINT(google-explicit-constructor)

  bool ok() const noexcept { return value_.has_value(); }
  const Status& status() const noexcept { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace paam
