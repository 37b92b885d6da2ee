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
// the server's (d.region has been range-checked by the caller). Flags first, then the sizes against the buffers declared at registration (the host areas, or the
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
  if ((d.flags & ~shm::kKnownFlags) != 0) {
    std::snprintf(err, err_len, "descriptor has unknown flags (0x%x)", d.flags);
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
  // A version 2 plan() also sees the host input (the model plugin checks the tensor table
  // there); PlanRaw never leaves err unset.
  if (kernel.PlanRaw(d.params, d.input_bytes, device_data ? nullptr : memory.input, out_cap, out_bytes, err,
                     err_len) != PAAM_KERNEL_OK) {
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

// When the server stops request `d` (CLOCK_MONOTONIC ns; UINT64_MAX: never), dequeued at `now`
// by a client whose requests may last `cap_ns` (0: no cap): min(the client's time_limit_ns if
// nonzero, the cap) after its submission. The submission time is the client's word, so it
// counts no later than `now`: a client cannot buy itself more than the cap by dating its
// requests in the future (dating them in the past only shortens its own).
inline uint64_t RequestDeadline(const shm::RequestDescriptor& d, uint64_t now, uint64_t cap_ns) {
  uint64_t limit = cap_ns;
  if (d.time_limit_ns != 0 && (limit == 0 || d.time_limit_ns < limit)) limit = d.time_limit_ns;
  if (limit == 0) return UINT64_MAX;
  const uint64_t start = d.submit_ns < now ? d.submit_ns : now;
  return start > UINT64_MAX - limit ? UINT64_MAX : start + limit;
}

// The absolute deadline of request `d` for --queue edf and the fallback policy (CLOCK_MONOTONIC
// ns; UINT64_MAX: none), dequeued at `now` by a registration whose relative deadline is
// `relative_ns` (0: none): its release (the client's release_ns, else its submit_ns) plus
// relative_ns. Both times are the client's word, so the release counts no later than `now` and
// no earlier than one relative deadline before it: the deadline lies in [now, now + relative_ns].
// A client can thus claim no deadline before its own dequeue, and the bucket it was given at
// registration still bounds whom it can pass.
inline uint64_t RequestDue(const shm::RequestDescriptor& d, uint64_t now, uint64_t relative_ns) {
  if (relative_ns == 0) return UINT64_MAX;
  uint64_t release = d.release_ns != 0 ? d.release_ns : d.submit_ns;
  if (release > now) release = now;
  const uint64_t earliest = now > relative_ns ? now - relative_ns : 0;
  if (release < earliest) release = earliest;
  return release >= UINT64_MAX - relative_ns ? UINT64_MAX - 1 : release + relative_ns;  // UINT64_MAX: none
}

}  // namespace paam
