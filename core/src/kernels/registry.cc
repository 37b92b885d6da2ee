#include "kernels/registry.h"

#include <dlfcn.h>

#include <cstring>

namespace paam {

Status KernelEntry::Plan(const uint64_t params[PAAM_MAX_PARAMS], uint64_t input_bytes,
                         uint64_t* output_bytes) const {
  char err[160] = {0};
  int rc = plan(params, input_bytes, output_bytes, err, sizeof(err));
  if (rc == PAAM_KERNEL_OK) return Status::Ok();
  err[sizeof(err) - 1] = '\0';
  return Status(Errc::kInvalidArgument, name + ": " + err);
}

KernelRegistry KernelRegistry::WithBuiltins() {
  KernelRegistry r;
  uint32_t n = 0;
  const paam_kernel* k = BuiltinKernels(&n);
  for (uint32_t i = 0; i < n; ++i) {
    Status s = r.Add(k[i]);
    (void)s;  // built-in names are valid and unique
  }
  return r;
}

Status KernelRegistry::Add(const paam_kernel& kernel) {
  if (kernel.name == nullptr || kernel.plan == nullptr) {
    return Status(Errc::kInvalidArgument, "kernel descriptor needs a name and a plan function");
  }
  std::string name = kernel.name;
  if (name.empty() || name.size() > 47 ||
      name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos) {
    return Status(Errc::kInvalidArgument, "invalid kernel name '" + name + "' (use [a-z0-9_], at most 47)");
  }
  if (Find(name) != nullptr) return Status(Errc::kInvalidArgument, "kernel '" + name + "' is defined twice");
  if (kernel.run_cpu == nullptr && kernel.run_cuda == nullptr) {
    return Status(Errc::kInvalidArgument, "kernel '" + name + "' has no implementation");
  }
  auto e = std::make_unique<KernelEntry>();
  e->id = static_cast<uint32_t>(entries_.size());
  e->name = name;
  e->signature = kernel.signature != nullptr ? kernel.signature : "";
  e->plan = kernel.plan;
  e->run_cpu = kernel.run_cpu;
  e->run_cuda = kernel.run_cuda;
  entries_.push_back(std::move(e));
  return Status::Ok();
}

Status KernelRegistry::LoadPlugin(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return Status(Errc::kInvalidArgument, std::string("cannot load plugin: ") + dlerror());
  auto fn = reinterpret_cast<paam_plugin_kernels_fn>(dlsym(handle, "paam_plugin_kernels"));
  if (fn == nullptr) {
    return Status(Errc::kInvalidArgument, "plugin " + path + " does not export paam_plugin_kernels");
  }
  uint32_t n = 0;
  const paam_kernel* kernels = fn(PAAM_KERNEL_ABI_VERSION, &n);
  if (kernels == nullptr) {
    return Status(Errc::kVersionMismatch, "plugin " + path + " does not support kernel ABI version " +
                                              std::to_string(PAAM_KERNEL_ABI_VERSION));
  }
  for (uint32_t i = 0; i < n; ++i) {
    Status s = Add(kernels[i]);
    if (!s.ok()) return Status(s.code(), "plugin " + path + ": " + s.message());
  }
  return Status::Ok();  // the handle stays open for the life of the process
}

const KernelEntry* KernelRegistry::Find(std::string_view name) const {
  for (const auto& e : entries_) {
    if (e->name == name) return e.get();
  }
  return nullptr;
}

KernelEntry* KernelRegistry::FindMutable(std::string_view name) {
  for (auto& e : entries_) {
    if (e->name == name) return e.get();
  }
  return nullptr;
}

std::vector<std::string> KernelRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& e : entries_) names.push_back(e->name);
  return names;
}

}  // namespace paam
