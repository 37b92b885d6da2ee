// The model plugin (libpaam_torch.so) with a TorchScript model that paam_make_test_model writes:
// loading and the dry run against the signature, the plugin's checks of tensor tables, and
// requests through paamd on the CPU backend, whose outputs must equal those of running the
// saved module directly (the tool's sample). Links the core only, never libtorch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/registry.h"
#include "paam/client.h"
#include "paam/tensor.h"
#include "server/model_options.h"
#include "server/server.h"
#include "server/test_socket.h"
#include "tensors/tensor_table.h"

namespace paam {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

struct Sample {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

class Models : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/paam-models-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    const std::string cmd = std::string(PAAM_MAKE_TEST_MODEL) + " " + dir_ + "/tiny.pt --max-batch 4 --sample " +
                            dir_ + "/sample.json --batch 2 > " + dir_ + "/make.log 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << "paam_make_test_model failed; see " << dir_ << "/make.log";
    std::ifstream in(dir_ + "/sample.json");
    const json j = json::parse(in);
    for (const char* part : {"inputs", "outputs"}) {
      for (const auto& [name, t] : j[part].items()) {
        (*samples_)[name] = Sample{t["shape"].get<std::vector<int64_t>>(), t["data"].get<std::vector<float>>()};
      }
    }
  }
  static void TearDownTestSuite() {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  // The model plugin's configuration for models {name: path}, as paamd writes it.
  static std::string Config(const std::vector<ModelOption>& models, const BackendOptions& backend = {}) {
    ModelOptions mo;
    mo.models = models;
    return ModelPluginConfig(mo, backend);
  }
  static std::string Tiny() { return dir_ + "/tiny.pt"; }
  // A copy of tiny.pt's sidecar with `edit` applied, as `name`.
  static std::string EditedSidecar(const std::string& name, const std::function<void(json&)>& edit) {
    std::ifstream in(Tiny() + ".json");
    json j = json::parse(in);
    edit(j);
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << j.dump();
    return path;
  }
  static const Sample& S(const std::string& name) { return samples_->at(name); }

  static std::unique_ptr<Server> Serve(const std::vector<ModelOption>& models) {
    ServerOptions so;
    so.socket_path = test_util::TempSocket();
    so.backend.device_cpu = -2;  // do not pin: tests run on small CI machines
    so.configured_plugins.push_back({PAAM_MODEL_PLUGIN_PATH, Config(models)});
    auto s = Server::Start(so);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s.value()) : nullptr;
  }

  static inline std::string dir_;
  static inline std::map<std::string, Sample>* samples_ = new std::map<std::string, Sample>();
};

std::vector<TensorView> SampleInputs(const Sample& images, const Sample& offset) {
  return {{"images", DType::kFloat32, images.shape, images.data.data()},
          {"offset", DType::kFloat32, offset.shape, offset.data.data()}};
}

void ExpectNear(const Tensor& got, const Sample& want) {
  EXPECT_EQ(got.dtype, DType::kFloat32);
  EXPECT_EQ(got.shape, want.shape) << got.name;
  auto values = got.as<float>();
  ASSERT_EQ(values.size(), want.data.size()) << got.name;
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_NEAR(values[i], want.data[i], 1e-5 * (1 + std::fabs(want.data[i]))) << got.name << "[" << i << "]";
  }
}

TEST_F(Models, ThePluginLoadsAModelAndPublishesItsSignature) {
  KernelRegistry r;
  Status st = r.LoadPlugin(PAAM_MODEL_PLUGIN_PATH, Config({{"tiny", Tiny(), ""}}));
  ASSERT_TRUE(st.ok()) << st.ToString();
  const KernelEntry* k = r.Find("tiny");
  ASSERT_NE(k, nullptr);
  EXPECT_TRUE(k->HasCpu());
  EXPECT_FALSE(k->HasCuda());
  EXPECT_EQ(k->signature,
            "(images: float32[-1,3,16,16] (max [4,3,16,16]), offset: float32[10]) -> "
            "(logits: float32[-1,10] (max [4,10]), features: float32[-1,4] (max [4,4]))");
  const json pub = json::parse(k->tensor_signature);
  EXPECT_EQ(pub["format"], "torchscript");
  EXPECT_EQ(pub["device"], "cpu");
  EXPECT_EQ(pub["path"], Tiny());
  EXPECT_EQ(pub["max_input_bytes"].get<uint64_t>(), tensors::AlignUp(tensors::TableBytes(2) + 4 * 3 * 16 * 16 * 4) + 40);
  EXPECT_EQ(pub["max_output_bytes"].get<uint64_t>(), tensors::AlignUp(tensors::TableBytes(2) + 4 * 10 * 4) + 4 * 4 * 4);
}

TEST_F(Models, ASignatureThatDoesNotDescribeItsModelStopsTheLoad) {
  auto load_error = [](const std::vector<ModelOption>& models) {
    KernelRegistry r;
    Status st = r.LoadPlugin(PAAM_MODEL_PLUGIN_PATH, Config(models));
    EXPECT_FALSE(st.ok());
    return st.message();
  };
  // an output of another width than the model's
  const std::string wrong = EditedSidecar("wrong.json", [](json& j) { j["outputs"][0]["shape"] = {-1, 12}; j["outputs"][0].erase("max_shape"); });
  std::string msg = load_error({{"tiny", Tiny(), wrong}});
  EXPECT_NE(msg.find("the dry run with inputs of zeros (images float32[1,3,16,16], offset float32[10]) does not "
                     "match the signature in " + wrong + ": output 'logits' is float32[1,10], its signature says "
                     "float32[-1,12]"),
            std::string::npos)
      << msg;
  // inputs the model cannot take
  const std::string small = EditedSidecar("small.json", [](json& j) {
    j["inputs"][0]["shape"] = {-1, 3, 8, 8};
    j["inputs"][0]["max_shape"] = {4, 3, 8, 8};
  });
  msg = load_error({{"tiny", Tiny(), small}});
  EXPECT_NE(msg.find("the dry run with inputs of zeros (images float32[1,3,8,8], offset float32[10], the signature in " +
                     small + ") failed: "),
            std::string::npos)
      << msg;
  msg = load_error({{"tiny", Tiny(), dir_ + "/none.json"}});
  EXPECT_NE(msg.find("no signature at " + dir_ + "/none.json (TorchScript carries no shapes"), std::string::npos) << msg;
  std::ofstream(dir_ + "/junk.pt") << "not a model";
  std::ofstream(dir_ + "/junk.pt.json") << std::ifstream(Tiny() + ".json").rdbuf();
  msg = load_error({{"junk", dir_ + "/junk.pt", ""}});
  EXPECT_NE(msg.find("cannot load it as TorchScript"), std::string::npos) << msg;
  std::ofstream(dir_ + "/junk.pt2") << "not a package";
  std::ofstream(dir_ + "/junk.pt2.json") << std::ifstream(Tiny() + ".json").rdbuf();
  msg = load_error({{"junk", dir_ + "/junk.pt2", ""}});
  EXPECT_NE(msg.find("AOTInductor"), std::string::npos) << msg;  // unsupported (libtorch < 2.6) or unreadable
}

// The table a client writes, for the plan checks below.
std::vector<uint8_t> Request(std::vector<tensors::Entry> entries, uint64_t* used) {
  uint64_t offsets[tensors::kMaxTensors];
  char err[256];
  *used = tensors::Plan(entries, offsets, err, sizeof err);
  std::vector<uint8_t> area(*used, 0);
  tensors::Write(area.data(), entries, offsets, *used);
  return area;
}

TEST_F(Models, PlanChecksTheRequestsTableAgainstTheSignature) {
  KernelRegistry r;
  ASSERT_TRUE(r.LoadPlugin(PAAM_MODEL_PLUGIN_PATH, Config({{"tiny", Tiny(), ""}})).ok());
  const KernelEntry* k = r.Find("tiny");
  const uint64_t params[4] = {0, 0, 0, 0};
  auto plan = [&](std::vector<tensors::Entry> entries) {
    uint64_t used = 0, out = 0;
    auto area = Request(std::move(entries), &used);
    return k->Plan(params, used, &out, area.data(), 1 << 20);
  };
  const int64_t one[] = {1, 3, 16, 16}, five[] = {5, 3, 16, 16}, ten[] = {10}, nine[] = {9};
  EXPECT_TRUE(plan({{"images", DType::kFloat32, one}, {"offset", DType::kFloat32, ten}}).ok());
  EXPECT_EQ(plan({{"images", DType::kFloat64, one}, {"offset", DType::kFloat32, ten}}).message(),
            "tiny: model 'tiny': input 'images' must be float32[-1,3,16,16] (max [4,3,16,16]), got float64[1,3,16,16]");
  EXPECT_EQ(plan({{"images", DType::kFloat32, five}, {"offset", DType::kFloat32, ten}}).message(),
            "tiny: model 'tiny': input 'images' must be float32[-1,3,16,16] (max [4,3,16,16]), got float32[5,3,16,16]");
  EXPECT_EQ(plan({{"images", DType::kFloat32, one}, {"offset", DType::kFloat32, nine}}).message(),
            "tiny: model 'tiny': input 'offset' must be float32[10], got float32[9]");
  EXPECT_EQ(plan({{"images", DType::kFloat32, one}}).message(),
            "tiny: model 'tiny' needs input 'offset' (float32[10]), which the request lacks");
  // a malformed table
  std::vector<uint8_t> junk(256, 0xab);
  uint64_t out = 0;
  Status st = k->Plan(params, junk.size(), &out, junk.data(), 1 << 20);
  EXPECT_EQ(st.code(), Errc::kInvalidArgument);
  EXPECT_NE(st.message().find("model 'tiny': no tensor table"), std::string::npos) << st.message();
  // the output bytes: the signature's largest outputs
  EXPECT_TRUE(k->Plan(params, 0, &out, nullptr, 1 << 20).ok());
  EXPECT_EQ(out, tensors::AlignUp(tensors::TableBytes(2) + 4 * 10 * 4) + 4 * 4 * 4);
}

TEST_F(Models, ThroughPaamdOutputsEqualRunningTheModuleDirectly) {
  auto server = Serve({{"tiny", Tiny(), ""}});
  ASSERT_NE(server, nullptr);
  for (WaitMode wait : {WaitMode::kSpin, WaitMode::kSuspend, WaitMode::kHybrid}) {
    ClientOptions co;
    co.socket_path = server->socket_path();
    co.priority = 5;
    co.models = {"tiny"};
    co.wait = wait;
    auto c = Client::Connect(co);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    const auto inputs = SampleInputs(S("images"), S("offset"));
    std::vector<Tensor> outs;
    Status st = (*c)->Infer("tiny", inputs, &outs);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_EQ(outs.size(), 2u);
    EXPECT_EQ(outs[0].name, "logits");
    ExpectNear(outs[0], S("logits"));
    EXPECT_EQ(outs[1].name, "features");
    ExpectNear(outs[1], S("features"));
    // asynchronous: submit, then wait
    ASSERT_TRUE((*c)->SubmitInfer("tiny", inputs).ok());
    EXPECT_EQ((*c)->SubmitInfer("tiny", inputs).code(), Errc::kBusy);
    ASSERT_TRUE((*c)->WaitInfer("tiny", &outs).ok());
    ExpectNear(outs[0], S("logits"));
  }
}

TEST_F(Models, WrongRequestsGetClearErrorsAndTheNextOneWorks) {
  const std::string narrow = EditedSidecar("narrow.json", [](json& j) {
    j["outputs"][0]["max_shape"] = {2, 10};  // the model may take 4 images, but say it returns at most 2 rows
    j["outputs"][1]["max_shape"] = {2, 4};
  });
  auto server = Serve({{"tiny", Tiny(), ""}, {"narrow", Tiny(), narrow}});
  ASSERT_NE(server, nullptr);
  ClientOptions co;
  co.socket_path = server->socket_path();
  co.models = {"tiny", "narrow"};
  auto c = Client::Connect(co);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const Sample& off = S("offset");
  std::vector<double> doubles(2 * 3 * 16 * 16, 0.5);
  const int64_t two[] = {2, 3, 16, 16};
  std::vector<Tensor> outs;
  // wrong dtype
  std::vector<TensorView> in = {{"images", DType::kFloat64, two, doubles.data()},
                                {"offset", DType::kFloat32, off.shape, off.data.data()}};
  Status st = (*c)->Infer("tiny", in, &outs);
  EXPECT_EQ(st.code(), Errc::kInvalidArgument);
  EXPECT_EQ(st.message(), "model 'tiny': input 'images' must be float32[-1,3,16,16] (max [4,3,16,16]), got float64[2,3,16,16]");
  // wrong shape
  std::vector<float> flat(3 * 16 * 16, 0.5f);
  const int64_t chw[] = {3, 16, 16};
  in = {{"images", DType::kFloat32, chw, flat.data()}, {"offset", DType::kFloat32, off.shape, off.data.data()}};
  st = (*c)->Infer("tiny", in, &outs);
  EXPECT_EQ(st.code(), Errc::kInvalidArgument);
  EXPECT_NE(st.message().find("must be float32[-1,3,16,16] (max [4,3,16,16]), got float32[3,16,16]"), std::string::npos);
  // unknown model
  st = (*c)->Infer("detector", in, &outs);
  EXPECT_EQ(st.code(), Errc::kUnknownKernel);
  EXPECT_EQ(st.message(), "model 'detector' was not declared at registration (declared: tiny, narrow)");
  // an output larger than its signature declares
  std::vector<float> three(3 * 3 * 16 * 16, 0.5f);
  const int64_t three_shape[] = {3, 3, 16, 16};
  in = {{"images", DType::kFloat32, three_shape, three.data()}, {"offset", DType::kFloat32, off.shape, off.data.data()}};
  st = (*c)->Infer("narrow", in, &outs);
  EXPECT_EQ(st.code(), Errc::kKernelFailed);
  EXPECT_EQ(st.message(), "model 'narrow': output 'logits' is float32[3,10], its signature says float32[-1,10] (max [2,10])");
  // nothing else disturbed: both models answer the next request
  const auto good = SampleInputs(S("images"), S("offset"));
  ASSERT_TRUE((*c)->Infer("narrow", good, &outs).ok());
  ExpectNear(outs[0], S("logits"));
  ASSERT_TRUE((*c)->Infer("tiny", good, &outs).ok());
  ExpectNear(outs[1], S("features"));
}

TEST_F(Models, ClientsLearnTheSignaturesAndUnknownModelsAreNamed) {
  auto server = Serve({{"tiny", Tiny(), ""}});
  ASSERT_NE(server, nullptr);
  auto models = QueryModels(server->socket_path());
  ASSERT_TRUE(models.ok()) << models.status().ToString();
  ASSERT_EQ(models->size(), 1u);
  const ModelInfo& m = (*models)[0];
  EXPECT_EQ(m.name, "tiny");
  EXPECT_EQ(m.format, "torchscript");
  ASSERT_EQ(m.inputs.size(), 2u);
  EXPECT_EQ(m.inputs[0].shape, (std::vector<int64_t>{-1, 3, 16, 16}));
  EXPECT_EQ(m.inputs[0].max_shape, (std::vector<int64_t>{4, 3, 16, 16}));
  EXPECT_EQ(m.outputs[1].name, "features");
  ClientOptions co;
  co.socket_path = server->socket_path();
  co.models = {"detector"};
  auto c = Client::Connect(co);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "unknown model 'detector' (paamd serves the models tiny)");
}

// On the CUDA backend (the GPU machine, with a plugin built against a CUDA libtorch): the model
// runs on the stream of the request's bucket and answers as on the CPU, from clients of two
// priorities at once; skipped where there is no GPU or the plugin has no CUDA.
TEST_F(Models, OnTheCudaBackendOutputsEqualRunningTheModuleDirectly) {
  ServerOptions so;
  so.socket_path = test_util::TempSocket();
  so.backend.kind = "cuda";
  so.backend.levels = 2;
  so.backend.cuda_devices = "0";
  so.configured_plugins.push_back({PAAM_MODEL_PLUGIN_PATH, Config({{"tiny", Tiny(), ""}}, so.backend)});
  auto server = Server::Start(so);
  if (!server.ok()) {
    const std::string why = server.status().message();
    if (why.find("no CUDA GPU") != std::string::npos || why.find("without CUDA") != std::string::npos ||
        why.find("sees no GPU") != std::string::npos) {
      GTEST_SKIP() << "no CUDA here: " << why;
    }
    FAIL() << server.status().ToString();
  }
  std::vector<std::unique_ptr<Client>> clients;
  for (uint32_t priority : {20u, 1u}) {
    ClientOptions co;
    co.socket_path = so.socket_path;
    co.priority = priority;
    co.models = {"tiny"};
    co.wait = WaitMode::kSpin;
    auto c = Client::Connect(co);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    clients.push_back(std::move(c.value()));
  }
  EXPECT_NE(clients[0]->bucket(), clients[1]->bucket());  // two buckets: two streams of two priorities
  const auto inputs = SampleInputs(S("images"), S("offset"));
  for (int round = 0; round < 20; ++round) {
    for (auto& c : clients) ASSERT_TRUE(c->SubmitInfer("tiny", inputs).ok());
    for (auto& c : clients) {
      std::vector<Tensor> outs;
      ASSERT_TRUE(c->WaitInfer("tiny", &outs).ok());
      ASSERT_EQ(outs.size(), 2u);
      ExpectNear(outs[0], S("logits"));
      ExpectNear(outs[1], S("features"));
      const RequestTimestamps ts = c->Timestamps(c->KernelIndex("tiny"));
      EXPECT_GE(ts.device_end, ts.device_start);
    }
  }
  // errors on the GPU path too, and the next request works
  std::vector<float> three(3 * 3 * 16 * 16, 0.5f);
  const int64_t wrong[] = {3, 3, 8, 8};
  std::vector<TensorView> bad = {{"images", DType::kFloat32, wrong, three.data()}, inputs[1]};
  std::vector<Tensor> outs;
  EXPECT_EQ(clients[0]->Infer("tiny", bad, &outs).code(), Errc::kInvalidArgument);
  ASSERT_TRUE(clients[0]->Infer("tiny", inputs, &outs).ok());
  ExpectNear(outs[0], S("logits"));
}

// An AOTInductor package of the same model (scripts/make_aoti_model.py makes it from a tiny.pt
// of this tool, whose weights are the same for the same seed and libtorch) on the CUDA backend:
// run where PAAM_TEST_AOTI_DIR holds tiny.pt2 and its sidecar (scripts/device_models.sh).
TEST_F(Models, AnAotInductorPackageOnTheCudaBackendAnswersAsTheModule) {
  const char* dir = std::getenv("PAAM_TEST_AOTI_DIR");
  if (dir == nullptr) GTEST_SKIP() << "PAAM_TEST_AOTI_DIR is not set (scripts/device_models.sh sets it on a GPU)";
  ServerOptions so;
  so.socket_path = test_util::TempSocket();
  so.backend.kind = "cuda";
  so.backend.cuda_devices = "0";
  so.configured_plugins.push_back(
      {PAAM_MODEL_PLUGIN_PATH, Config({{"aot", std::string(dir) + "/tiny.pt2", ""}}, so.backend)});
  auto server = Server::Start(so);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto models = QueryModels(so.socket_path);
  ASSERT_TRUE(models.ok());
  EXPECT_EQ((*models)[0].format, "aoti");
  ClientOptions co;
  co.socket_path = so.socket_path;
  co.models = {"aot"};
  auto c = Client::Connect(co);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::vector<Tensor> outs;
  for (int i = 0; i < 5; ++i) {
    Status st = (*c)->Infer("aot", SampleInputs(S("images"), S("offset")), &outs);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ExpectNear(outs[0], S("logits"));
    ExpectNear(outs[1], S("features"));
  }
}

TEST_F(Models, PaamdRefusesToStartWhenASignatureIsWrong) {
  const std::string wrong = EditedSidecar("wrong_dtype.json", [](json& j) { j["outputs"][1]["dtype"] = "int64"; });
  ServerOptions so;
  so.socket_path = test_util::TempSocket();
  so.backend.device_cpu = -2;
  so.configured_plugins.push_back({PAAM_MODEL_PLUGIN_PATH, Config({{"tiny", Tiny(), wrong}})});
  auto s = Server::Start(so);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("output 'features' is float32[1,4], its signature says int64[-1,4]"),
            std::string::npos)
      << s.status().message();
}

}  // namespace
}  // namespace paam
