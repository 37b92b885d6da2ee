// server/model_options.h — paamd's models: `--model NAME=PATH`, `--models FILE`,
// `--model-plugin PATH` and `--model-threads N` become the model plugin's path and its
// configuration (docs/models.md). paamd itself never links libtorch: the plugin does
// (core/src/models), and paamd loads it by path like any version 2 plugin.
#pragma once

#include <string>
#include <vector>

#include "backend/backend.h"
#include "paam/status.h"

namespace paam {

struct ModelOption {
  std::string name;     // the kernel name clients use: [a-z0-9_], at most 47
  std::string path;     // the .pt (TorchScript) or .pt2 (AOTInductor package), absolute
  std::string sidecar;  // the signature file; empty: PATH + ".json"
};

struct ModelOptions {
  std::vector<ModelOption> models;
  std::string plugin;    // --model-plugin; empty: FindModelPlugin's search
  int cpu_threads = 1;   // intra-op threads of each CPU run (--model-threads)
};

// The plugin's file name, next to paamd in a build or an installation.
inline constexpr const char* kModelPluginFile = "libpaam_torch.so";

// "detector=/models/det.pt" -> {"detector", "/models/det.pt" made absolute}; an error naming
// the expected form otherwise.
Result<ModelOption> ParseModelFlag(const std::string& text);
// Adds the models of a models file: {"models": [{"name": "detector", "path": "det.pt",
// "sidecar": "det.json"}], "cpu_threads": 1} (sidecar and cpu_threads optional; relative paths
// are relative to the file's folder).
Status LoadModelsFile(const std::string& path, ModelOptions* out);
// The plugin to load: `explicit_path` if given, else $PAAM_MODEL_PLUGIN, else
// kModelPluginFile in the folder of this executable. An error that says how to get it when
// none exists (the plugin is built only where libtorch is found).
Result<std::string> FindModelPlugin(const std::string& explicit_path);
// The plugin's configuration, JSON: {"device": "cpu"|"cuda", "cuda_devices": "0,1",
// "cpu_threads": N, "models": [{"name", "path", "sidecar"}]}.
std::string ModelPluginConfig(const ModelOptions& models, const BackendOptions& backend);

}  // namespace paam
