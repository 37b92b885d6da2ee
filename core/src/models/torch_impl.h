// models/torch_impl.h — the torch side of TorchModel, shared by torch_model.cc (loading, the
// CPU path) and torch_model_cuda.cc (the CUDA path, built only against a CUDA libtorch).
#pragma once

#include <torch/script.h>
#include <torch/version.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/torch_model.h"
#include "tensors/tensor_table.h"

// AOTInductor packages (.pt2): torch::inductor::AOTIModelPackageLoader, in libtorch 2.6 and
// later; from 2.8 its constructor takes the device and the number of concurrent runners, and
// run() the stream.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 6)
#define PAAM_TORCH_AOTI 1
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MINOR >= 8)
#define PAAM_TORCH_AOTI_DEVICE 1
#endif
#endif

namespace paam::models {

// The model loaded on one device: the CPU, or one GPU (a copy per GPU paamd serves).
struct DeviceCopy {
  torch::Device device{torch::kCPU};
  int ordinal = -1;                              // GPU ordinal; -1 on the CPU
  mutable std::optional<torch::jit::Module> script;  // TorchScript; forward() is not const
#ifdef PAAM_TORCH_AOTI
  std::unique_ptr<torch::inductor::AOTIModelPackageLoader> package;
#endif
};

struct TorchModel::Impl {
  std::vector<DeviceCopy> copies;
  const DeviceCopy* For(int ordinal) const;
};

// The paam dtype of a torch scalar type; false for one a tensor table cannot carry.
bool FromTorch(c10::ScalarType t, DType* out);
c10::ScalarType ToTorch(DType d);

// Runs the model on `copy` (`stream`: a cudaStream_t for AOTInductor on CUDA, or nullptr) and
// returns its outputs in the order of the signature. Throws std::runtime_error (or torch's
// c10::Error) with a message that names the model on anything unexpected.
std::vector<torch::Tensor> Forward(const TorchModel& m, const tensors::Signature& sig, const std::string& format,
                                   const DeviceCopy& copy, std::vector<torch::Tensor> inputs, void* stream);

// Input tensors over the bytes of a checked table: `base` is the input area (host or
// device memory as `options` says), in the signature's order. No copies.
std::vector<torch::Tensor> InputTensors(const tensors::Signature& sig, const tensors::Table& table, uint8_t* base,
                                        const torch::TensorOptions& options);

// Checks the outputs against the signature and writes them behind a tensor table into the
// output area (`capacity` bytes; on the device for `device`, through the current stream).
int WriteOutputs(const std::string& model, const tensors::Signature& sig, const std::vector<torch::Tensor>& outs,
                 uint8_t* area, uint64_t capacity, const torch::Device& device, char* err, size_t err_len);

// Makes the calling thread run torch's CPU work on `threads` threads. Per thread, since OpenMP
// (which oneDNN's kernels use directly) keeps the count per thread: a worker that never set it
// would use every core, which on a small machine costs the other requests dearly (measured: a
// 0.1 ms model took 16 ms on two busy cores).
void UseThreads(int threads);

// The message of an exception, without torch's backtrace, into err: "model 'x': <what>".
void Explain(const std::string& model, const std::exception& e, char* err, size_t err_len);

}  // namespace paam::models
