// models/torch_model_cuda.cc — TorchModel::RunCuda, built only against a libtorch with CUDA
// (PAAM_TORCH_CUDA). The request runs on the stream of the bucket that serves it: paamd's CUDA
// backend has copied the input area to the device on that stream (args->input) and hands the
// stream in args->stream; the model's kernels, the copies of its outputs and of the output
// table are all enqueued on it, and the backend waits for the stream before it answers.
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <cstdio>

#include "models/torch_impl.h"

namespace paam::models {

int TorchModel::RunCuda(const paam_kernel_args* args, char* err, size_t err_len) const {
  const DeviceCopy* copy = impl_->For(args->device_index);
  if (copy == nullptr || copy->ordinal != args->device_index) {
    std::snprintf(err, err_len, "model '%s' is not loaded on GPU %d", name_.c_str(), args->device_index);
    return PAAM_KERNEL_EFAILED;
  }
  try {
    UseThreads(cpu_threads_);  // for whatever the model computes on the host
    const c10::cuda::CUDAStream stream = c10::cuda::getStreamFromExternal(
        static_cast<cudaStream_t>(args->stream), static_cast<c10::DeviceIndex>(args->device_index));
    const c10::cuda::CUDAStreamGuard guard(stream);  // current device and stream, for torch's ops
    // The table, a private copy: from the host area where there is one, else (the client's own
    // device buffers, CUDA IPC) from the device, after what the stream did before.
    tensors::Table table;
    char why[128];
    const void* host = args->host_input;
    torch::Tensor fetched;
    if (host == nullptr) {
      const uint64_t n = std::min<uint64_t>(args->input_bytes, tensors::TableBytes(tensors::kMaxTensors));
      fetched = torch::from_blob(const_cast<void*>(args->input), {static_cast<int64_t>(n)},
                                 torch::TensorOptions().dtype(torch::kUInt8).device(copy->device))
                    .to(torch::kCPU);  // synchronous on the stream
      host = fetched.data_ptr();
    }
    if (!tensors::Decode(host, args->input_bytes, &table, why, sizeof why)) {
      std::snprintf(err, err_len, "model '%s': %s", name_.c_str(), why);
      return PAAM_KERNEL_EINVAL;
    }
    if (!tensors::MatchInputs(name_.c_str(), sig_.inputs, table, err, err_len)) return PAAM_KERNEL_EINVAL;
    auto* base = static_cast<uint8_t*>(const_cast<void*>(args->input));
    auto outs = Forward(*this, sig_, format_, *copy, InputTensors(sig_, table, base, torch::TensorOptions().device(copy->device)),
                        args->stream);
    return WriteOutputs(name_, sig_, outs, static_cast<uint8_t*>(args->output), args->output_bytes, copy->device, err,
                        err_len);
  } catch (const std::exception& e) {
    Explain(name_, e, err, err_len);
    return PAAM_KERNEL_EFAILED;
  }
}

}  // namespace paam::models
