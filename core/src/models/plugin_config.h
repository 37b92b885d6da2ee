// models/plugin_config.h — the model plugin's configuration, as paamd writes it
// (server/model_options.h, ModelPluginConfig): JSON
//   {"device": "cpu"|"cuda", "cuda_devices": "0,1" (empty: every visible GPU),
//    "cpu_threads": 1, "models": [{"name": "detector", "path": "/m/det.pt", "sidecar": "/m/det.pt.json"}]}
#pragma once

#include <string>
#include <vector>

#include "paam/status.h"

namespace paam::models {

struct ModelConfig {
  std::string name;
  std::string path;
  std::string sidecar;  // empty: path + ".json"
};

struct PluginConfig {
  std::string device = "cpu";
  std::vector<int> cuda_devices;  // empty: every visible GPU
  int cpu_threads = 1;
  std::vector<ModelConfig> models;
};

Result<PluginConfig> ParseConfig(const std::string& text);

}  // namespace paam::models
