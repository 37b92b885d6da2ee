// tensors/signature.h — a model's signature (its named input and output tensors) as JSON, the
// region sizes it needs, and the check of a request's tensor table against it.
//
// The JSON form (a model's sidecar file, and what paamd publishes; docs/models.md):
//   {"inputs":  [{"name": "images", "dtype": "float32", "shape": [-1, 3, 224, 224],
//                 "max_shape": [8, 3, 224, 224]}],
//    "outputs": [{"name": "logits", "dtype": "float32", "shape": [-1, 1000]}]}
// -1 marks a dimension that may vary; max_shape (optional, same rank) bounds it. Parsing is off
// the hot path; Match* allocate nothing (the model plugin's plan() calls them).
#pragma once

#include <string>
#include <vector>

#include "paam/status.h"
#include "paam/tensor.h"
#include "tensors/tensor_table.h"

namespace paam::tensors {

struct Signature {
  std::vector<TensorSpec> inputs, outputs;
};

// Parses and checks a signature (names valid and unique within inputs and within outputs,
// known dtypes, ranks up to kMaxDims, dimensions >= -1, max_shape of the same rank, equal to
// shape where that is fixed and >= 0 where it varies). `where` starts every message.
Result<Signature> ParseSignature(const std::string& json_text, const std::string& where);
// The signature as JSON text ({"inputs": [...], "outputs": [...]}; max_shape only where given).
std::string SignatureJson(const Signature& s);
// The models paamd publishes ({"models": [{"name", "format", "path", "device", "inputs",
// "outputs", "max_input_bytes", "max_output_bytes"}, ...]}).
Result<std::vector<ModelInfo>> ParseModels(const std::string& json_text);

// Bytes of an area holding `specs` at their largest (table included), or 0 when a dimension
// is unbounded (-1 without max_shape).
uint64_t MaxAreaBytes(const std::vector<TensorSpec>& specs);

// Checks the table of a request against the model's inputs: every input present once, no
// other tensor, each dtype equal and each shape of the signature's rank, equal where fixed and
// within max_shape where it varies. False with a message that names the model, the tensor, and
// what was expected, e.g. "model 'detector': input 'images' must be float32[-1,3,224,224] (max
// [8,3,224,224]), got float64[1,3,224,224]".
bool MatchInputs(const char* model, const std::vector<TensorSpec>& inputs, const Table& table, char* err,
                 size_t err_len);
// Checks one output the model produced against its spec, the same way ("model 'm': output
// 'logits' is float32[4,10], its signature says float32[-1,10] (max [2,10])").
bool MatchOutput(const char* model, const TensorSpec& spec, DType dtype, std::span<const int64_t> shape, char* err,
                 size_t err_len);
// "float32[-1,3,224,224] (max [8,3,224,224])" of a spec into buf.
const char* DescribeSpec(const TensorSpec& spec, char* buf, size_t len);

}  // namespace paam::tensors
