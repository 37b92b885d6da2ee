#include "tensors/signature.h"

#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

namespace paam::tensors {

namespace {

using json = nlohmann::json;

Result<std::vector<int64_t>> Dims(const json& j, const std::string& where, const char* key) {
  if (!j.is_array()) return Status(Errc::kInvalidArgument, where + ": '" + key + "' must be a list of integers");
  if (j.size() > kMaxDims) {
    return Status(Errc::kInvalidArgument, where + ": '" + key + "' has " + std::to_string(j.size()) +
                                              " dimensions (at most " + std::to_string(kMaxDims) + ")");
  }
  std::vector<int64_t> out;
  for (const auto& d : j) {
    if (!d.is_number_integer() || d.get<int64_t>() < -1) {
      return Status(Errc::kInvalidArgument, where + ": '" + key + "' must hold integers >= -1 (-1: varies), got " +
                                                d.dump());
    }
    out.push_back(d.get<int64_t>());
  }
  return out;
}

Result<std::vector<TensorSpec>> Specs(const json& j, const std::string& where, const char* key) {
  if (!j.contains(key)) return Status(Errc::kInvalidArgument, where + ": '" + key + "' is missing");
  const json& list = j.at(key);
  if (!list.is_array()) return Status(Errc::kInvalidArgument, where + ": '" + key + "' must be a list");
  if (list.size() > kMaxTensors) {
    return Status(Errc::kInvalidArgument, where + ": more than " + std::to_string(kMaxTensors) + " " + key);
  }
  std::vector<TensorSpec> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const json& t = list[i];
    std::string at = where + ": " + key + "[" + std::to_string(i) + "]";
    if (!t.is_object()) return Status(Errc::kInvalidArgument, at + " must be an object");
    TensorSpec s;
    if (!t.contains("name") || !t["name"].is_string() || !ValidName(t["name"].get<std::string>())) {
      return Status(Errc::kInvalidArgument, at + ": 'name' must be 1..39 characters of [A-Za-z0-9_.]");
    }
    s.name = t["name"].get<std::string>();
    std::string singular(key);  // "input", "output"
    singular.pop_back();
    at = where + ": " + singular + " '" + s.name + "'";
    for (const auto& other : out) {
      if (other.name == s.name) return Status(Errc::kInvalidArgument, at + " is listed twice");
    }
    const auto dtype = t.contains("dtype") && t["dtype"].is_string() ? ParseDType(t["dtype"].get<std::string>())
                                                                      : std::nullopt;
    if (!dtype) {
      return Status(Errc::kInvalidArgument, at + ": 'dtype' must be one of float32, float64, float16, bfloat16, "
                                                 "int8, uint8, int16, int32, int64, bool");
    }
    s.dtype = *dtype;
    if (!t.contains("shape")) return Status(Errc::kInvalidArgument, at + ": 'shape' is missing");
    auto shape = Dims(t["shape"], at, "shape");
    if (!shape.ok()) return shape.status();
    s.shape = std::move(shape.value());
    if (t.contains("max_shape") && !t["max_shape"].is_null()) {
      auto max = Dims(t["max_shape"], at, "max_shape");
      if (!max.ok()) return max.status();
      if (max->size() != s.shape.size()) {
        return Status(Errc::kInvalidArgument, at + ": 'max_shape' must have the rank of 'shape' (" +
                                                  std::to_string(s.shape.size()) + ")");
      }
      for (size_t d = 0; d < s.shape.size(); ++d) {
        const int64_t m = (*max)[d];
        if ((s.shape[d] >= 0 && m != s.shape[d]) || m < 0) {
          return Status(Errc::kInvalidArgument, at + ": 'max_shape' must equal 'shape' where that is fixed and be "
                                                    ">= 0 where it varies (dimension " + std::to_string(d) + ")");
        }
      }
      s.max_shape = std::move(max.value());
    }
    out.push_back(std::move(s));
  }
  return out;
}

json SpecsJson(const std::vector<TensorSpec>& specs) {
  json list = json::array();
  for (const auto& s : specs) {
    json t = {{"name", s.name}, {"dtype", std::string(DTypeName(s.dtype))}, {"shape", s.shape}};
    if (!s.max_shape.empty()) t["max_shape"] = s.max_shape;
    list.push_back(std::move(t));
  }
  return list;
}

Result<Signature> FromJson(const json& j, const std::string& where) {
  if (!j.is_object()) return Status(Errc::kInvalidArgument, where + ": a signature must be a JSON object");
  Signature s;
  auto in = Specs(j, where, "inputs");
  if (!in.ok()) return in.status();
  auto out = Specs(j, where, "outputs");
  if (!out.ok()) return out.status();
  s.inputs = std::move(in.value());
  s.outputs = std::move(out.value());
  return s;
}

// The spec's largest value of dimension d, or -1 when unbounded.
int64_t MaxDim(const TensorSpec& s, size_t d) {
  if (s.shape[d] >= 0) return s.shape[d];
  return s.max_shape.empty() ? -1 : s.max_shape[d];
}

}  // namespace

Result<Signature> ParseSignature(const std::string& json_text, const std::string& where) {
  json j = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status(Errc::kInvalidArgument, where + ": not valid JSON");
  return FromJson(j, where);
}

std::string SignatureJson(const Signature& s) {
  return json{{"inputs", SpecsJson(s.inputs)}, {"outputs", SpecsJson(s.outputs)}}.dump();
}

Result<std::vector<ModelInfo>> ParseModels(const std::string& json_text) {
  json j = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("models") || !j["models"].is_array()) {
    return Status(Errc::kProtocolError, "models reply is not {\"models\": [...]}");
  }
  std::vector<ModelInfo> out;
  for (const json& m : j["models"]) {
    if (!m.is_object() || !m.contains("name") || !m["name"].is_string()) {
      return Status(Errc::kProtocolError, "models reply: a model without a name");
    }
    ModelInfo info;
    info.name = m["name"].get<std::string>();
    auto text = [&](const char* key) { return m.contains(key) && m[key].is_string() ? m[key].get<std::string>() : ""; };
    auto bytes = [&](const char* key) {
      return m.contains(key) && m[key].is_number_unsigned() ? m[key].get<uint64_t>() : uint64_t{0};
    };
    info.format = text("format");
    info.path = text("path");
    info.device = text("device");
    auto sig = FromJson(m, "model '" + info.name + "'");
    if (!sig.ok()) return Status(Errc::kProtocolError, sig.status().message());
    info.inputs = std::move(sig->inputs);
    info.outputs = std::move(sig->outputs);
    info.max_input_bytes = bytes("max_input_bytes");
    info.max_output_bytes = bytes("max_output_bytes");
    out.push_back(std::move(info));
  }
  return out;
}

uint64_t MaxAreaBytes(const std::vector<TensorSpec>& specs) {
  uint64_t at = TableBytes(static_cast<uint32_t>(specs.size()));
  for (const auto& s : specs) {
    std::vector<int64_t> dims(s.shape.size());
    for (size_t d = 0; d < s.shape.size(); ++d) {
      dims[d] = MaxDim(s, d);
      if (dims[d] < 0) return 0;
    }
    uint64_t bytes = 0;
    if (!ShapeBytes(s.dtype, dims, &bytes)) return 0;
    at = AlignUp(at);
    if (bytes > UINT64_MAX - at) return 0;
    at += bytes;
  }
  return at;
}

const char* DescribeSpec(const TensorSpec& spec, char* buf, size_t len) {
  Describe(spec.dtype, spec.shape, buf, len);
  if (spec.max_shape.empty()) return buf;
  const size_t at = strnlen(buf, len);
  char max[96];
  Describe(spec.dtype, spec.max_shape, max, sizeof max);
  const char* dims = std::strchr(max, '[');  // "[8,3,224,224]"
  if (at < len) std::snprintf(buf + at, len - at, " (max %s)", dims != nullptr ? dims : max);
  return buf;
}

namespace {

// True when `shape` fits the spec: its rank, fixed dimensions equal, varying ones within max.
bool Fits(const TensorSpec& spec, std::span<const int64_t> shape) {
  if (shape.size() != spec.shape.size()) return false;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (spec.shape[d] >= 0 && shape[d] != spec.shape[d]) return false;
    if (spec.shape[d] < 0 && !spec.max_shape.empty() && shape[d] > spec.max_shape[d]) return false;
  }
  return true;
}

}  // namespace

bool MatchInputs(const char* model, const std::vector<TensorSpec>& inputs, const Table& table, char* err,
                 size_t err_len) {
  char want[128], got[96];
  for (const TensorSpec& spec : inputs) {
    const TensorInfo* t = table.Find(spec.name.c_str());
    if (t == nullptr) {
      std::snprintf(err, err_len, "model '%s' needs input '%s' (%s), which the request lacks", model,
                    spec.name.c_str(), DescribeSpec(spec, want, sizeof want));
      return false;
    }
    if (t->dtype != spec.dtype || !Fits(spec, t->dims())) {
      std::snprintf(err, err_len, "model '%s': input '%s' must be %s, got %s", model, spec.name.c_str(),
                    DescribeSpec(spec, want, sizeof want), Describe(t->dtype, t->dims(), got, sizeof got));
      return false;
    }
  }
  for (uint32_t i = 0; i < table.count; ++i) {
    bool known = false;
    for (const TensorSpec& spec : inputs) known |= std::strncmp(spec.name.c_str(), table.tensors[i].name, kNameBytes) == 0;
    if (!known) {
      int at = std::snprintf(err, err_len, "model '%s' has no input '%s' (its inputs:", model, table.tensors[i].name);
      for (size_t k = 0; k < inputs.size() && at >= 0 && static_cast<size_t>(at) < err_len; ++k) {
        at += std::snprintf(err + at, err_len - static_cast<size_t>(at), " %s", inputs[k].name.c_str());
      }
      if (at >= 0 && static_cast<size_t>(at) < err_len) std::snprintf(err + at, err_len - static_cast<size_t>(at), ")");
      return false;
    }
  }
  return true;
}

bool MatchOutput(const char* model, const TensorSpec& spec, DType dtype, std::span<const int64_t> shape, char* err,
                 size_t err_len) {
  if (dtype == spec.dtype && Fits(spec, shape)) return true;
  char want[128], got[96];
  std::snprintf(err, err_len, "model '%s': output '%s' is %s, its signature says %s", model, spec.name.c_str(),
                Describe(dtype, shape, got, sizeof got), DescribeSpec(spec, want, sizeof want));
  return false;
}

}  // namespace paam::tensors
