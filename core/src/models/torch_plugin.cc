// models/torch_plugin.cc — libpaam_torch.so: PyTorch models as kernels, through kernel ABI
// version 2 (paam/kernel_abi.h). paamd loads it by path for `--model NAME=PATH` and hands it
// the configuration server/model_options.cc writes; each model becomes one kernel of that
// name, whose state is its TorchModel.
//
// Why a plugin and not a part of paamd: libtorch is large (hundreds of MB, minutes to compile
// against), optional, and comes in builds whose C++ ABI and CUDA version need not match the
// core's (Debian's CPU libtorch, the PyTorch wheel's CUDA one). Behind the C ABI none of that
// reaches paamd, the client library or the Python extension: they build and run without it,
// and the same paamd serves models with whichever plugin is next to it (docs/models.md).
#include <ATen/Parallel.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "models/plugin_config.h"
#include "models/torch_model.h"
#include "paam/kernel_abi.h"

namespace paam::models {
namespace {

int Plan(void* state, const paam_plan_args* args, uint64_t* output_bytes, char* err, size_t err_len) {
  return static_cast<const TorchModel*>(state)->Plan(args, output_bytes, err, err_len);
}

int RunCpu(void* state, const paam_kernel_args* args, char* err, size_t err_len) {
  return static_cast<const TorchModel*>(state)->RunCpu(args, err, err_len);
}

int RunCuda(void* state, const paam_kernel_args* args, char* err, size_t err_len) {
  return static_cast<const TorchModel*>(state)->RunCuda(args, err, err_len);
}

// One init's models and the descriptors pointing at them.
struct Instance {
  std::vector<std::unique_ptr<TorchModel>> models;
  std::vector<paam_kernel_v2> kernels;
  paam_plugin_v2 plugin{};
};

// Every registry that loads the plugin calls init once and fini once (when it goes); the
// models live until the last fini, since another registry may still run its own.
std::mutex g_mu;
std::vector<std::unique_ptr<Instance>> g_instances;
int g_live = 0;

void Fini() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_live > 0 && --g_live == 0) g_instances.clear();
}

// paamd loads plugins RTLD_LOCAL. With libtorch's libraries in a local scope, cuDNN 9 (which
// libtorch_cuda loads) crashes in cudnnCreate, at the first convolution on a GPU: a
// std::call_once in it jumps to address 0 (seen with PyTorch 2.11 and CUDA 13 on an H200;
// Python loads torch into the global scope, where it works). So the plugin moves itself and its
// dependencies into the global scope once, before anything runs. Its own symbols stay hidden
// (only paam_plugin_init is visible); libtorch's become global, as they are in any program
// linked against libtorch.
void PromoteToGlobalScope() {
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&PromoteToGlobalScope), &self) != 0 && self.dli_fname != nullptr) {
    (void)dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);  // the handle stays: never unloaded
  }
}

void SetThreads(int threads) {
  at::set_num_threads(threads);  // this thread's; each worker sets its own (UseThreads)
  static std::once_flag once;
  std::call_once(once, [] {
    try {
      at::set_num_interop_threads(1);  // only possible before any inter-op work
    } catch (const std::exception&) {
    }
  });
}

}  // namespace
}  // namespace paam::models

extern "C" __attribute__((visibility("default"))) const paam_plugin_v2* paam_plugin_init(uint32_t abi_version,
                                                                                          const char* config,
                                                                                          char* err, size_t err_len) {
  using namespace paam::models;
  if (abi_version != PAAM_KERNEL_ABI_V2) {
    std::snprintf(err, err_len, "the model plugin speaks kernel ABI version %u, not %u", PAAM_KERNEL_ABI_V2,
                  abi_version);
    return nullptr;
  }
  PromoteToGlobalScope();
  auto parsed = ParseConfig(config != nullptr ? config : "");
  if (!parsed.ok()) {
    std::snprintf(err, err_len, "%s", parsed.status().message().c_str());
    return nullptr;
  }
  SetThreads(parsed->cpu_threads);
  auto inst = std::make_unique<Instance>();
  for (const ModelConfig& mc : parsed->models) {
    auto model = TorchModel::Load(mc, parsed.value());
    if (!model.ok()) {
      std::snprintf(err, err_len, "%s", model.status().message().c_str());
      return nullptr;
    }
    inst->models.push_back(std::move(model.value()));
  }
  for (const auto& m : inst->models) {
    inst->kernels.push_back(paam_kernel_v2{m->name().c_str(), m->summary().c_str(), m->published().c_str(), m.get(),
                                           Plan, m->cuda() ? nullptr : RunCpu, m->cuda() ? RunCuda : nullptr});
  }
  inst->plugin = paam_plugin_v2{PAAM_KERNEL_ABI_V2, static_cast<uint32_t>(inst->kernels.size()),
                                inst->kernels.data(), Fini};
  std::lock_guard<std::mutex> lock(g_mu);
  g_instances.push_back(std::move(inst));
  ++g_live;
  return &g_instances.back()->plugin;
}
