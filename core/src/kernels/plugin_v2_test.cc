// Kernel ABI version 2 (kernel_abi.h) with the example plugin (example_plugin_v2.c): a plugin
// configured at start, kernel state, error messages from plan and run through the registry, the
// CPU backend and paamd, the tensor signature paamd publishes; version 1 plugins unchanged.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "backend/cpu_backend.h"
#include "kernels/registry.h"
#include "paam/client.h"
#include "paam/tensor.h"
#include "server/server.h"
#include "server/test_socket.h"

namespace paam {
namespace {

TEST(PluginV2, LoadsWithItsConfigurationAndRunsWithItsState) {
  KernelRegistry r;
  ASSERT_TRUE(r.LoadPlugin(PAAM_EXAMPLE_PLUGIN_V2_PATH, "offset=3").ok());
  const KernelEntry* k = r.Find("add_offset");
  ASSERT_NE(k, nullptr);
  EXPECT_TRUE(k->HasCpu());
  EXPECT_FALSE(k->HasCuda());
  EXPECT_NE(k->tensor_signature.find("\"x\""), std::string::npos);

  std::vector<float> x = {1, 2, 3}, y(3);
  const uint64_t params[4] = {3, 0, 0, 0};
  uint64_t out = 0;
  ASSERT_TRUE(k->Plan(params, 12, &out, x.data(), 12).ok());
  EXPECT_EQ(out, 12u);
  paam_kernel_args a{};
  a.input = x.data();
  a.input_bytes = 12;
  a.output = y.data();
  a.output_bytes = 12;
  a.params[0] = 3;
  char err[160];
  ASSERT_EQ(k->RunCpu(&a, err, sizeof err), PAAM_KERNEL_OK);
  EXPECT_EQ(y, (std::vector<float>{4, 5, 6}));
}

TEST(PluginV2, PlanSeesTheOutputCapacityAndSaysWhyItRefuses) {
  KernelRegistry r;
  ASSERT_TRUE(r.LoadPlugin(PAAM_EXAMPLE_PLUGIN_V2_PATH).ok());  // no configuration: offset 0
  const KernelEntry* k = r.Find("add_offset");
  const uint64_t params[4] = {3, 0, 0, 0};
  uint64_t out = 0;
  Status st = k->Plan(params, 12, &out, nullptr, 8);
  EXPECT_EQ(st.code(), Errc::kInvalidArgument);
  EXPECT_NE(st.message().find("does not fit the 8 declared"), std::string::npos) << st.message();
  char err[160];
  EXPECT_EQ(k->PlanRaw(params, 11, nullptr, 64, &out, err, sizeof err), PAAM_KERNEL_EINVAL);
  EXPECT_NE(std::string(err).find("n=3 floats, got 11 bytes"), std::string::npos) << err;
}

TEST(PluginV2, BadConfigurationsAndVersionOnePluginsWithConfigurationAreRefused) {
  KernelRegistry r;
  Status st = r.LoadPlugin(PAAM_EXAMPLE_PLUGIN_V2_PATH, "scale=2");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("configuration must be offset=N"), std::string::npos) << st.message();
  st = r.LoadPlugin(PAAM_EXAMPLE_PLUGIN_PATH, "anything");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("takes no configuration"), std::string::npos) << st.message();
  // a version 1 plugin without configuration still loads, beside a version 2 one
  ASSERT_TRUE(r.LoadPlugin(PAAM_EXAMPLE_PLUGIN_PATH).ok());
  ASSERT_TRUE(r.LoadPlugin(PAAM_EXAMPLE_PLUGIN_V2_PATH, "offset=1").ok());
  EXPECT_NE(r.Find("scale"), nullptr);
  EXPECT_TRUE(r.Find("scale")->tensor_signature.empty());
}

TEST(PluginV2, FiniRunsWhenTheRegistryGoes) {
  void* h = dlopen(PAAM_EXAMPLE_PLUGIN_V2_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr);
  auto initialized = reinterpret_cast<int (*)()>(dlsym(h, "paam_example_v2_initialized"));
  ASSERT_NE(initialized, nullptr);
  {
    KernelRegistry r;
    ASSERT_TRUE(r.LoadPlugin(PAAM_EXAMPLE_PLUGIN_V2_PATH, "offset=1").ok());
    EXPECT_EQ(initialized(), 1);
  }
  EXPECT_EQ(initialized(), 0);
  dlclose(h);
}

TEST(PluginV2, TheCpuBackendReturnsTheKernelsMessage) {
  KernelRegistry r;
  ASSERT_TRUE(r.LoadPlugin(PAAM_EXAMPLE_PLUGIN_V2_PATH).ok());
  BackendOptions bo;
  bo.device_cpu = -2;
  CpuBackend backend(bo, /*direct=*/true);
  std::vector<float> x = {1, std::numeric_limits<float>::quiet_NaN()}, y(2);
  RegionMemory m;
  m.input = x.data();
  m.input_capacity = 8;
  m.output = y.data();
  m.output_capacity = 8;
  KernelCall call;
  call.kernel = r.Find("add_offset");
  call.region = &m;
  call.input_bytes = 8;
  call.output_bytes = 8;
  call.params[0] = 2;
  DeviceTimes t;
  Status st = backend.Run(call, 0, 0, &t);
  EXPECT_EQ(st.code(), Errc::kInvalidArgument);
  EXPECT_EQ(st.message(), "add_offset: element 1 is NaN");
}

// Through paamd: the plugin's messages reach the client, the next request works, and the
// models query carries the kernel's tensor signature.
TEST(PluginV2, ThroughPaamdMessagesReachTheClientAndTheSignatureIsPublished) {
  ServerOptions so;
  so.socket_path = test_util::TempSocket();
  so.backend.device_cpu = -2;
  so.configured_plugins.push_back({PAAM_EXAMPLE_PLUGIN_V2_PATH, "offset=10"});
  auto server = Server::Start(so);
  ASSERT_TRUE(server.ok()) << server.status().ToString();

  auto models = QueryModels(so.socket_path);
  ASSERT_TRUE(models.ok()) << models.status().ToString();
  ASSERT_EQ(models->size(), 1u);
  EXPECT_EQ((*models)[0].name, "add_offset");
  ASSERT_EQ((*models)[0].inputs.size(), 1u);
  EXPECT_EQ((*models)[0].inputs[0].shape, std::vector<int64_t>{-1});

  ClientOptions co;
  co.socket_path = so.socket_path;
  co.kernels = {{"add_offset", 64, 64, std::nullopt}};
  auto c = Client::Connect(co);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const int k = (*c)->KernelIndex("add_offset");
  auto* in = reinterpret_cast<float*>((*c)->Input(k).data());
  const uint64_t params[4] = {2, 0, 0, 0};
  uint64_t out = 0;
  in[0] = 1;
  in[1] = std::nanf("");
  Status st = (*c)->Call(k, 8, params, &out);
  EXPECT_EQ(st.code(), Errc::kInvalidArgument);
  EXPECT_EQ(st.message(), "add_offset: element 1 is NaN");
  st = (*c)->Call(k, 7, params, &out);  // plan's message
  EXPECT_EQ(st.code(), Errc::kInvalidArgument);
  EXPECT_NE(st.message().find("got 7 bytes"), std::string::npos) << st.message();
  in[1] = 2;
  ASSERT_TRUE((*c)->Call(k, 8, params, &out).ok());
  const auto* y = reinterpret_cast<const float*>((*c)->Output(k).data());
  EXPECT_EQ(y[0], 11.0f);
  EXPECT_EQ(y[1], 12.0f);
}

TEST(PluginV2, AServerWithoutModelsAnswersTheQueryWithNone) {
  ServerOptions so;
  so.socket_path = test_util::TempSocket();
  so.backend.device_cpu = -2;
  auto server = Server::Start(so);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto models = QueryModels(so.socket_path);
  ASSERT_TRUE(models.ok()) << models.status().ToString();
  EXPECT_TRUE(models->empty());
  // a client asking for a model gets the list of what there is
  ClientOptions co;
  co.socket_path = so.socket_path;
  co.models = {"detector"};
  auto c = Client::Connect(co);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Errc::kUnknownKernel);
  EXPECT_NE(c.status().message().find("unknown model 'detector' (paamd serves no models"), std::string::npos)
      << c.status().message();
}

}  // namespace
}  // namespace paam
