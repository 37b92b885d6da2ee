// paam/tensor.h — named tensors of a model request, and the signatures models publish.
//
// A model served by paamd (docs/models.md) takes and returns named tensors. The client writes
// them into its region's input area behind a small table (the tensor table: name, dtype, shape,
// offset and length of each), and the model writes its outputs into the output area the same
// way. Client::Infer does both (paam/client.h); these are the types it speaks.
//
// Plain values; no thread-safety concerns beyond those of std::string/std::vector.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "paam/status.h"

namespace paam {

// Element types. Values travel in the tensor table; do not renumber.
enum class DType : uint32_t {
  kFloat32 = 1,
  kFloat64 = 2,
  kFloat16 = 3,
  kBFloat16 = 4,
  kInt8 = 5,
  kUInt8 = 6,
  kInt16 = 7,
  kInt32 = 8,
  kInt64 = 9,
  kBool = 10,
};

// "float32", "uint8", ... (numpy's names; "bfloat16" too); "?" for a value outside the enum.
std::string_view DTypeName(DType dtype) noexcept;
std::optional<DType> ParseDType(std::string_view name) noexcept;
// Bytes per element; 0 for a value outside the enum.
uint32_t DTypeSize(DType dtype) noexcept;

// An input tensor for Client::Infer: host memory the caller owns, C-contiguous, of
// product(shape) * DTypeSize(dtype) bytes.
struct TensorView {
  std::string_view name;
  DType dtype = DType::kFloat32;
  std::span<const int64_t> shape;
  const void* data = nullptr;
};

// An output tensor of Client::Infer: its name, type and shape, and its bytes in the region's
// output area (zero copy), valid until the next request of that model on the same client.
struct Tensor {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  uint64_t bytes = 0;

  uint64_t elements() const;
  // The elements as T (the caller picks the T that matches dtype).
  template <typename T>
  std::span<const T> as() const {
    return {static_cast<const T*>(data), static_cast<size_t>(bytes / sizeof(T))};
  }
};

// One named tensor of a model's signature. shape: -1 marks a dimension that may vary from
// request to request; max_shape (empty: shape) bounds such dimensions, which sizes the region.
struct TensorSpec {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  std::vector<int64_t> max_shape;
};

// A model as paamd serves it (the models query, `paam models`).
struct ModelInfo {
  std::string name;    // the kernel name requests use
  std::string format;  // "torchscript" or "aoti"
  std::string path;    // the file paamd loaded
  std::string device;  // "cpu" or "cuda"
  std::vector<TensorSpec> inputs, outputs;
  // The region sizes every request of the model fits (tensor tables included); 0 when a
  // dimension is unbounded (declare the sizes yourself: KernelDecl).
  uint64_t max_input_bytes = 0;
  uint64_t max_output_bytes = 0;
};

// Asks the paamd at `socket_path` ("": DefaultSocketPath()) which models it serves. Like a
// client, it checks the server's uid first. Errors: server_not_running, permission_denied,
// protocol_error (a paamd too old to answer).
Result<std::vector<ModelInfo>> QueryModels(const std::string& socket_path = "", int timeout_ms = 5000,
                                           const std::vector<uint32_t>& trusted_server_uids = {});
// The same, as the JSON text paamd sends ({"models": [...]}: docs/models.md).
Result<std::string> QueryModelsJson(const std::string& socket_path = "", int timeout_ms = 5000,
                                    const std::vector<uint32_t>& trusted_server_uids = {});

}  // namespace paam
