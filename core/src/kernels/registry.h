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
// backend for built-ins.
struct KernelEntry {
  uint32_t id = 0;  // index in the registry
  std::string name;
  std::string signature;
  decltype(paam_kernel::plan) plan = nullptr;
  decltype(paam_kernel::run_cpu) run_cpu = nullptr;
  decltype(paam_kernel::run_cuda) run_cuda = nullptr;

  // Calls plan() and turns its error into a Status (kInvalidArgument with the kernel's message).
  Status Plan(const uint64_t params[PAAM_MAX_PARAMS], uint64_t input_bytes,
              uint64_t* output_bytes) const;
};

class KernelRegistry {
 public:
  // A registry holding the built-in kernels: vector_add, matmul, reduction, histogram, spin.
  static KernelRegistry WithBuiltins();

  // Adds a kernel; fails if the name is taken or invalid.
  Status Add(const paam_kernel& kernel);
  // dlopen()s a plugin and adds its kernels. The library stays loaded for the process's life.
  Status LoadPlugin(const std::string& path);

  const KernelEntry* Find(std::string_view name) const;
  const KernelEntry* Get(uint32_t id) const { return id < entries_.size() ? entries_[id].get() : nullptr; }
  KernelEntry* FindMutable(std::string_view name);
  size_t size() const { return entries_.size(); }
  std::vector<std::string> Names() const;

 private:
  std::vector<std::unique_ptr<KernelEntry>> entries_;  // stable addresses
};

// The built-in kernel descriptors (CPU implementations), defined in builtin_cpu.cc.
const paam_kernel* BuiltinKernels(uint32_t* count);

}  // namespace paam
