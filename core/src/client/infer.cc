// client/infer.cc — requests of models (Client::Infer, paam/client.h): named tensors written
// behind a tensor table into the region's input area, outputs read back from the table the
// model wrote into the output area (tensors/tensor_table.h, docs/models.md).
#include <cstring>
#include <string>

#include "client/model_kernels.h"
#include "paam/client.h"
#include "tensors/tensor_table.h"

namespace paam {

Status AddModelKernels(ClientOptions* options) {
  if (options->direct) {
    return Status(Errc::kInvalidArgument, "models run in paamd (paamd --model NAME=PATH); direct mode has no model "
                                          "plugin");
  }
  auto models = QueryModels(options->socket_path, options->connect_timeout_ms, options->trusted_server_uids);
  if (!models.ok()) return models.status();
  for (const std::string& name : options->models) {
    bool declared = false;
    for (const KernelDecl& k : options->kernels) declared |= k.name == name;
    if (declared) continue;
    const ModelInfo* found = nullptr;
    std::string served;
    for (const ModelInfo& m : *models) {
      if (m.name == name) found = &m;
      served += (served.empty() ? "" : ", ") + m.name;
    }
    if (found == nullptr) {
      return Status(Errc::kUnknownKernel, "unknown model '" + name + "' (paamd serves " +
                                              (served.empty() ? "no models: start it with --model NAME=PATH"
                                                              : "the models " + served) +
                                              ")");
    }
    if (found->max_input_bytes == 0 || found->max_output_bytes == 0) {
      return Status(Errc::kInvalidArgument, "model '" + name + "' has a dimension without a bound (-1 without "
                                            "max_shape in its signature): declare it among the kernels with the "
                                            "region sizes it needs");
    }
    options->kernels.push_back({name, found->max_input_bytes, found->max_output_bytes, std::nullopt});
  }
  return Status::Ok();
}

namespace {

Status ModelIndex(const Client& c, std::string_view model, int* k) {
  *k = c.KernelIndex(model);
  if (*k >= 0) return Status::Ok();
  std::string declared;
  for (int i = 0; i < c.KernelCount(); ++i) declared += (declared.empty() ? "" : ", ") + c.KernelName(i);
  return Status(Errc::kUnknownKernel, "model '" + std::string(model) + "' was not declared at registration (declared: " +
                                          declared + ")");
}

}  // namespace

Status Client::SubmitInfer(std::string_view model, std::span<const TensorView> inputs) {
  int k = -1;
  if (Status st = ModelIndex(*this, model, &k); !st.ok()) return st;
  const std::string name(model);
  if (inputs.size() > tensors::kMaxTensors) {
    return Status(Errc::kInvalidArgument, "model '" + name + "': " + std::to_string(inputs.size()) +
                                              " input tensors (a request carries at most " +
                                              std::to_string(tensors::kMaxTensors) + ")");
  }
  tensors::Entry entries[tensors::kMaxTensors];
  uint64_t offsets[tensors::kMaxTensors];
  for (size_t i = 0; i < inputs.size(); ++i) entries[i] = {inputs[i].name, inputs[i].dtype, inputs[i].shape};
  char err[256];
  const std::span<const tensors::Entry> list(entries, inputs.size());
  const uint64_t used = tensors::Plan(list, offsets, err, sizeof(err));
  if (used == 0) return Status(Errc::kInvalidArgument, "model '" + name + "': " + err);
  std::span<uint8_t> area = Input(k);
  if (used > area.size()) {
    return Status(Errc::kInputTooLarge, "model '" + name + "': the inputs need " + std::to_string(used) +
                                            " bytes with their tensor table; the region declared at registration "
                                            "holds " + std::to_string(area.size()));
  }
  if (Outstanding(k)) {
    return Status(Errc::kBusy, "a request for '" + name + "' is outstanding; wait for it before submitting another");
  }
  tensors::Write(area.data(), list, offsets, used);
  for (size_t i = 0; i < inputs.size(); ++i) {
    uint64_t bytes = 0;
    tensors::ShapeBytes(inputs[i].dtype, inputs[i].shape, &bytes);
    if (bytes != 0 && inputs[i].data == nullptr) {
      return Status(Errc::kInvalidArgument, "model '" + name + "': input '" + std::string(inputs[i].name) + "' has no data");
    }
    if (bytes != 0) std::memcpy(area.data() + offsets[i], inputs[i].data, bytes);
  }
  const uint64_t params[4] = {0, 0, 0, 0};
  return Submit(k, used, params);
}

Status Client::WaitInfer(std::string_view model, std::vector<Tensor>* outputs, uint64_t timeout_ns) {
  int k = -1;
  if (Status st = ModelIndex(*this, model, &k); !st.ok()) return st;
  uint64_t out_bytes = 0;
  if (Status st = Wait(k, &out_bytes, timeout_ns); !st.ok()) return st;
  const std::span<const uint8_t> area = Output(k);
  tensors::Table table;
  char err[256];
  if (!tensors::Decode(area.data(), out_bytes, &table, err, sizeof(err))) {
    return Status(Errc::kProtocolError, "model '" + std::string(model) + "': its output table: " + err);
  }
  if (outputs == nullptr) return Status::Ok();
  outputs->clear();
  for (uint32_t i = 0; i < table.count; ++i) {
    const tensors::TensorInfo& t = table.tensors[i];
    outputs->push_back(Tensor{t.name, t.dtype, {t.shape, t.shape + t.ndim}, area.data() + t.offset, t.bytes});
  }
  return Status::Ok();
}

Status Client::Infer(std::string_view model, std::span<const TensorView> inputs, std::vector<Tensor>* outputs,
                     uint64_t timeout_ns) {
  if (Status st = SubmitInfer(model, inputs); !st.ok()) return st;
  return WaitInfer(model, outputs, timeout_ns);
}

}  // namespace paam
