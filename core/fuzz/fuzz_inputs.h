// fuzz/fuzz_inputs.h — the input layouts of the fuzz targets that read more than one message,
// shared by the targets and by make_corpus.cc (which writes their seeds).
#pragma once

#include <cstddef>
#include <cstdint>

#include "shm/layout.h"

namespace paam::fuzz {

// fuzz_descriptor: a DescriptorInput, then the ring's slots (80-byte RequestDescriptors; slots
// past the end of the input are zero). Capacities are kept small (at most kMaxAreaBytes) so an
// accepted request's kernel runs in microseconds.
inline constexpr uint32_t kMaxRegions = 4;
inline constexpr uint64_t kMaxAreaBytes = 16 * 1024;

struct RegionInput {
  uint8_t kernel;           // index into the fuzzer's registry (built-ins, then the example plugin), modulo its size
  uint8_t device;           // bit 0: registered with device buffers (attached by the backend)
  uint16_t input_capacity;  // modulo kMaxAreaBytes + 1, as are the three below
  uint16_t output_capacity;
  uint16_t device_input_bytes;
  uint16_t device_output_bytes;
};

struct DescriptorInput {
  uint64_t tail;            // the server's private consumer index
  uint64_t head;            // what the client stored as its head
  uint32_t regions;         // 1..kMaxRegions (modulo)
  RegionInput region[kMaxRegions];
};

// fuzz_admission: an AdmissionInput, then registration messages, each as a 2-byte little-endian
// length followed by that many bytes (a wire::RegisterRequest; a short last one is dropped).
struct AdmissionInput {
  uint8_t buckets;          // paamd --buckets: 1..8 (modulo)
  uint8_t overhead;         // epsilon, in units of 0.01 ms
  uint8_t preemption;       // kappa, in units of 0.01 ms
  uint8_t comm_cost;        // epsilon', in units of 0.01 ms
  uint8_t remove_every;     // 0: never; else every n-th registration removes the oldest admitted
  uint8_t reserved[3];
};

}  // namespace paam::fuzz
