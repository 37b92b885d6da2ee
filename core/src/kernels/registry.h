// kernels/registry.h — named kernels with typed inputs/outputs, looked up by name.
//
// Thread safety: Add()/LoadPlugin() happen before the server starts serving (REQUIRES: no
// concurrent Find()). After that the registry is read-only and Find() is safe from any thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "paam/kernel_abi.h"
#include "paam/status.h"

namespace paam {

// One kernel. A copy of the plugin's descriptor; `run_cuda` may be attached later by the CUDA
// backend for built-ins. A version 2 kernel (paam_kernel_v2) has its functions in the *_v2
// fields and its state; callers go through PlanRaw/RunCpu/RunCuda, which call either version.
struct KernelEntry {
  uint32_t id = 0;  // index in the registry
  std::string name;
  std::string signature;
  decltype(paam_kernel::plan) plan = nullptr;
  decltype(paam_kernel::run_cpu) run_cpu = nullptr;
  decltype(paam_kernel::run_cuda) run_cuda = nullptr;
  // Version 2.
  void* state = nullptr;
  decltype(paam_kernel_v2::plan) plan_v2 = nullptr;
  decltype(paam_kernel_v2::run_cpu) run_cpu_v2 = nullptr;
  decltype(paam_kernel_v2::run_cuda) run_cuda_v2 = nullptr;
  decltype(paam_kernel_v2::cuda_slices) cuda_slices_v2 = nullptr;        // preemption in slices
  decltype(paam_kernel_v2::run_cuda_slice) run_cuda_slice_v2 = nullptr;
  std::string tensor_signature;  // JSON; empty: none (every version 1 kernel)

  bool HasCpu() const { return run_cpu != nullptr || run_cpu_v2 != nullptr; }
  bool HasCuda() const { return run_cuda != nullptr || run_cuda_v2 != nullptr; }
  // plan() of either version. `host_input`: the input area in host memory or nullptr;
  // `output_capacity`: the region's output area (UINT64_MAX: not known). On failure a message
  // in err (never left unset). Hot path: no allocation.
  int PlanRaw(const uint64_t params[PAAM_MAX_PARAMS], uint64_t input_bytes, const void* host_input,
              uint64_t output_capacity, uint64_t* output_bytes, char* err, size_t err_len) const;
  // run_cpu/run_cuda of either version (PAAM_KERNEL_EFAILED when there is none); on failure
  // a message in err, possibly empty (a version 1 kernel says nothing).
  int RunCpu(const paam_kernel_args* args, char* err, size_t err_len) const;
  int RunCuda(const paam_kernel_args* args, char* err, size_t err_len) const;
  // A version 2 kernel's CUDA slices (kernel_abi.h): how many a request has (0: it has none),
  // and enqueue slices [begin, end).
  bool HasCudaSlices() const { return cuda_slices_v2 != nullptr && run_cuda_slice_v2 != nullptr; }
  uint64_t CudaSlices(const paam_kernel_args* args) const;
  int RunCudaSlice(const paam_kernel_args* args, uint64_t begin, uint64_t end, char* err, size_t err_len) const;

  // Calls plan() and turns its error into a Status (kInvalidArgument with the kernel's message).
  Status Plan(const uint64_t params[PAAM_MAX_PARAMS], uint64_t input_bytes, uint64_t* output_bytes,
              const void* host_input = nullptr, uint64_t output_capacity = UINT64_MAX) const;
};

class KernelRegistry {
 public:
  // A registry holding the built-in kernels: vector_add, matmul, reduction, histogram, spin.
  static KernelRegistry WithBuiltins();

  // Adds a kernel; fails if the name is taken or invalid.
  Status Add(const paam_kernel& kernel);
  Status Add(const paam_kernel_v2& kernel);
  // dlopen()s a plugin and adds its kernels. The library stays loaded for the process's life.
  // `config` goes to a version 2 plugin's paam_plugin_init (kernel_abi.h); a version 1 plugin
  // takes none (an error if one is given). A version 2 plugin's fini runs when the last copy
  // of the registry that loaded it goes.
  Status LoadPlugin(const std::string& path, const std::string& config = "");

  const KernelEntry* Find(std::string_view name) const;
  const KernelEntry* Get(uint32_t id) const { return id < entries_.size() ? entries_[id].get() : nullptr; }
  KernelEntry* FindMutable(std::string_view name);
  size_t size() const { return entries_.size(); }
  std::vector<std::string> Names() const;

 private:
  std::vector<std::unique_ptr<KernelEntry>> entries_;  // stable addresses
  std::vector<std::shared_ptr<void>> plugins_;  // version 2 plugins: their fini, when the last copy goes
};

// The built-in kernel descriptors (CPU implementations), defined in builtin_cpu.cc.
const paam_kernel* BuiltinKernels(uint32_t* count);

}  // namespace paam
