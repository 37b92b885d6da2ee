// shm/layout.h — the shared-memory layout spoken by paamd and its clients.
// The byte grammar is documented in docs/shm_layout.md. Shared by server and client; any change
// to a struct below must bump kProtocolVersion (checked at registration: kVersionMismatch).
//
// Three kinds of memfd mappings, all created by the server and handed to the client over the
// registration socket with SCM_RIGHTS (no names in /dev/shm):
//   Doorbell  — one per server, shared by all clients and therefore READ-ONLY to them (sealed
//               F_SEAL_FUTURE_WRITE after the server mapped it): a flag saying whether the
//               dispatcher sleeps. A client that published a request while it sleeps wakes it
//               through its own wake eventfd (one per registration, also passed at registration),
//               so no client can write anything another client relies on.
//   Channel   — one per registration: a single-producer (client) single-consumer (server) ring
//               of fixed-size 80-byte RequestDescriptors.
//   Region    — one per (callback, kernel): header (state word, sequence, status, timestamps),
//               then the input area, then the output area.
//
// Trust: the server never trusts these bytes. It copies each descriptor out, keeps its own
// ring tail, validates every index and size against its private copies, and writes results only
// inside the region of the client that asked. A client that scribbles hurts only itself.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace paam::shm {

// Do not reuse. 2: device buffers, kFlagDeviceData. 3: read-only doorbell, per-registration wake
// eventfd (the shared futex word `ring` is gone). 4: RequestDescriptor::time_limit_ns (was a
// reserved field that had to be 0). 5: RequestDescriptor::release_ns (80 bytes),
// RegionHeader::ran_on (was reserved1), RegisterRequest's relative deadline.
inline constexpr uint32_t kProtocolVersion = 5;
inline constexpr uint32_t kDoorbellMagic = 0x50444231;  // "PDB1"
inline constexpr uint32_t kChannelMagic = 0x50434831;   // "PCH1"
inline constexpr uint32_t kRegionMagic = 0x50524731;    // "PRG1"
inline constexpr size_t kCacheLine = 64;
inline constexpr uint32_t kRingCapacity = 64;     // descriptors per channel; power of two
inline constexpr uint32_t kMaxKernelsPerClient = kRingCapacity;  // one region per kernel
inline constexpr size_t kErrorTextBytes = 160;

// RequestDescriptor::flags bits. Any other bit set is a protocol error.
// kFlagDeviceData: run on the device buffers registered for this region (CUDA IPC), not on the
// region's host areas; allowed only for regions registered with device buffers.
inline constexpr uint32_t kFlagDeviceData = 1u;
inline constexpr uint32_t kKnownFlags = kFlagDeviceData;

// A request, as the client writes it into its channel. 80 bytes: the paper's 72 and the release.
struct RequestDescriptor {
  uint32_t region;        // index of the region (kernel) in this registration
  uint32_t flags;         // kFlag* bits; 0 = host data
  uint64_t sequence;      // client's request number; echoed in the region on completion
  uint64_t input_bytes;   // bytes of input written into the region's input area
  uint64_t params[4];     // kernel scalar parameters (see kernel_abi.h)
  uint64_t submit_ns;     // CLOCK_MONOTONIC when the client submitted
  // The request's time limit, ns after submit_ns; 0: none from the client. The server stops a
  // request still queued or running at min(this, its own cap) after submission and answers it
  // kCancelled (docs/security.md).
  uint64_t time_limit_ns;
  // When the job this request belongs to was released (CLOCK_MONOTONIC ns; 0: submit_ns), e.g.
  // the timer expiry that started its chain. Under paamd --queue edf the request's absolute
  // deadline is this plus the relative deadline of its registration; the server clamps it so
  // that the deadline lies between the request's dequeue and one relative deadline after it
  // (RequestDue, server/descriptor_check.h).
  uint64_t release_ns;
};
static_assert(sizeof(RequestDescriptor) == 80, "the control-plane descriptor is 80 bytes");

// Written by the server only; clients map it read-only.
struct alignas(kCacheLine) DoorbellHeader {
  uint32_t magic;
  uint32_t version;
  // SYNC POINT: nonzero while the dispatcher sleeps (or is about to). A client publishes its
  // descriptor (head), issues a seq_cst fence, then reads this; the dispatcher stores 1, issues
  // a seq_cst fence, then re-reads every head before sleeping. So either the dispatcher sees
  // the descriptor or the client sees 1 and writes its wake eventfd (no lost wake-up).
  alignas(kCacheLine) std::atomic<uint32_t> sleeping;
};

struct alignas(kCacheLine) ChannelHeader {
  uint32_t magic;
  uint32_t version;
  uint32_t capacity;      // kRingCapacity
  uint32_t reserved;
  // SYNC POINT: producer (client) stores head with release after writing the slot.
  alignas(kCacheLine) std::atomic<uint64_t> head;
  // Consumer (server) progress, for the client's flow control only (the server keeps its own).
  alignas(kCacheLine) std::atomic<uint64_t> tail;
  alignas(kCacheLine) RequestDescriptor slots[kRingCapacity];
};
static_assert(offsetof(ChannelHeader, tail) - offsetof(ChannelHeader, head) >= kCacheLine,
              "head and tail must be a cache line apart to prevent false sharing");

// Region state word values (futex word).
enum RegionState : uint32_t {
  kIdle = 0,     // no request outstanding
  kPending = 1,  // client submitted; server has not completed it yet
  kDone = 2,     // completed; output and timestamps valid for `sequence`
  kFailed = 3,   // completed with an error; `status` and `error` say which
};

// RegionHeader::ran_on: where the completed request's kernel ran. The low byte names the device
// (kRanNowhere: it did not run: refused, cancelled while queued); kRanFallback is set when the
// server's fallback policy ran the kernel's CPU version instead of its bucket's device
// (paamd --fallback).
inline constexpr uint32_t kRanNowhere = 0;
inline constexpr uint32_t kRanOnCpu = 1;
inline constexpr uint32_t kRanOnCuda = 2;
inline constexpr uint32_t kRanDeviceMask = 0xffu;
inline constexpr uint32_t kRanFallback = 0x100u;

// Per-request timestamps, CLOCK_MONOTONIC ns (the Fig. 12 stages).
struct Timestamps {
  uint64_t submitted;     // client pushed the descriptor
  uint64_t dequeued;      // dispatcher copied it out of the ring and queued it in its bucket
  uint64_t picked;        // bucket worker popped it from its priority queue
  uint64_t device_start;  // kernel started on the device
  uint64_t device_end;    // kernel finished on the device (output in host memory)
  uint64_t completed;     // server published the state word
};

struct alignas(kCacheLine) RegionHeader {
  uint32_t magic;
  uint32_t version;
  uint32_t kernel_id;
  uint32_t reserved0;
  uint64_t input_offset;     // from the start of the mapping
  uint64_t input_capacity;
  uint64_t output_offset;
  uint64_t output_capacity;
  uint64_t mapping_bytes;
  char kernel_name[48];
  // SYNC POINT: the client stores kPending before publishing the descriptor; the server
  // exchanges kDone/kFailed (seq_cst) after writing everything below, then wakes waiters.
  alignas(kCacheLine) std::atomic<uint32_t> state;
  std::atomic<uint32_t> waiters;   // nonzero while a client thread futex-waits on `state`
  uint64_t sequence;               // sequence of the request this completion belongs to
  int32_t status;                  // paam::Errc of the completion
  uint32_t ran_on;                 // kRanOnCpu | kRanOnCuda, maybe | kRanFallback; or kRanNowhere
  uint64_t output_bytes;           // bytes of output written
  Timestamps ts;
  char error[kErrorTextBytes];     // NUL-terminated message when status != 0
};

// The offsets docs/shm_layout.md documents.
static_assert(offsetof(DoorbellHeader, sleeping) == 64 && sizeof(DoorbellHeader) == 128);
static_assert(offsetof(ChannelHeader, head) == 64 && offsetof(ChannelHeader, tail) == 128 &&
              offsetof(ChannelHeader, slots) == 192);
static_assert(offsetof(RegionHeader, kernel_name) == 56 && offsetof(RegionHeader, state) == 128 &&
              offsetof(RegionHeader, waiters) == 132 && offsetof(RegionHeader, sequence) == 136 &&
              offsetof(RegionHeader, status) == 144 && offsetof(RegionHeader, ran_on) == 148 &&
              offsetof(RegionHeader, output_bytes) == 152 &&
              offsetof(RegionHeader, ts) == 160 && offsetof(RegionHeader, error) == 208);

inline constexpr uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Layout of a region of the given capacities.
struct RegionLayout {
  uint64_t input_offset, output_offset, mapping_bytes;
};
inline RegionLayout ComputeRegionLayout(uint64_t input_capacity, uint64_t output_capacity) {
  RegionLayout l{};
  l.input_offset = AlignUp(sizeof(RegionHeader), 4096);
  l.output_offset = AlignUp(l.input_offset + input_capacity, 4096);
  l.mapping_bytes = AlignUp(l.output_offset + output_capacity, 4096);
  if (l.mapping_bytes == 0) l.mapping_bytes = 4096;
  return l;
}

}  // namespace paam::shm
