// paam/types.h — value types shared by the client, the server and the analysis.
//
// Plain values; no thread-safety concerns beyond those of std::string/std::vector.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace paam {

// How a client waits for its request to complete. Values travel over the wire.
enum class WaitMode : uint8_t {
  kSpin = 0,     // poll the region's state word (lowest latency, burns the CPU)
  kSuspend = 1,  // sleep on a futex until the server wakes it
  kHybrid = 2,   // spin up to ClientOptions::hybrid_spin_ns, then suspend
};

std::string_view WaitModeName(WaitMode mode) noexcept;
// Parses "spin" | "suspend" | "hybrid"; std::nullopt otherwise.
std::optional<WaitMode> ParseWaitMode(std::string_view text) noexcept;

using Uuid = std::array<uint8_t, 16>;
Uuid RandomUuid();
std::string UuidToString(const Uuid& uuid);

// Bytes of a CUDA IPC memory handle (cudaIpcMemHandle_t).
inline constexpr size_t kIpcHandleBytes = 64;
using IpcHandle = std::array<uint8_t, kIpcHandleBytes>;

// Device buffers a client already holds on a GPU, shared with the server through CUDA IPC
// (docs/gpu.md, "Device data"). Each handle comes from cudaIpcGetMemHandle on a device
// allocation; the buffer starts `*_offset` bytes into that allocation (0 for a plain cudaMalloc;
// pool allocators hand out pieces of larger allocations) and is `*_bytes` long. `gpu` is the
// CUDA device ordinal the buffers live on, as the server numbers its GPUs (same
// CUDA_VISIBLE_DEVICES on both sides). The server opens the handles once at registration and
// closes them when the registration ends.
struct DeviceBuffers {
  IpcHandle input_handle{};
  uint64_t input_offset = 0;
  uint64_t input_bytes = 0;
  IpcHandle output_handle{};
  uint64_t output_offset = 0;
  uint64_t output_bytes = 0;
  int32_t gpu = 0;
};

// A kernel a callback will use, with the largest input and output it will ever pass.
// The server sizes the (callback, kernel) shared-memory region from these. `device`, when
// set, also lets requests run on the client's own device buffers (Client::SubmitDevice).
struct KernelDecl {
  std::string name;
  uint64_t max_input_bytes = 0;
  uint64_t max_output_bytes = 0;
  std::optional<DeviceBuffers> device;
};

// Optional timing model of the registering callback, used by admission control.
// Times in milliseconds. All callbacks of one chain carry the same chain name, period,
// deadline and priority; `callback_index` orders them inside the chain.
struct TimingModel {
  std::string chain;                // chain name (unique per server)
  uint32_t callback_index = 0;      // 0-based position of this callback in its chain
  uint32_t chain_length = 1;        // number of callbacks in the chain
  double period_ms = 0;
  double deadline_ms = 0;           // 0 means "equal to the period"
  double cpu_wcet_ms = 0;           // E_i: all CPU segments of this callback together
  std::vector<double> segments_ms;  // A_i,j: accelerator segments on this server
  std::string executor;             // executor name
  int32_t executor_cpu = 0;
  int32_t executor_priority = 0;    // OS real-time priority of the executor
  WaitMode executor_wait = WaitMode::kSuspend;
  bool best_effort = false;
};

}  // namespace paam
