#include "kernels/registry.h"

#include <dlfcn.h>

#include <cstring>

namespace paam {

int KernelEntry::PlanRaw(const uint64_t params[PAAM_MAX_PARAMS], uint64_t input_bytes, const void* host_input,
                         uint64_t output_capacity, uint64_t* output_bytes, char* err, size_t err_len) const {
  err[0] = '\0';  // a plan() may fail without a message: never hand back stack bytes
  int rc = PAAM_KERNEL_EINVAL;
  if (plan_v2 != nullptr) {
    const paam_plan_args args{params, input_bytes, host_input, output_capacity};
    rc = plan_v2(state, &args, output_bytes, err, err_len);
  } else if (plan != nullptr) {
    rc = plan(params, input_bytes, output_bytes, err, err_len);
  }
  err[err_len - 1] = '\0';
  return rc;
}

namespace {

// Runs the v2 entry (state, messages) when the kernel has one, else the v1 entry; the message
// is empty or a C string whatever the kernel wrote.
template <typename V2, typename V1>
int RunEither(V2 v2, V1 v1, void* state, const paam_kernel_args* args, char* err, size_t err_len) {
  err[0] = '\0';
  int rc = PAAM_KERNEL_EFAILED;
  if (v2 != nullptr) {
    rc = v2(state, args, err, err_len);
  } else if (v1 != nullptr) {
    rc = v1(args);
  }
  err[err_len - 1] = '\0';
  return rc;
}

}  // namespace

int KernelEntry::RunCpu(const paam_kernel_args* args, char* err, size_t err_len) const {
  return RunEither(run_cpu_v2, run_cpu, state, args, err, err_len);
}

int KernelEntry::RunCuda(const paam_kernel_args* args, char* err, size_t err_len) const {
  return RunEither(run_cuda_v2, run_cuda, state, args, err, err_len);
}

uint64_t KernelEntry::CudaSlices(const paam_kernel_args* args) const {
  return HasCudaSlices() ? cuda_slices_v2(state, args) : 0;
}

int KernelEntry::RunCudaSlice(const paam_kernel_args* args, uint64_t begin, uint64_t end, char* err,
                              size_t err_len) const {
  err[0] = '\0';
  const int rc = HasCudaSlices() ? run_cuda_slice_v2(state, args, begin, end, err, err_len) : PAAM_KERNEL_EFAILED;
  err[err_len - 1] = '\0';
  return rc;
}

Status KernelEntry::Plan(const uint64_t params[PAAM_MAX_PARAMS], uint64_t input_bytes, uint64_t* output_bytes,
                         const void* host_input, uint64_t output_capacity) const {
  char err[160];
  int rc = PlanRaw(params, input_bytes, host_input, output_capacity, output_bytes, err, sizeof(err));
  if (rc == PAAM_KERNEL_OK) return Status::Ok();
  return Status(Errc::kInvalidArgument, name + ": " + err);
}

namespace {

Status CheckName(const char* raw) {
  const std::string name = raw;
  if (name.empty() || name.size() > 47 ||
      name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos) {
    return Status(Errc::kInvalidArgument, "invalid kernel name '" + name + "' (use [a-z0-9_], at most 47)");
  }
  return Status::Ok();
}

}  // namespace

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
  if (Status ok = CheckName(kernel.name); !ok.ok()) return ok;
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

Status KernelRegistry::Add(const paam_kernel_v2& kernel) {
  if (kernel.name == nullptr || kernel.plan == nullptr) {
    return Status(Errc::kInvalidArgument, "kernel descriptor needs a name and a plan function");
  }
  if (Status ok = CheckName(kernel.name); !ok.ok()) return ok;
  std::string name = kernel.name;
  if (Find(name) != nullptr) return Status(Errc::kInvalidArgument, "kernel '" + name + "' is defined twice");
  if (kernel.run_cpu == nullptr && kernel.run_cuda == nullptr) {
    return Status(Errc::kInvalidArgument, "kernel '" + name + "' has no implementation");
  }
  auto e = std::make_unique<KernelEntry>();
  e->id = static_cast<uint32_t>(entries_.size());
  e->name = name;
  e->signature = kernel.signature != nullptr ? kernel.signature : "";
  e->tensor_signature = kernel.tensor_signature != nullptr ? kernel.tensor_signature : "";
  e->state = kernel.state;
  e->plan_v2 = kernel.plan;
  e->run_cpu_v2 = kernel.run_cpu;
  e->run_cuda_v2 = kernel.run_cuda;
  if ((kernel.cuda_slices == nullptr) != (kernel.run_cuda_slice == nullptr) ||
      (kernel.cuda_slices != nullptr && kernel.run_cuda == nullptr)) {
    return Status(Errc::kInvalidArgument, "kernel '" + name + "': cuda_slices and run_cuda_slice go together, "
                                          "and with run_cuda");
  }
  e->cuda_slices_v2 = kernel.cuda_slices;
  e->run_cuda_slice_v2 = kernel.run_cuda_slice;
  entries_.push_back(std::move(e));
  return Status::Ok();
}

Status KernelRegistry::LoadPlugin(const std::string& path, const std::string& config) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return Status(Errc::kInvalidArgument, std::string("cannot load plugin: ") + dlerror());
  if (auto init = reinterpret_cast<paam_plugin_init_fn>(dlsym(handle, "paam_plugin_init"))) {
    char err[1024] = {0};
    const paam_plugin_v2* plugin = init(PAAM_KERNEL_ABI_V2, config.c_str(), err, sizeof(err));
    err[sizeof(err) - 1] = '\0';
    if (plugin == nullptr) {
      return Status(Errc::kInvalidArgument, "plugin " + path + ": " + (err[0] != '\0' ? err : "its init failed"));
    }
    if (plugin->abi_version != PAAM_KERNEL_ABI_V2) {
      return Status(Errc::kVersionMismatch, "plugin " + path + " answers with kernel ABI version " +
                                                std::to_string(plugin->abi_version) + ", not " +
                                                std::to_string(PAAM_KERNEL_ABI_V2));
    }
    if (plugin->fini != nullptr) {
      plugins_.emplace_back(static_cast<void*>(nullptr), [fini = plugin->fini](void*) { fini(); });
    }
    for (uint32_t i = 0; i < plugin->count; ++i) {
      Status s = Add(plugin->kernels[i]);
      if (!s.ok()) return Status(s.code(), "plugin " + path + ": " + s.message());
    }
    return Status::Ok();  // the handle stays open for the life of the process
  }
  if (!config.empty()) {
    return Status(Errc::kInvalidArgument, "plugin " + path + " takes no configuration (it does not export "
                                          "paam_plugin_init, kernel ABI version 2)");
  }
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
