// server/descriptor_check.h — the checks the dispatcher applies to what a client wrote into
// its ring: the ring's head, and each request descriptor it copied out of a slot.
//
// Pure functions of their arguments (the server's private record of the registration and a
// private copy of the descriptor), so that they can be fuzzed alone (core/fuzz/). Hot path:
// no allocation, no lock, no system call; errors are formatted into the caller's buffer.
#pragma once

#include <cstdint>
#include <cstdio>

#include "backend/backend.h"
#include "kernels/registry.h"
#include "paam/status.h"
#include "shm/layout.h"

namespace paam {

// True when the client's head is at most one ring ahead of the server's own tail; otherwise
// the client broke its ring (or scribbled on head) and no slot in between can be trusted.
inline bool RingWindowOk(uint64_t head, uint64_t tail) { return head - tail <= shm::kRingCapacity; }

// Checks descriptor `d` against the region it names, as registered: `kernel` and `memory` are
// the server's (d.region has been range-checked by the caller). Flags and the reserved field
// first, then the sizes against the buffers declared at registration (the host areas, or the
// device buffers for kFlagDeviceData), with the kernel's own plan() in between. Returns kOk
// and the output size plan() gave in *out_bytes, or the error with its text in `err`.
inline Errc CheckDescriptor(const shm::RequestDescriptor& d, const KernelEntry& kernel, const RegionMemory& memory,
                            uint64_t* out_bytes, char* err, size_t err_len) {
  const bool device_data = (d.flags & shm::kFlagDeviceData) != 0;
  const bool has_device = memory.device.has_value() && memory.device_input != nullptr;
  const uint64_t in_cap = device_data && has_device ? memory.device->input_bytes : memory.input_capacity;
  const uint64_t out_cap = device_data && has_device ? memory.device->output_bytes : memory.output_capacity;
  const char* where = device_data ? "device buffer" : "size";
  *out_bytes = 0;
  if ((d.flags & ~shm::kKnownFlags) != 0 || d.reserved != 0) {
    std::snprintf(err, err_len, "descriptor has unknown flags (0x%x) or nonzero reserved fields", d.flags);
    return Errc::kProtocolError;
  }
  if (device_data && !has_device) {
    std::snprintf(err, err_len, "device-data request for '%s', whose registration has no device buffers",
                  kernel.name.c_str());
    return Errc::kInvalidArgument;
  }
  if (d.input_bytes > in_cap) {
    std::snprintf(err, err_len, "input of %llu bytes exceeds the %s of %llu declared for '%s' at registration",
                  static_cast<unsigned long long>(d.input_bytes), where, static_cast<unsigned long long>(in_cap),
                  kernel.name.c_str());
    return Errc::kInputTooLarge;
  }
  err[0] = '\0';  // a plugin's plan() may fail without a message: never send stack bytes back
  if (kernel.plan(d.params, d.input_bytes, out_bytes, err, err_len) != PAAM_KERNEL_OK) {
    err[err_len - 1] = '\0';
    return Errc::kInvalidArgument;
  }
  if (*out_bytes > out_cap) {
    std::snprintf(err, err_len, "output of %llu bytes exceeds the %s of %llu declared for '%s' at registration",
                  static_cast<unsigned long long>(*out_bytes), where, static_cast<unsigned long long>(out_cap),
                  kernel.name.c_str());
    return Errc::kOutputTooLarge;
  }
  return Errc::kOk;
}

}  // namespace paam
