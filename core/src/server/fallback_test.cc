// Multi-version kernels: the fallback policy's decisions on made-up inputs (no device needed),
// its recent mean, and paamd reporting where each request ran, on the CPU backend, with the
// fallback off and on (a request whose bucket is held by a long request runs its CPU version
// on the fallback worker, and says so).
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "paam/client.h"
#include "server/fallback.h"
#include "server/server.h"
#include "server/test_socket.h"

namespace paam {
namespace {

constexpr uint64_t kMs = 1'000'000;

// A request of a kernel with both versions, 10 ms before its deadline, behind `ahead`
// requests of a bucket whose recent mean is `mean_ms`; the CPU version takes `cpu_ms`.
FallbackInputs Inputs(uint32_t ahead, uint64_t mean_ms, uint64_t cpu_ms) {
  FallbackInputs in;
  in.has_cpu_version = true;
  in.has_device_version = true;
  in.now_ns = 1000 * kMs;
  in.due_ns = in.now_ns + 10 * kMs;
  in.device_ahead = ahead;
  in.device_mean_ns = mean_ms * kMs;
  in.own_device_ns = 1 * kMs;
  in.own_cpu_ns = cpu_ms * kMs;
  in.cpu_mean_ns = cpu_ms * kMs;
  return in;
}

TEST(FallbackPolicy, StaysOnTheDeviceWhileTheQueueLetsItFinishInTime) {
  FallbackDecision d = DecideFallback(Inputs(/*ahead=*/4, /*mean_ms=*/2, /*cpu_ms=*/3));  // 4 * 2 + 1 = 9 <= 10
  EXPECT_FALSE(d.cpu);
  EXPECT_EQ(d.why, FallbackWhy::kDeviceFits);
  EXPECT_EQ(d.device_estimate_ns, 9 * kMs);
}

TEST(FallbackPolicy, RunsTheCpuVersionWhenTheDeviceWouldMissAndTheCpuFits) {
  FallbackDecision d = DecideFallback(Inputs(/*ahead=*/5, /*mean_ms=*/2, /*cpu_ms=*/3));  // 11 > 10; cpu 3
  EXPECT_TRUE(d.cpu);
  EXPECT_EQ(d.why, FallbackWhy::kCpuFits);
  EXPECT_EQ(d.device_estimate_ns, 11 * kMs);
  EXPECT_EQ(d.cpu_estimate_ns, 3 * kMs);
}

TEST(FallbackPolicy, StaysWhenTheCpuWouldMissToo) {
  FallbackInputs in = Inputs(/*ahead=*/5, /*mean_ms=*/2, /*cpu_ms=*/12);
  FallbackDecision d = DecideFallback(in);
  EXPECT_FALSE(d.cpu);
  EXPECT_EQ(d.why, FallbackWhy::kNeitherFits);
  // The CPU's own queue counts: 2 ahead at 4 ms, then 3 ms of its own: 11 > 10.
  in = Inputs(5, 2, 3);
  in.cpu_ahead = 2;
  in.cpu_mean_ns = 4 * kMs;
  d = DecideFallback(in);
  EXPECT_FALSE(d.cpu);
  EXPECT_EQ(d.cpu_estimate_ns, 11 * kMs);
  in.cpu_ahead = 1;  // 7 ms: fits
  EXPECT_TRUE(DecideFallback(in).cpu);
}

TEST(FallbackPolicy, AnUnmeasuredCpuVersionIsTriedOnlyWhileNothingWaitsForTheCpu) {
  FallbackInputs in = Inputs(/*ahead=*/5, /*mean_ms=*/2, /*cpu_ms=*/0);
  FallbackDecision d = DecideFallback(in);
  EXPECT_TRUE(d.cpu);
  EXPECT_EQ(d.why, FallbackWhy::kCpuProbe);
  in.cpu_ahead = 1;
  d = DecideFallback(in);
  EXPECT_FALSE(d.cpu);
  EXPECT_EQ(d.why, FallbackWhy::kNeitherFits);
}

TEST(FallbackPolicy, ALostDeviceSendsEveryRequestWithACpuVersionThere) {
  FallbackInputs in = Inputs(/*ahead=*/0, /*mean_ms=*/0, /*cpu_ms=*/0);
  in.device_lost = true;
  in.due_ns = UINT64_MAX;  // with or without a deadline
  FallbackDecision d = DecideFallback(in);
  EXPECT_TRUE(d.cpu);
  EXPECT_EQ(d.why, FallbackWhy::kDeviceLost);
  in.has_cpu_version = false;  // nothing else can run it: it fails on the device as before
  EXPECT_FALSE(DecideFallback(in).cpu);
  in.has_cpu_version = true;
  in.device_data = true;  // its data lives on the device only
  EXPECT_FALSE(DecideFallback(in).cpu);
  EXPECT_EQ(DecideFallback(in).why, FallbackWhy::kDeviceData);
}

TEST(FallbackPolicy, StaysOnTheDeviceWithoutADeadlineOrADeviceTime) {
  FallbackInputs in = Inputs(/*ahead=*/100, /*mean_ms=*/2, /*cpu_ms=*/1);
  in.due_ns = UINT64_MAX;
  EXPECT_EQ(DecideFallback(in).why, FallbackWhy::kNoDeadline);
  in = Inputs(100, 0, 1);  // the bucket has not run anything yet
  EXPECT_EQ(DecideFallback(in).why, FallbackWhy::kNoDeviceTime);
  EXPECT_FALSE(DecideFallback(in).cpu);
}

TEST(FallbackPolicy, AKernelTheDeviceCannotRunGoesToItsCpuVersion) {
  FallbackInputs in = Inputs(0, 0, 0);
  in.has_device_version = false;
  EXPECT_TRUE(DecideFallback(in).cpu);
  EXPECT_EQ(DecideFallback(in).why, FallbackWhy::kNoDeviceVersion);
}

TEST(FallbackPolicy, PastItsDeadlineAndHugeQueuesDoNotWrapRound) {
  FallbackInputs in = Inputs(5, 2, 3);
  in.due_ns = in.now_ns - 1;  // already late: nothing fits
  EXPECT_FALSE(DecideFallback(in).cpu);
  EXPECT_EQ(DecideFallback(in).why, FallbackWhy::kNeitherFits);
  in = Inputs(UINT32_MAX, UINT64_MAX / kMs, 3);
  FallbackDecision d = DecideFallback(in);
  EXPECT_EQ(d.device_estimate_ns, UINT64_MAX);
  EXPECT_TRUE(d.cpu);
}

TEST(FallbackPolicy, RecentMeanFollowsTheNewestRunsAndParsesItsMode) {
  RunTimeAverage a;
  EXPECT_EQ(a.Mean(), 0u);
  a.Add(800);
  EXPECT_EQ(a.Mean(), 800u);
  for (int i = 0; i < 100; ++i) a.Add(8000);
  EXPECT_GT(a.Mean(), 7000u);
  EXPECT_LE(a.Mean(), 8000u);
  EXPECT_EQ(ParseFallbackMode("off").value(), FallbackMode::kOff);
  EXPECT_EQ(ParseFallbackMode("cpu-on-overload").value(), FallbackMode::kCpuOnOverload);
  auto bad = ParseFallbackMode("gpu");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("got 'gpu'"), std::string::npos);
}

// --- paamd reporting where each request ran (CPU backend) ---

std::unique_ptr<Server> StartServer(const std::string& fallback) {
  ServerOptions o;
  o.socket_path = test_util::TempSocket();
  o.backend.device_cpu = -2;  // do not pin: tests run on small CI machines
  o.fallback = fallback;
  auto s = Server::Start(o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s.value()) : nullptr;
}

std::unique_ptr<Client> Connect(const Server& server, double deadline_ms) {
  ClientOptions o;
  o.socket_path = server.socket_path();
  o.priority = 5;
  o.kernels = {{"spin", 0, 8}};
  o.deadline_ms = deadline_ms;
  auto c = Client::Connect(o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(c.value()) : nullptr;
}

Status Spin(Client& c, uint64_t ns) {
  const uint64_t p[4] = {ns, 0, 0, 0};
  return c.Call(0, 0, p, nullptr);
}

TEST(FallbackServer, EveryCompletionSaysWhereItRan) {
  auto server = StartServer("off");
  ASSERT_NE(server, nullptr);
  auto c = Connect(*server, 20);
  ASSERT_TRUE(Spin(*c, 100'000).ok());
  EXPECT_EQ(c->Timestamps(0).ran_on, RanOn::kCpu);
  EXPECT_FALSE(c->Timestamps(0).fallback);
  const uint64_t bad[4] = {120'000'000'000ull, 0, 0, 0};  // refused by plan(): never ran
  EXPECT_EQ(c->Call(0, 0, bad, nullptr).code(), Errc::kInvalidArgument);
  EXPECT_EQ(c->Timestamps(0).ran_on, RanOn::kNowhere);
  EXPECT_FALSE(c->Timestamps(0).fallback);
}

// One client holds the bucket with long requests (no deadline); another, with a 20 ms
// deadline, submits a short one while a long one runs. With the fallback off it waits for the
// device; on, the bucket's recent time says it would miss there, so its CPU version runs on
// the fallback worker, and its completion says so.
void HeldBucket(const std::string& fallback, bool* fell_back, bool* ran_after_blocker, uint64_t* fallbacks) {
  auto server = StartServer(fallback);
  ASSERT_NE(server, nullptr);
  auto urgent = Connect(*server, 20);
  auto blocker = Connect(*server, 0);
  ASSERT_TRUE(Spin(*urgent, 1'000'000).ok());     // a device time of its own, and the bucket's first
  ASSERT_TRUE(Spin(*blocker, 300'000'000).ok());  // the bucket's recent mean now says "long"
  EXPECT_FALSE(urgent->Timestamps(0).fallback);
  const uint64_t hold[4] = {300'000'000, 0, 0, 0};
  ASSERT_TRUE(blocker->Submit(0, 0, hold).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(Spin(*urgent, 1'000'000).ok());
  ASSERT_TRUE(blocker->Wait(0, nullptr).ok());
  const RequestTimestamps u = urgent->Timestamps(0), b = blocker->Timestamps(0);
  EXPECT_EQ(u.ran_on, RanOn::kCpu);
  EXPECT_EQ(b.ran_on, RanOn::kCpu);
  EXPECT_FALSE(b.fallback);
  *fell_back = u.fallback;
  *ran_after_blocker = u.device_start >= b.device_end;
  *fallbacks = server->Stats().requests_fallback;
}

TEST(FallbackServer, OffTheRequestWaitsForItsBucket) {
  bool fell_back = true, after = false;
  uint64_t fallbacks = 1;
  HeldBucket("off", &fell_back, &after, &fallbacks);
  EXPECT_FALSE(fell_back);
  EXPECT_TRUE(after);
  EXPECT_EQ(fallbacks, 0u);
}

TEST(FallbackServer, OnTheRequestRunsItsCpuVersionAndSaysSo) {
  bool fell_back = false, after = true;
  uint64_t fallbacks = 0;
  HeldBucket("cpu-on-overload", &fell_back, &after, &fallbacks);
  EXPECT_TRUE(fell_back);
  EXPECT_FALSE(after) << "a fallback run does not wait for the bucket's device";
  EXPECT_EQ(fallbacks, 1u);
}

TEST(FallbackServer, ABadModeIsRefusedAtStart) {
  ServerOptions o;
  o.socket_path = test_util::TempSocket();
  o.fallback = "always";
  auto s = Server::Start(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("'off' or 'cpu-on-overload', got 'always'"), std::string::npos);
}

}  // namespace
}  // namespace paam
