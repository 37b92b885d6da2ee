#include "tensors/tensor_table.h"

#include <cstdio>
#include <cstring>

namespace paam {

std::string_view DTypeName(DType dtype) noexcept {
  switch (dtype) {
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kInt8: return "int8";
    case DType::kUInt8: return "uint8";
    case DType::kInt16: return "int16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kBool: return "bool";
  }
  return "?";
}

std::optional<DType> ParseDType(std::string_view name) noexcept {
  for (uint32_t v = 1; v <= 10; ++v) {
    if (DTypeName(static_cast<DType>(v)) == name) return static_cast<DType>(v);
  }
  return std::nullopt;
}

uint32_t DTypeSize(DType dtype) noexcept {
  switch (dtype) {
    case DType::kFloat64:
    case DType::kInt64: return 8;
    case DType::kFloat32:
    case DType::kInt32: return 4;
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kInt16: return 2;
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kBool: return 1;
  }
  return 0;
}

uint64_t Tensor::elements() const {
  const uint32_t size = DTypeSize(dtype);
  return size == 0 ? 0 : bytes / size;
}

namespace tensors {

const TensorInfo* Table::Find(const char* name) const {
  for (uint32_t i = 0; i < count; ++i) {
    if (std::strncmp(tensors[i].name, name, kNameBytes) == 0) return &tensors[i];
  }
  return nullptr;
}

bool ValidName(std::string_view name) {
  if (name.empty() || name.size() >= kNameBytes) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

bool ShapeBytes(DType dtype, std::span<const int64_t> shape, uint64_t* bytes) {
  const uint32_t size = DTypeSize(dtype);
  if (size == 0 || shape.size() > kMaxDims) return false;
  uint64_t n = size;
  for (int64_t d : shape) {
    if (d < 0) return false;
    const auto u = static_cast<uint64_t>(d);
    if (u != 0 && n > UINT64_MAX / u) return false;
    n *= u;
  }
  *bytes = n;
  return true;
}

const char* Describe(DType dtype, std::span<const int64_t> shape, char* buf, size_t len) {
  if (len == 0) return buf;
  const std::string_view name = DTypeName(dtype);
  int at = std::snprintf(buf, len, "%.*s[", static_cast<int>(name.size()), name.data());
  for (size_t i = 0; i < shape.size() && at >= 0 && static_cast<size_t>(at) < len; ++i) {
    at += std::snprintf(buf + at, len - static_cast<size_t>(at), "%s%lld", i == 0 ? "" : ",",
                        static_cast<long long>(shape[i]));
  }
  if (at >= 0 && static_cast<size_t>(at) < len) std::snprintf(buf + at, len - static_cast<size_t>(at), "]");
  return buf;
}

bool Decode(const void* area, uint64_t area_bytes, Table* out, char* err, size_t err_len) {
  out->count = 0;
  out->used_bytes = 0;
  if (area == nullptr || area_bytes < kHeaderBytes) {
    std::snprintf(err, err_len, "input of %llu bytes has no tensor table (it needs at least %llu)",
                  static_cast<unsigned long long>(area_bytes), static_cast<unsigned long long>(kHeaderBytes));
    return false;
  }
  WireHeader h;
  std::memcpy(&h, area, sizeof(h));  // copy first: the client may be writing the area
  if (h.magic != kTableMagic) {
    std::snprintf(err, err_len, "no tensor table (magic 0x%08x, expected 0x%08x \"PTT1\")", h.magic, kTableMagic);
    return false;
  }
  if (h.version != kTableVersion) {
    std::snprintf(err, err_len, "tensor table version %u is not understood (this side reads %u)", h.version,
                  kTableVersion);
    return false;
  }
  if (h.header_bytes != kHeaderBytes || h.entry_bytes != kEntryBytes) {
    std::snprintf(err, err_len, "tensor table has header/entry sizes %u/%u, expected %llu/%llu", h.header_bytes,
                  h.entry_bytes, static_cast<unsigned long long>(kHeaderBytes),
                  static_cast<unsigned long long>(kEntryBytes));
    return false;
  }
  if (h.count > kMaxTensors) {
    std::snprintf(err, err_len, "tensor table lists %u tensors (at most %u)", h.count, kMaxTensors);
    return false;
  }
  const uint64_t table_end = TableBytes(h.count);
  if (table_end > area_bytes) {
    std::snprintf(err, err_len, "tensor table of %u tensors needs %llu bytes, the input has %llu", h.count,
                  static_cast<unsigned long long>(table_end), static_cast<unsigned long long>(area_bytes));
    return false;
  }
  if (h.used_bytes > area_bytes || h.used_bytes < table_end) {
    std::snprintf(err, err_len, "tensor table says %llu bytes are used, outside %llu..%llu",
                  static_cast<unsigned long long>(h.used_bytes), static_cast<unsigned long long>(table_end),
                  static_cast<unsigned long long>(area_bytes));
    return false;
  }
  const auto* base = static_cast<const uint8_t*>(area);
  for (uint32_t i = 0; i < h.count; ++i) {
    WireEntry e;
    std::memcpy(&e, base + kHeaderBytes + uint64_t{i} * kEntryBytes, sizeof(e));
    TensorInfo& t = out->tensors[i];
    const size_t name_len = strnlen(e.name, kNameBytes);
    if (name_len == kNameBytes || !ValidName(std::string_view(e.name, name_len))) {
      std::snprintf(err, err_len, "tensor %u: invalid name (1..%zu characters of [A-Za-z0-9_.], NUL-terminated)",
                    i, kNameBytes - 1);
      return false;
    }
    std::memset(t.name, 0, sizeof(t.name));
    std::memcpy(t.name, e.name, name_len);
    if (out->Find(t.name) != nullptr) {
      std::snprintf(err, err_len, "tensor '%s' is listed twice", t.name);
      return false;
    }
    t.dtype = static_cast<DType>(e.dtype);
    if (DTypeSize(t.dtype) == 0) {
      std::snprintf(err, err_len, "tensor '%s': unknown dtype code %u", t.name, e.dtype);
      return false;
    }
    if (e.ndim > kMaxDims) {
      std::snprintf(err, err_len, "tensor '%s' has %u dimensions (at most %u)", t.name, e.ndim, kMaxDims);
      return false;
    }
    t.ndim = e.ndim;
    std::memset(t.shape, 0, sizeof(t.shape));
    std::memcpy(t.shape, e.shape, sizeof(int64_t) * e.ndim);
    uint64_t bytes = 0;
    if (!ShapeBytes(t.dtype, t.dims(), &bytes)) {
      std::snprintf(err, err_len, "tensor '%s': its shape has a negative dimension or its size overflows", t.name);
      return false;
    }
    if (bytes != e.bytes) {
      char d[96];
      std::snprintf(err, err_len, "tensor '%s': %s is %llu bytes, the table says %llu", t.name,
                    Describe(t.dtype, t.dims(), d, sizeof d), static_cast<unsigned long long>(bytes),
                    static_cast<unsigned long long>(e.bytes));
      return false;
    }
    // offset + bytes <= used <= area_bytes, written so that nothing overflows
    if (e.offset % kAlign != 0 || e.offset < table_end || e.offset > h.used_bytes ||
        e.bytes > h.used_bytes - e.offset) {
      std::snprintf(err, err_len,
                    "tensor '%s': bytes %llu..+%llu lie outside the data area %llu..%llu or are not %llu-aligned",
                    t.name, static_cast<unsigned long long>(e.offset), static_cast<unsigned long long>(e.bytes),
                    static_cast<unsigned long long>(table_end), static_cast<unsigned long long>(h.used_bytes),
                    static_cast<unsigned long long>(kAlign));
      return false;
    }
    t.offset = e.offset;
    t.bytes = e.bytes;
    out->count = i + 1;
  }
  out->count = h.count;
  out->used_bytes = h.used_bytes;
  return true;
}

uint64_t Plan(std::span<const Entry> entries, uint64_t* offsets, char* err, size_t err_len) {
  if (entries.size() > kMaxTensors) {
    std::snprintf(err, err_len, "%zu tensors (a table holds at most %u)", entries.size(), kMaxTensors);
    return 0;
  }
  uint64_t at = TableBytes(static_cast<uint32_t>(entries.size()));
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    if (!ValidName(e.name)) {
      std::snprintf(err, err_len, "tensor name '%.*s' is invalid (1..%zu characters of [A-Za-z0-9_.])",
                    static_cast<int>(e.name.size() > 64 ? 64 : e.name.size()), e.name.data(), kNameBytes - 1);
      return 0;
    }
    for (size_t j = 0; j < i; ++j) {
      if (entries[j].name == e.name) {
        std::snprintf(err, err_len, "tensor '%.*s' is given twice", static_cast<int>(e.name.size()), e.name.data());
        return 0;
      }
    }
    uint64_t bytes = 0;
    if (!ShapeBytes(e.dtype, e.shape, &bytes)) {
      std::snprintf(err, err_len, "tensor '%.*s': unknown dtype, more than %u dimensions, a negative one, or too large",
                    static_cast<int>(e.name.size()), e.name.data(), kMaxDims);
      return 0;
    }
    offsets[i] = AlignUp(at);
    if (offsets[i] < at || bytes > UINT64_MAX - offsets[i]) {
      std::snprintf(err, err_len, "tensors too large");
      return 0;
    }
    at = offsets[i] + bytes;
  }
  return at;
}

void Write(void* area, std::span<const Entry> entries, const uint64_t* offsets, uint64_t used_bytes) {
  WireHeader h{};
  h.magic = kTableMagic;
  h.version = kTableVersion;
  h.count = static_cast<uint16_t>(entries.size());
  h.header_bytes = kHeaderBytes;
  h.entry_bytes = kEntryBytes;
  h.used_bytes = used_bytes;
  auto* base = static_cast<uint8_t*>(area);
  std::memcpy(base, &h, sizeof(h));
  for (size_t i = 0; i < entries.size(); ++i) {
    WireEntry w{};
    std::memcpy(w.name, entries[i].name.data(), entries[i].name.size());  // Plan checked: < kNameBytes
    w.dtype = static_cast<uint32_t>(entries[i].dtype);
    w.ndim = static_cast<uint32_t>(entries[i].shape.size());
    for (size_t d = 0; d < entries[i].shape.size(); ++d) w.shape[d] = entries[i].shape[d];
    ShapeBytes(entries[i].dtype, entries[i].shape, &w.bytes);
    w.offset = offsets[i];
    std::memcpy(base + kHeaderBytes + i * kEntryBytes, &w, sizeof(w));
  }
}

}  // namespace tensors
}  // namespace paam
