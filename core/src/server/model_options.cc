#include "server/model_options.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace paam {

namespace {

std::string Absolute(const std::string& path, const std::string& base_dir) {
  if (path.empty() || path[0] == '/') return path;
  if (!base_dir.empty()) return base_dir + "/" + path;
  char cwd[PATH_MAX];
  return getcwd(cwd, sizeof cwd) != nullptr ? std::string(cwd) + "/" + path : path;
}

std::string DirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

bool IsFile(const std::string& path) { return !path.empty() && access(path.c_str(), R_OK) == 0; }

Status CheckName(const std::string& name, const std::string& where) {
  if (name.empty() || name.size() > 47 ||
      name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos) {
    return Status(Errc::kInvalidArgument, where + ": model name '" + name +
                                              "' must be 1..47 characters of [a-z0-9_] (it is a kernel name)");
  }
  return Status::Ok();
}

}  // namespace

Result<ModelOption> ParseModelFlag(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    return Status(Errc::kInvalidArgument, "--model needs NAME=PATH, e.g. detector=/models/detector.pt; got '" + text + "'");
  }
  ModelOption m;
  m.name = text.substr(0, eq);
  if (Status ok = CheckName(m.name, "--model"); !ok.ok()) return ok;
  m.path = Absolute(text.substr(eq + 1), "");
  return m;
}

Status LoadModelsFile(const std::string& path, ModelOptions* out) {
  std::ifstream in(path);
  if (!in) return Status(Errc::kInvalidArgument, "--models: cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  const std::string where = "--models " + path;
  if (j.is_discarded() || !j.is_object() || !j.contains("models") || !j["models"].is_array()) {
    return Status(Errc::kInvalidArgument, where + ": expected JSON {\"models\": [{\"name\": ..., \"path\": ...}]}");
  }
  const std::string dir = DirOf(Absolute(path, ""));
  for (const auto& m : j["models"]) {
    if (!m.is_object() || !m.contains("name") || !m["name"].is_string() || !m.contains("path") ||
        !m["path"].is_string()) {
      return Status(Errc::kInvalidArgument, where + ": each model needs \"name\" and \"path\" (text)");
    }
    ModelOption o;
    o.name = m["name"].get<std::string>();
    if (Status ok = CheckName(o.name, where); !ok.ok()) return ok;
    o.path = Absolute(m["path"].get<std::string>(), dir);
    if (m.contains("sidecar")) {
      if (!m["sidecar"].is_string()) return Status(Errc::kInvalidArgument, where + ": \"sidecar\" must be a path");
      o.sidecar = Absolute(m["sidecar"].get<std::string>(), dir);
    }
    out->models.push_back(std::move(o));
  }
  for (const auto& [key, value] : j.items()) {
    if (key == "models") continue;
    if (key == "cpu_threads" && value.is_number_integer() && value.get<int>() >= 1 && value.get<int>() <= 256) {
      out->cpu_threads = value.get<int>();
      continue;
    }
    return Status(Errc::kInvalidArgument, where + ": unknown or invalid field '" + key +
                                              "' (allowed: models, cpu_threads 1..256)");
  }
  return Status::Ok();
}

Result<std::string> FindModelPlugin(const std::string& explicit_path) {
  if (!explicit_path.empty()) {
    if (IsFile(explicit_path)) return Absolute(explicit_path, "");
    return Status(Errc::kInvalidArgument, "--model-plugin: no readable file at " + explicit_path);
  }
  if (const char* env = std::getenv("PAAM_MODEL_PLUGIN"); env != nullptr && *env != '\0') {
    if (IsFile(env)) return std::string(env);
    return Status(Errc::kInvalidArgument, std::string("$PAAM_MODEL_PLUGIN: no readable file at ") + env);
  }
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  std::string next_to;
  if (n > 0) {
    self[n] = '\0';
    next_to = DirOf(self) + "/" + kModelPluginFile;
    if (IsFile(next_to)) return next_to;
  }
  return Status(Errc::kInvalidArgument,
                std::string("models need the model plugin ") + kModelPluginFile + ", which is not next to paamd" +
                    (next_to.empty() ? "" : " (" + next_to + ")") +
                    "; it is built where libtorch is found (Debian: apt-get install libtorch-dev, then rebuild; "
                    "docs/models.md), or name it with --model-plugin PATH");
}

std::string ModelPluginConfig(const ModelOptions& models, const BackendOptions& backend) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& m : models.models) {
    list.push_back({{"name", m.name}, {"path", m.path}, {"sidecar", m.sidecar.empty() ? m.path + ".json" : m.sidecar}});
  }
  return nlohmann::json{{"device", backend.kind == "cuda" ? "cuda" : "cpu"},
                        {"cuda_devices", backend.cuda_devices},
                        {"cpu_threads", models.cpu_threads},
                        {"models", std::move(list)}}
      .dump();
}

}  // namespace paam
