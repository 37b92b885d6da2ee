// models/torch_model.h — one PyTorch model served as a kernel (docs/models.md).
//
// Load() reads the model (TorchScript .pt through torch::jit::load; an AOTInductor .pt2
// package through torch::inductor::AOTIModelPackageLoader where this libtorch has it, 2.6 and
// later) and its signature (the sidecar JSON: TorchScript carries no shapes), then runs it once
// on zeros of the signature's inputs and checks what comes out against the signature's
// outputs, so that a sidecar that does not describe its model stops paamd at start.
//
// Requests: Plan() checks the request's tensor table (in the shared input area: it copies it
// out first) against the inputs and says how many output bytes the request may write. Run*()
// copy the table out again (the client may have changed it since), make tensors of the input
// bytes without copying them, run the model without autograd (InferenceMode), check its
// outputs against the signature and write them behind a tensor table into the output area. On
// CUDA everything runs on the stream of the bucket that serves the request (the backend's:
// getStreamFromExternal + a stream guard), so the model's kernels get the bucket's priority.
//
// Thread safety: Plan and Run* may be called concurrently from several threads (paamd's
// dispatcher and workers); the loaded model is only read. Runs allocate (torch tensors).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "paam/kernel_abi.h"
#include "models/plugin_config.h"
#include "paam/status.h"
#include "tensors/signature.h"

namespace paam::models {

class TorchModel {
 public:
  static Result<std::unique_ptr<TorchModel>> Load(const ModelConfig& model, const PluginConfig& config);
  ~TorchModel();

  const std::string& name() const { return name_; }
  // What paamd publishes: {"name", "format", "path", "device", "inputs", "outputs",
  // "max_input_bytes", "max_output_bytes"}.
  const std::string& published() const { return published_; }
  // One line for humans: "(images: float32[-1,3,224,224]) -> (logits: float32[-1,1000])".
  const std::string& summary() const { return summary_; }
  bool cuda() const { return cuda_; }

  int Plan(const paam_plan_args* args, uint64_t* output_bytes, char* err, size_t err_len) const;
  int RunCpu(const paam_kernel_args* args, char* err, size_t err_len) const;
  int RunCuda(const paam_kernel_args* args, char* err, size_t err_len) const;

  struct Impl;  // the torch side (torch_model.cc)

 private:
  TorchModel() = default;

  std::string name_, path_, format_, published_, summary_;
  tensors::Signature sig_;
  uint64_t max_output_bytes_ = 0;  // 0: unbounded (the region's capacity is the limit)
  bool cuda_ = false;
  int cpu_threads_ = 1;
  std::unique_ptr<Impl> impl_;
};

}  // namespace paam::models
