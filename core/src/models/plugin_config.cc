#include "models/plugin_config.h"

#include <nlohmann/json.hpp>

namespace paam::models {

namespace {

Result<std::vector<int>> Devices(const std::string& list) {
  std::vector<int> out;
  size_t at = 0;
  while (at < list.size()) {
    const size_t comma = list.find(',', at);
    const std::string item = list.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (item.empty() || item.size() > 3 || item.find_first_not_of("0123456789") != std::string::npos) {
      return Status(Errc::kInvalidArgument, "cuda_devices must be GPU numbers separated by commas, got '" + list + "'");
    }
    out.push_back(std::stoi(item));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

}  // namespace

Result<PluginConfig> ParseConfig(const std::string& text) {
  using json = nlohmann::json;
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status(Errc::kInvalidArgument, "configuration must be a JSON object ({\"models\": [...], ...})");
  }
  PluginConfig c;
  for (const auto& [key, value] : j.items()) {
    if (key == "device" && value.is_string() && (value == "cpu" || value == "cuda")) {
      c.device = value.get<std::string>();
    } else if (key == "cuda_devices" && value.is_string()) {
      auto d = Devices(value.get<std::string>());
      if (!d.ok()) return d.status();
      c.cuda_devices = std::move(d.value());
    } else if (key == "cpu_threads" && value.is_number_integer() && value.get<int>() >= 1 && value.get<int>() <= 256) {
      c.cpu_threads = value.get<int>();
    } else if (key == "models" && value.is_array()) {
      for (const auto& m : value) {
        if (!m.is_object() || !m.contains("name") || !m["name"].is_string() || !m.contains("path") ||
            !m["path"].is_string()) {
          return Status(Errc::kInvalidArgument, "each model needs \"name\" and \"path\" (text)");
        }
        ModelConfig mc{m["name"].get<std::string>(), m["path"].get<std::string>(), ""};
        if (m.contains("sidecar") && m["sidecar"].is_string()) mc.sidecar = m["sidecar"].get<std::string>();
        if (mc.sidecar.empty()) mc.sidecar = mc.path + ".json";
        c.models.push_back(std::move(mc));
      }
    } else {
      return Status(Errc::kInvalidArgument, "configuration: unknown or invalid field '" + key +
                                                "' (device cpu|cuda, cuda_devices \"0,1\", cpu_threads 1..256, models)");
    }
  }
  if (c.models.empty()) return Status(Errc::kInvalidArgument, "configuration names no models");
  return c;
}

}  // namespace paam::models
