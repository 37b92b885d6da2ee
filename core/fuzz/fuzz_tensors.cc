// fuzz/fuzz_tensors.cc — the tensor table a client writes at the start of a model request's
// input area (tensors/tensor_table.h), which the model plugin's plan() and run read, and the
// check of a decoded table against a model's signature (tensors/signature.h).
// Input: the input area as the request says it was written (at most 64 KiB here).
// Properties: no crash, leak or undefined behaviour; a table Decode accepts lies inside the
// area (each tensor after the table, aligned, of its shape's size, within the bytes used); it
// plans and writes again to the same layout and decodes to the same entries; the signature
// check either passes or says why without touching anything past its message buffer.
#include <cstring>
#include <vector>

#include "fuzz_check.h"
#include "tensors/signature.h"
#include "tensors/tensor_table.h"

using namespace paam;
using namespace paam::tensors;

namespace {

const Signature& Model() {
  static const Signature* sig = [] {
    auto s = ParseSignature(
        R"({"inputs": [{"name": "images", "dtype": "float32", "shape": [-1, 3, 8, 8], "max_shape": [4, 3, 8, 8]},
                       {"name": "ids", "dtype": "int64", "shape": [-1]}],
            "outputs": [{"name": "logits", "dtype": "float32", "shape": [-1, 10]}]})",
        "fuzz");
    PAAM_FUZZ_CHECK(s.ok());
    return new Signature(std::move(s.value()));
  }();
  return *sig;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (64u << 10)) return -1;
  // The area as the plugin sees it: exactly `size` bytes (heap, so ASan sees any read past it).
  std::vector<uint8_t> area(data, data + size);
  static Table table;  // 8 KiB: off the fuzzer's stack
  char err[160];
  std::memset(err, 0x5a, sizeof err);
  if (!Decode(area.data(), area.size(), &table, err, sizeof err)) {
    PAAM_FUZZ_CHECK(std::memchr(err, '\0', sizeof err) != nullptr);  // a message, terminated
    return 0;
  }
  PAAM_FUZZ_CHECK(table.count <= kMaxTensors);
  PAAM_FUZZ_CHECK(table.used_bytes <= size && table.used_bytes >= TableBytes(table.count));
  Entry entries[kMaxTensors];
  uint64_t offsets[kMaxTensors];
  for (uint32_t i = 0; i < table.count; ++i) {
    const TensorInfo& t = table.tensors[i];
    uint64_t bytes = 0;
    PAAM_FUZZ_CHECK(ShapeBytes(t.dtype, t.dims(), &bytes) && bytes == t.bytes);
    PAAM_FUZZ_CHECK(t.offset % kAlign == 0 && t.offset >= TableBytes(table.count));
    PAAM_FUZZ_CHECK(t.offset <= table.used_bytes && t.bytes <= table.used_bytes - t.offset);
    PAAM_FUZZ_CHECK(ValidName(t.name));
    // every byte of the tensor is readable (ASan would say otherwise)
    volatile uint8_t sink = 0;
    if (t.bytes != 0) sink = sink + area[t.offset] + area[t.offset + t.bytes - 1];
    entries[i] = {t.name, t.dtype, t.dims()};
  }
  std::memset(err, 0x5a, sizeof err);
  if (!MatchInputs("fuzz", Model().inputs, table, err, sizeof err)) {
    PAAM_FUZZ_CHECK(std::memchr(err, '\0', sizeof err) != nullptr);
  }

  // Written again by the client's encoder, the decoded entries decode to themselves.
  const std::span<const Entry> list(entries, table.count);
  const uint64_t used = Plan(list, offsets, err, sizeof err);
  PAAM_FUZZ_CHECK(used != 0);
  if (used > (1u << 20)) return 0;  // a huge but valid shape: not worth the memory
  std::vector<uint8_t> again(used, 0);
  Write(again.data(), list, offsets, used);
  static Table back;
  PAAM_FUZZ_CHECK(Decode(again.data(), again.size(), &back, err, sizeof err));
  PAAM_FUZZ_CHECK(back.count == table.count);
  for (uint32_t i = 0; i < table.count; ++i) {
    PAAM_FUZZ_CHECK(std::strcmp(back.tensors[i].name, table.tensors[i].name) == 0);
    PAAM_FUZZ_CHECK(back.tensors[i].dtype == table.tensors[i].dtype && back.tensors[i].bytes == table.tensors[i].bytes);
    PAAM_FUZZ_CHECK(back.tensors[i].offset == offsets[i]);
  }
  return 0;
}
