// tensors/tensor_table.h — the tensor table at the start of a model request's input and output
// areas (docs/models.md, "The tensor table").
//
//   offset 0   header, 64 bytes: magic "PTT1", version (1), count, header and entry sizes, the
//              bytes the tensors use (end of the last one)
//   offset 64  count entries of 128 bytes: name (NUL-terminated, at most 39 characters of
//              [A-Za-z0-9_.]), dtype (paam::DType), ndim (0..8), shape[8], offset and length
//              of its bytes from the start of the area
//   then       the tensors' bytes, each at a multiple of 64 after the table
// Little-endian, as the machine (a table never leaves the host).
//
// The input table comes from a client: Decode trusts nothing in it. It copies the table out of
// the area first (another process may be writing it), then checks the copy: magic, version,
// count, sizes, names, dtypes, shapes, that each length is the shape's product times the
// element size without overflow, alignment, and that every tensor lies inside the area, after
// the table. Decode and the checks allocate nothing (the dispatcher's plan() calls them);
// messages go into the caller's buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "paam/tensor.h"

namespace paam::tensors {

inline constexpr uint32_t kTableMagic = 0x31545450;  // "PTT1" in memory
inline constexpr uint16_t kTableVersion = 1;
inline constexpr uint32_t kMaxTensors = 64;
inline constexpr uint32_t kMaxDims = 8;
inline constexpr size_t kNameBytes = 40;  // with the NUL
inline constexpr uint64_t kAlign = 64;
inline constexpr uint64_t kHeaderBytes = 64;
inline constexpr uint64_t kEntryBytes = 128;

struct WireHeader {
  uint32_t magic;
  uint16_t version;
  uint16_t count;
  uint32_t header_bytes;  // kHeaderBytes
  uint32_t entry_bytes;   // kEntryBytes
  uint64_t used_bytes;    // end of the last tensor's bytes, from the start of the area
  uint8_t reserved[40];   // zero
};
static_assert(sizeof(WireHeader) == kHeaderBytes);

struct WireEntry {
  char name[kNameBytes];
  uint32_t dtype;
  uint32_t ndim;
  int64_t shape[kMaxDims];  // unused dimensions 0
  uint64_t offset;
  uint64_t bytes;
};
static_assert(sizeof(WireEntry) == kEntryBytes);

// A checked entry (a private copy).
struct TensorInfo {
  char name[kNameBytes];
  DType dtype;
  uint32_t ndim;
  int64_t shape[kMaxDims];
  uint64_t offset;
  uint64_t bytes;

  std::span<const int64_t> dims() const { return {shape, ndim}; }
};

// A checked table (a private copy, about 7 KiB: fine on a thread's stack).
struct Table {
  uint32_t count = 0;
  uint64_t used_bytes = 0;
  TensorInfo tensors[kMaxTensors];

  // The tensor named `name`, or nullptr.
  const TensorInfo* Find(const char* name) const;
};

// Bytes of the header and `count` entries: where the first tensor may start.
constexpr uint64_t TableBytes(uint32_t count) { return kHeaderBytes + uint64_t{count} * kEntryBytes; }
constexpr uint64_t AlignUp(uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

// Copies the table at the start of `area` (`area_bytes` long: what the request says was
// written) and checks the copy into *out. False with a message in err when it is malformed.
bool Decode(const void* area, uint64_t area_bytes, Table* out, char* err, size_t err_len);

// Bytes of `shape` elements of `dtype` into *bytes; false when a dimension is negative, there
// are more than kMaxDims, the dtype is unknown or the product overflows.
bool ShapeBytes(DType dtype, std::span<const int64_t> shape, uint64_t* bytes);

// True for a valid tensor name: 1..39 characters of [A-Za-z0-9_.].
bool ValidName(std::string_view name);

// "float32[1,3,224,224]" into buf (truncated to fit); returns buf.
const char* Describe(DType dtype, std::span<const int64_t> shape, char* buf, size_t len);

// Writing a table. Begin with the tensors' names, dtypes and shapes: Plan computes each one's
// offset (in order, 64-aligned after the table) into `offsets` and returns the bytes the whole
// area needs, or 0 with a message when a tensor is invalid (name, dtype, shape) or there are
// more than kMaxTensors. Write then stores the header and entries at the start of `area`
// (the tensors' bytes are the caller's to copy to area + offsets[i]).
struct Entry {
  std::string_view name;
  DType dtype;
  std::span<const int64_t> shape;
};
uint64_t Plan(std::span<const Entry> entries, uint64_t* offsets, char* err, size_t err_len);
void Write(void* area, std::span<const Entry> entries, const uint64_t* offsets, uint64_t used_bytes);

}  // namespace paam::tensors
