#include "models/torch_model.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "models/torch_impl.h"

namespace paam::models {

namespace {

std::string ReadFile(const std::string& path, bool* ok) {
  std::ifstream in(path);
  *ok = static_cast<bool>(in);
  std::stringstream text;
  if (*ok) text << in.rdbuf();
  return text.str();
}

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string Summary(const tensors::Signature& sig) {
  auto list = [](const std::vector<TensorSpec>& specs) {
    std::string out;
    char buf[160];
    for (const auto& s : specs) {
      out += (out.empty() ? "" : ", ") + s.name + ": " + tensors::DescribeSpec(s, buf, sizeof buf);
    }
    return "(" + out + ")";
  };
  return list(sig.inputs) + " -> " + list(sig.outputs);
}

// The GPUs to load the model on: the configured ones, else every one torch sees.
Result<std::vector<int>> CudaDevices(const PluginConfig& config, const std::string& model) {
  if (!torch::cuda::is_available()) {
    return Status(Errc::kInvalidArgument, "model '" + model + "': paamd runs the cuda backend, but this libtorch "
                                              "sees no GPU or was built without CUDA (build the model plugin against "
                                              "a CUDA libtorch: docs/models.md)");
  }
  std::vector<int> devices = config.cuda_devices;
  if (devices.empty()) {
    for (int d = 0; d < static_cast<int>(torch::cuda::device_count()); ++d) devices.push_back(d);
  }
  return devices;
}

}  // namespace

TorchModel::~TorchModel() = default;

const DeviceCopy* TorchModel::Impl::For(int ordinal) const {
  for (const auto& c : copies) {
    if (c.ordinal == ordinal) return &c;
  }
  return copies.empty() ? nullptr : &copies.front();
}

bool FromTorch(c10::ScalarType t, DType* out) {
  switch (t) {
    case c10::kFloat: *out = DType::kFloat32; return true;
    case c10::kDouble: *out = DType::kFloat64; return true;
    case c10::kHalf: *out = DType::kFloat16; return true;
    case c10::kBFloat16: *out = DType::kBFloat16; return true;
    case c10::kChar: *out = DType::kInt8; return true;
    case c10::kByte: *out = DType::kUInt8; return true;
    case c10::kShort: *out = DType::kInt16; return true;
    case c10::kInt: *out = DType::kInt32; return true;
    case c10::kLong: *out = DType::kInt64; return true;
    case c10::kBool: *out = DType::kBool; return true;
    default: return false;
  }
}

c10::ScalarType ToTorch(DType d) {
  switch (d) {
    case DType::kFloat32: return c10::kFloat;
    case DType::kFloat64: return c10::kDouble;
    case DType::kFloat16: return c10::kHalf;
    case DType::kBFloat16: return c10::kBFloat16;
    case DType::kInt8: return c10::kChar;
    case DType::kUInt8: return c10::kByte;
    case DType::kInt16: return c10::kShort;
    case DType::kInt32: return c10::kInt;
    case DType::kInt64: return c10::kLong;
    case DType::kBool: return c10::kBool;
  }
  return c10::kByte;
}

void UseThreads(int threads) {
  thread_local int set = 0;
  if (set == threads) return;
  at::set_num_threads(threads);
  set = threads;
}

void Explain(const std::string& model, const std::exception& e, char* err, size_t err_len) {
  const auto* c10e = dynamic_cast<const c10::Error*>(&e);
  std::string what = c10e != nullptr ? c10e->what_without_backtrace() : e.what();
  const size_t newline = what.find('\n');  // torch's messages go on with context lines
  if (newline != std::string::npos) what.resize(newline);
  std::snprintf(err, err_len, "model '%s': %s", model.c_str(), what.c_str());
}

std::vector<torch::Tensor> Forward(const TorchModel& m, const tensors::Signature& sig, const std::string& format,
                                   const DeviceCopy& copy, std::vector<torch::Tensor> inputs, void* stream) {
  c10::InferenceMode no_autograd;
  (void)stream;  // AOTInductor's, where its run() takes one
  std::vector<torch::Tensor> outs;
  if (format == "aoti") {
#ifdef PAAM_TORCH_AOTI
#ifdef PAAM_TORCH_AOTI_DEVICE
    outs = copy.package->run(inputs, stream);
#else
    outs = copy.package->run(inputs);  // on the current stream, which the caller's guard set
#endif
#endif
  } else {
    std::vector<c10::IValue> args(inputs.begin(), inputs.end());
    const c10::IValue v = copy.script->forward(std::move(args));
    if (v.isTensor()) {
      outs.push_back(v.toTensor());
    } else if (v.isTuple() || v.isList()) {
      std::vector<c10::IValue> items;
      if (v.isTuple()) {
        for (const auto& item : v.toTuple()->elements()) items.push_back(item);
      } else {
        const c10::List<c10::IValue> list = v.toList();
        for (size_t i = 0; i < list.size(); ++i) items.push_back(list.get(i));
      }
      for (const auto& item : items) {
        if (!item.isTensor()) throw std::runtime_error("its forward() returns a tuple or list holding a non-tensor");
        outs.push_back(item.toTensor());
      }
    } else if (v.isGenericDict()) {
      const auto dict = v.toGenericDict();
      for (const auto& spec : sig.outputs) {
        auto it = dict.find(c10::IValue(spec.name));
        if (it == dict.end() || !it->value().isTensor()) {
          throw std::runtime_error("its forward() returns a dict without a tensor '" + spec.name + "'");
        }
        outs.push_back(it->value().toTensor());
      }
    } else {
      throw std::runtime_error("its forward() returns " + v.tagKind() +
                               ", not a tensor, a tuple or list of tensors, or a dict of them");
    }
  }
  if (outs.size() != sig.outputs.size()) {
    throw std::runtime_error("it returned " + std::to_string(outs.size()) + " output(s), its signature lists " +
                             std::to_string(sig.outputs.size()));
  }
  (void)m;
  return outs;
}

std::vector<torch::Tensor> InputTensors(const tensors::Signature& sig, const tensors::Table& table, uint8_t* base,
                                        const torch::TensorOptions& options) {
  std::vector<torch::Tensor> in;
  in.reserve(sig.inputs.size());
  for (const auto& spec : sig.inputs) {
    const tensors::TensorInfo* t = table.Find(spec.name.c_str());  // MatchInputs found every one
    std::vector<int64_t> dims(t->shape, t->shape + t->ndim);
    in.push_back(torch::from_blob(base + t->offset, dims, options.dtype(ToTorch(t->dtype))));
  }
  return in;
}

int WriteOutputs(const std::string& model, const tensors::Signature& sig, const std::vector<torch::Tensor>& outs,
                 uint8_t* area, uint64_t capacity, const torch::Device& device, char* err, size_t err_len) {
  int64_t shapes[tensors::kMaxTensors][tensors::kMaxDims];
  tensors::Entry entries[tensors::kMaxTensors];
  uint64_t offsets[tensors::kMaxTensors];
  const size_t n = outs.size();  // == sig.outputs.size() <= kMaxTensors (Forward, ParseSignature)
  for (size_t i = 0; i < n; ++i) {
    const TensorSpec& spec = sig.outputs[i];
    DType dtype;
    if (!FromTorch(outs[i].scalar_type(), &dtype)) {
      std::snprintf(err, err_len, "model '%s': output '%s' has dtype %s, which a tensor table cannot carry",
                    model.c_str(), spec.name.c_str(), c10::toString(outs[i].scalar_type()));
      return PAAM_KERNEL_EFAILED;
    }
    const auto sizes = outs[i].sizes();
    if (sizes.size() > tensors::kMaxDims) {
      std::snprintf(err, err_len, "model '%s': output '%s' has %zu dimensions (at most %u)", model.c_str(),
                    spec.name.c_str(), sizes.size(), tensors::kMaxDims);
      return PAAM_KERNEL_EFAILED;
    }
    std::copy(sizes.begin(), sizes.end(), shapes[i]);
    const std::span<const int64_t> shape(shapes[i], sizes.size());
    if (!tensors::MatchOutput(model.c_str(), spec, dtype, shape, err, err_len)) return PAAM_KERNEL_EFAILED;
    entries[i] = {spec.name, dtype, shape};
  }
  const std::span<const tensors::Entry> list(entries, n);
  char why[128];
  const uint64_t used = tensors::Plan(list, offsets, why, sizeof why);
  if (used == 0) {
    std::snprintf(err, err_len, "model '%s': its outputs: %s", model.c_str(), why);
    return PAAM_KERNEL_EFAILED;
  }
  if (used > capacity) {
    std::snprintf(err, err_len,
                  "model '%s': its outputs need %llu bytes with their table; the output area declared at "
                  "registration holds %llu",
                  model.c_str(), static_cast<unsigned long long>(used), static_cast<unsigned long long>(capacity));
    return PAAM_KERNEL_EFAILED;
  }
  if (device.is_cpu()) {
    tensors::Write(area, list, offsets, used);
    for (size_t i = 0; i < n; ++i) {
      const torch::Tensor c = outs[i].to(torch::kCPU).contiguous();
      std::memcpy(area + offsets[i], c.data_ptr(), c.nbytes());
    }
    return PAAM_KERNEL_OK;
  }
  // On the device: the table through pinned memory, the tensors device to device, all on the
  // current stream (the bucket's), which the backend waits for before it copies the area back.
  const uint64_t table_bytes = tensors::TableBytes(static_cast<uint32_t>(n));
  torch::Tensor staged =
      torch::empty({static_cast<int64_t>(table_bytes)}, torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(true));
  tensors::Write(staged.data_ptr(), list, offsets, used);
  const auto on_device = torch::TensorOptions().device(device);
  torch::from_blob(area, {static_cast<int64_t>(table_bytes)}, on_device.dtype(torch::kUInt8)).copy_(staged, true);
  for (size_t i = 0; i < n; ++i) {
    std::vector<int64_t> dims(shapes[i], shapes[i] + outs[i].dim());
    torch::from_blob(area + offsets[i], dims, on_device.dtype(outs[i].scalar_type())).copy_(outs[i], true);
  }
  return PAAM_KERNEL_OK;
}

Result<std::unique_ptr<TorchModel>> TorchModel::Load(const ModelConfig& mc, const PluginConfig& config) {
  std::unique_ptr<TorchModel> m(new TorchModel());
  m->name_ = mc.name;
  m->path_ = mc.path;
  m->format_ = EndsWith(mc.path, ".pt2") ? "aoti" : "torchscript";
  m->cuda_ = config.device == "cuda";
  m->cpu_threads_ = config.cpu_threads;
  m->impl_ = std::make_unique<Impl>();
  const std::string who = "model '" + mc.name + "' (" + mc.path + ")";

  bool ok = false;
  (void)ReadFile(mc.path, &ok);
  if (!ok) return Status(Errc::kInvalidArgument, who + ": cannot read the model file");
  const std::string sidecar = ReadFile(mc.sidecar, &ok);
  if (!ok) {
    return Status(Errc::kInvalidArgument, who + ": no signature at " + mc.sidecar + " (" +
                                              (m->format_ == "aoti" ? "" : "TorchScript carries no shapes; ") +
                                              "write {\"inputs\": [{\"name\", \"dtype\", \"shape\"}], \"outputs\": "
                                              "[...]} there: docs/models.md)");
  }
  auto sig = tensors::ParseSignature(sidecar, who + ": signature " + mc.sidecar);
  if (!sig.ok()) return sig.status();
  m->sig_ = std::move(sig.value());
  m->max_output_bytes_ = tensors::MaxAreaBytes(m->sig_.outputs);

  std::vector<int> ordinals = {-1};
  if (m->cuda_) {
    auto devices = CudaDevices(config, mc.name);
    if (!devices.ok()) return devices.status();
    ordinals = devices.value();
  }
  for (int ordinal : ordinals) {
    DeviceCopy copy;
    copy.ordinal = ordinal;
    copy.device = ordinal < 0 ? torch::Device(torch::kCPU) : torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(ordinal));
    try {
      if (m->format_ == "aoti") {
#ifdef PAAM_TORCH_AOTI
#ifdef PAAM_TORCH_AOTI_DEVICE
        // One runner per concurrent request a bucket may run (the best-effort lanes).
        copy.package = std::make_unique<torch::inductor::AOTIModelPackageLoader>(
            mc.path, "model", false, /*num_runners=*/4, static_cast<c10::DeviceIndex>(ordinal));
#else
        copy.package = std::make_unique<torch::inductor::AOTIModelPackageLoader>(mc.path);
#endif
#else
        return Status(Errc::kInvalidArgument, who + ": AOTInductor packages (.pt2) need libtorch 2.6 or later; this "
                                                    "model plugin was built against libtorch " TORCH_VERSION
                                                    " (serve a TorchScript .pt instead: docs/models.md)");
#endif
      } else {
        copy.script = torch::jit::load(mc.path, copy.device);
        copy.script->eval();
      }
    } catch (const std::exception& e) {
      char err[512];
      Explain(mc.name, e, err, sizeof err);
      return Status(Errc::kInvalidArgument, who + ": cannot load it as " +
                                                (m->format_ == "aoti" ? "an AOTInductor package" : "TorchScript") +
                                                ": " + (std::strchr(err, ':') + 2));
    }
    m->impl_->copies.push_back(std::move(copy));
  }

  UseThreads(config.cpu_threads);
  // The dry run: zeros of every input (a varying dimension as 1), twice (TorchScript's
  // profiling executor optimizes after its first runs), on every device.
  for (const DeviceCopy& copy : m->impl_->copies) {
    std::vector<torch::Tensor> in;
    std::string shapes;
    for (const auto& spec : m->sig_.inputs) {
      std::vector<int64_t> dims;
      for (int64_t d : spec.shape) dims.push_back(d < 0 ? 1 : d);
      in.push_back(torch::zeros(dims, torch::TensorOptions().dtype(ToTorch(spec.dtype)).device(copy.device)));
      char buf[96];
      shapes += (shapes.empty() ? "" : ", ") + spec.name + " " + tensors::Describe(spec.dtype, dims, buf, sizeof buf);
    }
    try {
      std::vector<torch::Tensor> outs;
      for (int run = 0; run < 2; ++run) outs = Forward(*m, m->sig_, m->format_, copy, in, nullptr);
      for (size_t i = 0; i < outs.size(); ++i) {
        DType dtype;
        char err[256];
        if (!FromTorch(outs[i].scalar_type(), &dtype)) {
          return Status(Errc::kInvalidArgument, who + ": output '" + m->sig_.outputs[i].name + "' has dtype " +
                                                    c10::toString(outs[i].scalar_type()) +
                                                    ", which a tensor table cannot carry");
        }
        const std::vector<int64_t> dims(outs[i].sizes().begin(), outs[i].sizes().end());
        if (!tensors::MatchOutput(mc.name.c_str(), m->sig_.outputs[i], dtype, dims, err, sizeof err)) {
          return Status(Errc::kInvalidArgument, who + ": the dry run with inputs of zeros (" + shapes +
                                                    ") does not match the signature in " + mc.sidecar + ": " +
                                                    (std::strchr(err, ':') + 2));
        }
      }
    } catch (const std::exception& e) {
      char err[512];
      Explain(mc.name, e, err, sizeof err);
      return Status(Errc::kInvalidArgument, who + ": the dry run with inputs of zeros (" + shapes +
                                                ", the signature in " + mc.sidecar + ") failed: " +
                                                (std::strchr(err, ':') + 2));
    }
  }
  if (m->cuda_) torch::cuda::synchronize();

  nlohmann::json pub = nlohmann::json::parse(tensors::SignatureJson(m->sig_));
  pub["name"] = m->name_;
  pub["format"] = m->format_;
  pub["path"] = m->path_;
  pub["device"] = config.device;
  pub["max_input_bytes"] = tensors::MaxAreaBytes(m->sig_.inputs);
  pub["max_output_bytes"] = m->max_output_bytes_;
  m->published_ = pub.dump();
  m->summary_ = Summary(m->sig_);
  return m;
}

int TorchModel::Plan(const paam_plan_args* args, uint64_t* output_bytes, char* err, size_t err_len) const {
  // With a bounded signature, every output fits max_output_bytes_ (more is refused at run);
  // otherwise the region's output area is the limit.
  *output_bytes = max_output_bytes_ != 0 ? max_output_bytes_ : args->output_capacity;
  if (args->host_input == nullptr) return PAAM_KERNEL_OK;  // device data: Run checks its table
  tensors::Table table;
  char why[128];
  if (!tensors::Decode(args->host_input, args->input_bytes, &table, why, sizeof why)) {
    std::snprintf(err, err_len, "model '%s': %s", name_.c_str(), why);
    return PAAM_KERNEL_EINVAL;
  }
  if (!tensors::MatchInputs(name_.c_str(), sig_.inputs, table, err, err_len)) return PAAM_KERNEL_EINVAL;
  return PAAM_KERNEL_OK;
}

int TorchModel::RunCpu(const paam_kernel_args* args, char* err, size_t err_len) const {
  tensors::Table table;  // a private copy: the client may have changed the area since plan()
  char why[128];
  if (!tensors::Decode(args->input, args->input_bytes, &table, why, sizeof why)) {
    std::snprintf(err, err_len, "model '%s': %s", name_.c_str(), why);
    return PAAM_KERNEL_EINVAL;
  }
  if (!tensors::MatchInputs(name_.c_str(), sig_.inputs, table, err, err_len)) return PAAM_KERNEL_EINVAL;
  try {
    UseThreads(cpu_threads_);
    const DeviceCopy* copy = impl_->For(-1);
    auto* base = static_cast<uint8_t*>(const_cast<void*>(args->input));
    auto outs = Forward(*this, sig_, format_, *copy, InputTensors(sig_, table, base, torch::TensorOptions()), nullptr);
    return WriteOutputs(name_, sig_, outs, static_cast<uint8_t*>(args->output), args->output_bytes, copy->device,
                        err, err_len);
  } catch (const std::exception& e) {
    Explain(name_, e, err, err_len);
    return PAAM_KERNEL_EFAILED;
  }
}

#ifndef PAAM_TORCH_CUDA
int TorchModel::RunCuda(const paam_kernel_args*, char* err, size_t err_len) const {
  std::snprintf(err, err_len, "model '%s': this model plugin was built against a libtorch without CUDA", name_.c_str());
  return PAAM_KERNEL_EFAILED;
}
#endif

}  // namespace paam::models
