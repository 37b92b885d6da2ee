// The C ABI against a real server: the scenario is written in C (c_api_test_scenario.c).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <string>

#include "server/server.h"

extern "C" int paam_c_api_scenario(const char* socket_path, char* msg, size_t msg_len);

namespace paam {
namespace {

TEST(CApi, TimingModelAdmissionAsyncAndTimestampsFromC) {
  ServerOptions o;
  char dir[] = "/tmp/paam-capi-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  o.socket_path = std::string(dir) + "/paamd.sock";
  o.backend.levels = 2;
  o.backend.device_cpu = -2;
  o.admission = "analysis";
  o.accel.buckets = 2;
  o.accel.overhead_ms = 0.05;
  auto server = Server::Start(o);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  char msg[1024] = "";
  EXPECT_EQ(paam_c_api_scenario(o.socket_path.c_str(), msg, sizeof msg), 0) << msg;
  server.value().reset();
  rmdir(dir);
}

}  // namespace
}  // namespace paam
